import type { EventData, JobSpec } from '#contracts';
import { decideJobEnd, nodesOfAttempts, type JobFact } from './job-end.js';

const T = '2025-06-01T10:00:00.000Z';
const spec = (retry?: JobSpec['retry']): JobSpec =>
  ({ request: { gpus: 1, timeLimitMs: 60_000 }, work: { kind: 'script', command: ['true'] }, data: { inputs: [], outputs: [] }, ...(retry ? { retry } : {}) }) as unknown as JobSpec;

/** A job's history, built in store order. */
class History {
  readonly events: JobFact[] = [];
  readonly losses: EventData<'NodeLost'>[] = [];
  constructor(retry?: JobSpec['retry']) {
    this.add('JobSubmitted', { jobId: 'job-1', team: 'team-a', spec: spec(retry), submittedAt: T });
  }
  add(type: string, data: unknown): this {
    this.events.push({ type, data });
    return this;
  }
  placed(n: number, nodes: string[] = ['node-1']): this {
    return this.add('JobPlaced', {
      jobId: 'job-1',
      attemptId: `a${n}`,
      attempt: n,
      nodeId: nodes[0],
      gpuIndices: [0],
      gpuModel: 'sim-gpu',
      placedAt: T,
      ...(nodes.length > 1 ? { nodes: nodes.map((nodeId) => ({ nodeId, gpuIndices: [0] })) } : {}),
    });
  }
  held(n: number, nodeId = 'node-1'): this {
    return this.add('ComputeHeld', { jobId: 'job-1', attemptId: `a${n}`, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: T });
  }
  finished(n: number, outcome: string, exitCode: number | null, nodeId = 'node-1', extra: object = {}): this {
    return this.add('JobFinished', { jobId: 'job-1', attemptId: `a${n}`, nodeId, outcome, exitCode, signal: null, finishedAt: T, ...extra });
  }
  usage(n: number, ms: number, amount: number, nodeId = 'node-1', currency = 'EUR'): this {
    return this.add('UsageRecorded', { jobId: 'job-1', attemptId: `a${n}`, nodeId, team: 'team-a', billableMs: ms, amountMicros: amount, currency });
  }
  released(n: number, nodeId = 'node-1'): this {
    return this.add('ComputeReleased', { jobId: 'job-1', attemptId: `a${n}`, nodeId, gpuIndices: [0], releasedAt: T });
  }
  outputs(n: number, files: string[]): this {
    return this.add('OutputsStored', { jobId: 'job-1', attemptId: `a${n}`, files: files.map((path) => ({ path, sha256: 'a'.repeat(64), size: 3 })), totalBytes: 3 * files.length, truncated: false, rejected: [], logs: [], storedAt: T });
  }
  lost(n: number, nodeId = 'node-1'): this {
    this.losses.push({ nodeId, reason: 'heartbeat_timeout', lastSeenAt: T, detectedAt: T, affectedAttempts: [{ jobId: 'job-1', attemptId: `a${n}` }] });
    return this;
  }
  /** One whole run of attempt n. */
  run(n: number, outcome: string, exitCode: number | null, ms = 1_000): this {
    return this.placed(n).held(n).finished(n, outcome, exitCode).usage(n, outcome === 'node_lost' ? 0 : ms, outcome === 'node_lost' ? 0 : ms).released(n);
  }
  decide() {
    return decideJobEnd(this.events, this.losses);
  }
}

