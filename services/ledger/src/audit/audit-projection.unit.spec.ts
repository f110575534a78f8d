import { AuditJobReport, AuditJobSummary } from '#contracts';
import { describe, expect, it } from '@jest/globals';
import { auditList, evolveJobAudit, emptyJobAudit, foldJobAudits, isSubmitted, jobReport, specDigest, type AuditSourceEvent } from './audit-projection.js';

const T0 = Date.parse('2026-06-01T10:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A log of events of the kinds the services write, positions from 1. */
class Log {
  readonly events: AuditSourceEvent[] = [];
  add(type: string, data: Record<string, unknown>, producer: string, streamId = `s-${type}`): AuditSourceEvent {
    const e: AuditSourceEvent = {
      streamId,
      revision: 0n,
      position: BigInt(this.events.length + 1),
      eventId: `e${this.events.length + 1}`,
      type,
      data,
      metadata: { producer, occurredAt: at(this.events.length), ...(typeof data.jobId === 'string' ? { jobId: data.jobId } : {}) },
      recordedAt: at(this.events.length),
    };
    this.events.push(e);
    return e;
  }
}

const spec = { name: 'train', work: { kind: 'script', script: { inline: 'python train.py' } }, data: { inputs: [] }, request: { gpus: 2, timeLimitMs: 600_000, network: false }, outputs: { globs: ['**'], maxBytes: 1_000 } };

/** A job lost on node-1 (requeued), then completed on node-2 with a recorded work digest, outputs and usage. */
function requeuedJob(log: Log, jobId = 'job-1', team = 'team-a'): void {
  log.add('JobSubmitted', { jobId, team, spec, submittedAt: at(0), submittedBy: 'ci' }, 'intake');
  log.add('InputsStaged', { jobId, inputs: [{ name: 'data', sha256: 'a'.repeat(64), size: 10 }], totalBytes: 10, stagedAt: at(1_000) }, 'storage');
  log.add('JobPlaced', { jobId, attemptId: `${jobId}-a1`, attempt: 1, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', placedAt: at(3_000) }, 'placement');
  log.add('ComputeHeld', { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', gpus: 2, heldAt: at(3_500) }, 'execution');
  log.add('JobStarted', { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', startedAt: at(3_600) }, 'execution');
  log.add('NodeLost', { nodeId: 'node-1', reason: 'heartbeat_timeout', lastSeenAt: at(9_000), detectedAt: at(9_900), affectedAttempts: [{ jobId, attemptId: `${jobId}-a1` }] }, 'placement');
  log.add('JobFinished', { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', outcome: 'node_lost', exitCode: null, signal: null, finishedAt: at(10_000) }, 'execution');
  log.add('JobRequeued', { jobId, previousAttemptId: `${jobId}-a1`, reason: 'node_lost', nextAttempt: 2, requeuedAt: at(10_500) }, 'placement');
  log.add('JobPlaced', { jobId, attemptId: `${jobId}-a2`, attempt: 2, nodeId: 'node-2', gpuIndices: [2, 3], gpuModel: 'A100', placedAt: at(12_500) }, 'placement');
  log.add('ComputeHeld', { jobId, attemptId: `${jobId}-a2`, nodeId: 'node-2', gpuIndices: [2, 3], gpuModel: 'A100', gpus: 2, heldAt: at(13_000) }, 'execution');
  log.add('JobStarted', { jobId, attemptId: `${jobId}-a2`, nodeId: 'node-2', startedAt: at(13_250), work: { kind: 'script', digest: `sha256:${'b'.repeat(64)}` } }, 'execution');
  log.add('JobFinished', { jobId, attemptId: `${jobId}-a2`, nodeId: 'node-2', outcome: 'completed', exitCode: 0, signal: null, finishedAt: at(73_250) }, 'execution');
  log.add('OutputsStored', { jobId, attemptId: `${jobId}-a2`, files: [{ path: 'model.bin', sha256: 'c'.repeat(64), size: 42 }], totalBytes: 42, truncated: false, logs: [], storedAt: at(74_000) }, 'storage');
  log.add('ComputeReleased', { jobId, attemptId: `${jobId}-a2`, nodeId: 'node-2', gpuIndices: [2, 3], releasedAt: at(74_100) }, 'execution');
  for (const [attemptId, nodeId, ms, amount, waived] of [
    [`${jobId}-a1`, 'node-1', 0, 0, true],
    [`${jobId}-a2`, 'node-2', 60_250, 120_500, false],
  ] as const) {
    log.add(
      'UsageRecorded',
      {
        jobId,
        attemptId,
        team,
        nodeId,
        gpuModel: 'A100',
        gpus: 2,
        outcome: waived ? 'node_lost' : 'completed',
        heldFrom: at(0),
        finishedAt: at(1),
        billableMs: ms,
        rateMicrosPerGpuHour: 3_600_000,
        amountMicros: amount,
        currency: 'EUR',
        priceListVersion: 1,
        rounding: 'per-line-half-up-micros',
        ...(waived ? { waivedReason: 'platform_fault' } : {}),
        recordedAt: at(80_000),
      },
      'ledger',
    );
  }
}

describe('audit projection', () => {
  it('given a job lost once and completed on another node, then its report answers what, how long, on what, what came back and what it cost', () => {
    const log = new Log();
    requeuedJob(log);
    const state = foldJobAudits(log.events).get('job-1')!;
    expect(isSubmitted(state)).toBe(true);
    if (!isSubmitted(state)) return;
    const r = jobReport(state);
    expect(() => AuditJobReport.parse(r)).not.toThrow();
    expect(r).toMatchObject({ jobId: 'job-1', team: 'team-a', name: 'train', submittedBy: 'ci', outcome: 'completed' });
    expect(r.work).toMatchObject({ specSha256: specDigest(spec), digestSource: 'recorded', workDigest: `sha256:${'b'.repeat(64)}`, workKind: 'script' });
    expect(r.work.inputs).toEqual([{ name: 'data', sha256: 'a'.repeat(64), size: 10 }]);
    // staging: 1 s by storage + 0.5 s and 0.5 s by the agents; queued: 2 s to the first placement + 2 s after the requeue.
    expect(r.durations).toEqual({ stagingMs: 2_000, queuedMs: 4_000, heldMs: 6_500 + 60_250, runningMs: 6_400 + 60_000, outputMs: 750, releaseMs: 100 });
    expect(r.attempts.map((a) => [a.attempt, a.nodeId, a.gpuIndices, a.gpus, a.outcome])).toEqual([
      [1, 'node-1', [0, 1], 2, 'node_lost'],
      [2, 'node-2', [2, 3], 2, 'completed'],
    ]);
    expect(r.attempts[1]!.workDigest).toBe(`sha256:${'b'.repeat(64)}`);
    expect(r.outputs?.files).toEqual([{ path: 'model.bin', sha256: 'c'.repeat(64), size: 42 }]);
    expect(r.cost).toMatchObject({ totals: [{ currency: 'EUR', amountMicros: 120_500 }], billableMs: 60_250 });
    expect(r.cost.lines).toHaveLength(2);
    expect(r.timeline.map((e) => e.position)).toEqual(log.events.map((e) => e.position.toString()));
    expect(new Set(r.timeline.map((e) => e.producer))).toEqual(new Set(['intake', 'storage', 'placement', 'execution', 'ledger']));
    // The NodeLost that ended the first attempt is in the job's timeline, with its attempt and node.
    expect(r.timeline.find((e) => e.type === 'NodeLost')).toMatchObject({ attemptId: 'job-1-a1', nodeId: 'node-1' });
  });

  it('without a recorded work digest, says it derived what it could and how', () => {
    const log = new Log();
    log.add('JobSubmitted', { jobId: 'j', team: 't', spec, submittedAt: at(0) }, 'intake');
    const s = foldJobAudits(log.events).get('j')!;
    if (!isSubmitted(s)) throw new Error('not submitted');
    const r = jobReport(s);
    expect(r.work.digestSource).toBe('derived');
    expect(r.work.note).toMatch(/No execution event records a work digest/);
    expect(r.outcome).toBe('open');
    expect(r.durations).toEqual({});
  });

  it('folding an event twice or out of its job changes nothing; a redelivered usage line counts once', () => {
    const log = new Log();
    requeuedJob(log);
    const once = foldJobAudits(log.events).get('job-1')!;
    const s = emptyJobAudit('job-1');
    for (const e of [...log.events, ...log.events]) evolveJobAudit(s, e);
    expect(jobReport(s as Parameters<typeof jobReport>[0])).toEqual(jobReport(once as Parameters<typeof jobReport>[0]));
  });

  it('lists with every filter: team, time range, node, GPU model, outcome; oldest first, limited', () => {
    const log = new Log();
    requeuedJob(log, 'job-1', 'team-a');
    requeuedJob(log, 'job-2', 'team-b');
    log.add('JobSubmitted', { jobId: 'job-3', team: 'team-a', spec, submittedAt: at(500_000) }, 'intake');
    log.add('JobRejected', { jobId: 'job-3', team: 'team-a', reason: 'unsatisfiable', message: 'no node', issues: [], rejectedAt: at(500_001) }, 'placement');
    const records = foldJobAudits(log.events);
    const ids = (filter: Parameters<typeof auditList>[1]) => auditList(records.values(), filter).jobs.map((j) => j.jobId);
    expect(ids({ limit: 10, offset: 0 })).toEqual(['job-1', 'job-2', 'job-3']);
    expect(ids({ limit: 10, offset: 0, team: 'team-a' })).toEqual(['job-1', 'job-3']);
    expect(ids({ limit: 10, offset: 0, from: at(100_000) })).toEqual(['job-3']);
    expect(ids({ limit: 10, offset: 0, to: at(100_000) })).toEqual(['job-1', 'job-2']);
    expect(ids({ limit: 10, offset: 0, nodeId: 'node-1' })).toEqual(['job-1', 'job-2']);
    expect(ids({ limit: 10, offset: 0, gpuModel: 'H100' })).toEqual([]);
    expect(ids({ limit: 10, offset: 0, outcome: 'rejected' })).toEqual(['job-3']);
    expect(ids({ limit: 10, offset: 0, outcome: 'completed', team: 'team-b' })).toEqual(['job-2']);
    // The long-lived projection keeps no timelines; its lists are the same.
    const lean = foldJobAudits(log.events, new Map(), { timeline: false });
    expect(auditList(lean.values(), { limit: 10, offset: 0 })).toEqual(auditList(records.values(), { limit: 10, offset: 0 }));
    expect([...lean.values()].every((r) => r.timeline.length === 0)).toBe(true);
    expect(auditList(records.values(), { limit: 2, offset: 1 }).jobs.map((j) => j.jobId)).toEqual(['job-2', 'job-3']);
    const limited = auditList(records.values(), { limit: 1, offset: 0 });
    expect(limited).toMatchObject({ total: 3, jobs: [{ jobId: 'job-1' }] });
    expect(() => AuditJobSummary.parse(limited.jobs[0])).not.toThrow();
    expect(limited.jobs[0]).toMatchObject({ nodes: ['node-1', 'node-2'], gpuModels: ['A100'], attempts: 2, outputs: { files: 1, totalBytes: 42 }, billableMs: 60_250 });
  });

  it('a gang attempt reports every node with its GPUs, and all GPUs held', () => {
    const log = new Log();
    log.add('JobSubmitted', { jobId: 'g', team: 't', spec: { ...spec, request: { ...spec.request, gpus: 8 } }, submittedAt: at(0) }, 'intake');
    const nodes = [
      { nodeId: 'n1', gpuIndices: [0, 1, 2, 3] },
      { nodeId: 'n2', gpuIndices: [0, 1, 2, 3] },
    ];
    log.add('JobPlaced', { jobId: 'g', attemptId: 'g-a1', attempt: 1, nodeId: 'n1', gpuIndices: [0, 1, 2, 3], gpuModel: 'A100', placedAt: at(1_000), nodes }, 'placement');
    for (const n of nodes) log.add('ComputeHeld', { jobId: 'g', attemptId: 'g-a1', nodeId: n.nodeId, gpuIndices: n.gpuIndices, gpuModel: 'A100', gpus: 4, heldAt: at(2_000) }, 'execution');
    log.add('JobFinished', { jobId: 'g', attemptId: 'g-a1', nodeId: 'n2', outcome: 'completed', exitCode: 0, signal: null, finishedAt: at(5_000), peerEnded: 'n1' }, 'execution');
    log.add('JobFinished', { jobId: 'g', attemptId: 'g-a1', nodeId: 'n1', outcome: 'failed', exitCode: 1, signal: null, finishedAt: at(4_000) }, 'execution');
    const s = foldJobAudits(log.events).get('g')!;
    if (!isSubmitted(s)) throw new Error('not submitted');
    const r = jobReport(s);
    expect(r.attempts[0]).toMatchObject({ nodes, gpus: 8, outcome: 'failed', exitCode: 1, finishedAt: at(4_000) });
    expect(r.outcome).toBe('failed');
  });

  it('a gang attempt costs the sum of its nodes\' lines, each counted once however often it is delivered', () => {
    const log = new Log();
    log.add('JobSubmitted', { jobId: 'g', team: 't', spec: { ...spec, request: { ...spec.request, gpus: 4 } }, submittedAt: at(0) }, 'intake');
    const line = (nodeId: string, ms: number) => ({
      jobId: 'g',
      attemptId: 'g-a1',
      team: 't',
      nodeId,
      gpuModel: 'A100',
      gpus: 2,
      outcome: 'completed',
      heldFrom: at(1_000),
      finishedAt: at(1_000 + ms),
      billableMs: ms,
      rateMicrosPerGpuHour: 3_600_000,
      amountMicros: 2 * ms,
      currency: 'EUR',
      priceListVersion: 1,
      rounding: 'per-line-half-up-micros',
      recordedAt: at(9_000),
    });
    log.add('UsageRecorded', line('n1', 4_000), 'ledger');
    log.add('UsageRecorded', line('n2', 3_000), 'ledger');
    log.add('UsageRecorded', line('n2', 3_000), 'ledger'); // a redelivery
    const s = foldJobAudits(log.events).get('g')!;
    if (!isSubmitted(s)) throw new Error('not submitted');
    const r = jobReport(s);
    expect(r.cost.lines.map((l) => l.nodeId)).toEqual(['n1', 'n2']);
    expect({ billableMs: r.cost.billableMs, totals: r.cost.totals }).toEqual({ billableMs: 7_000, totals: [{ currency: 'EUR', amountMicros: 14_000 }] });
  });
});

describe('JobEnded in the audit', () => {
  it('reports the JobEnded (in the timeline and as `ended`) and takes its outcome: a lost attempt withdrawn after a cancel is `cancelled`, not `node_lost`', () => {
    const log = new Log();
    const jobId = 'job-w';
    log.add('JobSubmitted', { jobId, team: 'team-a', spec, submittedAt: at(0) }, 'intake');
    log.add('JobPlaced', { jobId, attemptId: `${jobId}-a1`, attempt: 1, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', placedAt: at(1) }, 'placement');
    log.add('ComputeHeld', { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: at(2) }, 'execution');
    log.add('JobFinished', { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', outcome: 'node_lost', exitCode: null, signal: null, finishedAt: at(3) }, 'execution');
    log.add('JobCancelRequested', { jobId, team: 'team-a', requestedAt: at(4) }, 'intake');
    const before = foldJobAudits(log.events).get(jobId)!;
    expect(jobReport(before as never).outcome).toBe('node_lost');
    log.add('JobWithdrawn', { jobId, team: 'team-a', outcome: 'cancelled', withdrawnAt: at(5) }, 'placement');
    const ended = log.add('JobEnded', { jobId, team: 'team-a', outcome: 'cancelled', attempts: 1, billed: { billableMs: 0, totals: [] }, outputs: null, endedAt: at(6) }, 'ledger');
    const report = jobReport(foldJobAudits(log.events).get(jobId)! as never);
    expect(AuditJobReport.safeParse(report).error?.issues ?? []).toEqual([]);
    expect(report).toMatchObject({ outcome: 'cancelled', ended: { endedAt: at(6), eventId: ended.eventId } });
    expect(report.timeline.at(-1)).toMatchObject({ type: 'JobEnded', producer: 'ledger', eventId: ended.eventId });
  });
});