describe('decideJobEnd', () => {
  it('given a completed run, when its GPUs are released after its usage line and outputs, then the job is over with them', () => {
    const h = new History().placed(1).held(1).finished(1, 'completed', 0).usage(1, 1_500, 1_500).outputs(1, ['out.txt']);
    expect(h.decide()).toMatchObject({ kind: 'not_over' });
    const d = h.released(1).decide();
    expect(d).toEqual({
      kind: 'over',
      ended: {
        jobId: 'job-1',
        team: 'team-a',
        outcome: 'completed',
        attempts: 1,
        exitCode: 0,
        billed: { billableMs: 1_500, totals: [{ currency: 'EUR', amountMicros: 1_500 }] },
        outputs: { files: [{ path: 'out.txt', sha256: 'a'.repeat(64), size: 3 }], totalBytes: 3, rejected: 0 },
      },
    });
  });

  it('given a released attempt whose usage line is not recorded yet, then the job is not over until it is', () => {
    const h = new History().placed(1).held(1).finished(1, 'failed', 2).released(1);
    expect(h.decide()).toMatchObject({ kind: 'not_over', why: expect.stringContaining('usage') });
    expect(h.usage(1, 10, 10).decide()).toMatchObject({ kind: 'over', ended: { outcome: 'failed', exitCode: 2 } });
  });

  it('given a placement refused before holding (no ComputeHeld), then no usage line is awaited and it bills 0', () => {
    const h = new History().placed(1).finished(1, 'failed', null, 'node-1', { message: 'no such GPU' }).released(1);
    expect(h.decide()).toMatchObject({ kind: 'over', ended: { outcome: 'failed', reason: 'no such GPU', exitCode: null, billed: { billableMs: 0, totals: [] }, outputs: null } });
  });

  it('given a failure its retry policy retries, then it is not over; after the next attempt completes, it is, billed for both', () => {
    const h = new History({ exitCodes: [3], maxAttempts: 2 }).run(1, 'failed', 3, 100);
    expect(h.decide()).toMatchObject({ kind: 'not_over', why: expect.stringContaining('retry') });
    h.add('JobRequeued', { jobId: 'job-1', previousAttemptId: 'a1', reason: 'retry', nextAttempt: 2, requeuedAt: T });
    expect(h.decide()).toMatchObject({ kind: 'not_over' });
    expect(h.run(2, 'completed', 0, 200).decide()).toMatchObject({ kind: 'over', ended: { outcome: 'completed', attempts: 2, billed: { billableMs: 300, totals: [{ currency: 'EUR', amountMicros: 300 }] } } });
  });

  it('given the retries are used up, then the last failure ends the job', () => {
    const h = new History({ exitCodes: [3], maxAttempts: 2 }).run(1, 'failed', 3).run(2, 'failed', 3);
    expect(h.decide()).toMatchObject({ kind: 'over', ended: { outcome: 'failed', attempts: 2, exitCode: 3 } });
  });

  it('given an attempt lost with its node, then it is not over; a withdrawal after a cancel ends it, without the lost part ever releasing', () => {
    const h = new History().placed(1).held(1).lost(1);
    expect(h.decide()).toMatchObject({ kind: 'not_over', why: expect.stringContaining('node') });
    h.add('JobCancelRequested', { jobId: 'job-1', team: 'team-a', requestedAt: T });
    expect(h.decide()).toMatchObject({ kind: 'not_over' });
    h.add('JobWithdrawn', { jobId: 'job-1', team: 'team-a', outcome: 'cancelled', message: 'Cancelled after attempt 1', withdrawnAt: T });
    expect(h.decide()).toMatchObject({ kind: 'over', ended: { outcome: 'cancelled', attempts: 1, billed: { billableMs: 0, totals: [] } } });
  });

  it('given a NodeLost listing an attempt whose JobFinished said completed, then placement\'s verdict (node_lost) stands', () => {
    const h = new History().run(1, 'completed', 0).lost(1);
    expect(h.decide()).toMatchObject({ kind: 'not_over' });
  });

  it('given a withdrawal while an earlier attempt still holds its GPUs, then the end waits for that release and its usage', () => {
    const h = new History({ exitCodes: [3], maxAttempts: 3 }).placed(1).held(1).finished(1, 'failed', 3);
    h.add('JobWithdrawn', { jobId: 'job-1', team: 'team-a', outcome: 'cancelled', withdrawnAt: T });
    expect(h.decide()).toMatchObject({ kind: 'not_over' });
    expect(h.usage(1, 5, 5).released(1).decide()).toMatchObject({ kind: 'over', ended: { outcome: 'cancelled', attempts: 1, exitCode: 3, billed: { billableMs: 5 } } });
  });

  it('given a gang, then it is over only when every part released, and billed over every part', () => {
    const h = new History().placed(1, ['n1', 'n2']).held(1, 'n1').held(1, 'n2');
    h.finished(1, 'completed', 0, 'n1').finished(1, 'cancelled', null, 'n2', { peerEnded: 'n1' }).usage(1, 10, 10, 'n1').usage(1, 10, 10, 'n2').released(1, 'n1');
    expect(h.decide()).toMatchObject({ kind: 'not_over', why: expect.stringContaining('n2') });
    expect(h.released(1, 'n2').decide()).toMatchObject({ kind: 'over', ended: { outcome: 'completed', billed: { billableMs: 20, totals: [{ currency: 'EUR', amountMicros: 20 }] } } });
    expect(nodesOfAttempts(h.events)).toEqual(['n1', 'n2']);
  });

  it.each([
    ['JobRejected', { jobId: 'job-1', team: 'team-a', reason: 'unsatisfiable', message: 'too big', issues: [], rejectedAt: T }, 'rejected', 'too big'],
    ['StagingFailed', { jobId: 'job-1', reason: 'blob_missing', message: 'upload it', failedAt: T }, 'failed', 'upload it'],
    ['JobWithdrawn', { jobId: 'job-1', team: 'team-a', outcome: 'deadline', message: 'too late', withdrawnAt: T }, 'deadline', 'too late'],
  ])('given %s, then the job is over at once, with 0 attempts and nothing billed', (type, data, outcome, reason) => {
    const d = new History().add(type, data).decide();
    expect(d).toEqual({ kind: 'over', ended: { jobId: 'job-1', team: 'team-a', outcome, reason, attempts: 0, billed: { billableMs: 0, totals: [] }, outputs: null } });
  });

  it('given no JobSubmitted, then it cannot tell', () => {
    expect(decideJobEnd([{ type: 'JobStarted', data: {} }], [])).toMatchObject({ kind: 'not_over' });
  });

  it('sums amounts per currency, each sorted', () => {
    const h = new History().placed(1).held(1).finished(1, 'completed', 0).usage(1, 10, 7, 'node-1', 'USD').released(1);
    h.placed(2).held(2).finished(2, 'completed', 0).usage(2, 10, 5, 'node-1', 'EUR').released(2);
    expect(h.decide()).toMatchObject({ kind: 'over', ended: { billed: { billableMs: 20, totals: [{ currency: 'EUR', amountMicros: 5 }, { currency: 'USD', amountMicros: 7 }] } } });
  });
});
