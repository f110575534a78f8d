import { JobView as JobViewSchema, type EventData, type EventType, type JobView } from '#contracts';
import { evolveJob, eventTime, foldJobs, isFinalState, jobIdOf, toSummary, type JobEvent, type JobRecord } from './job-view.js';

const JOB = 'job_0001';
const A1 = `${JOB}-a1`;
const A2 = `${JOB}-a2`;

const spec: EventData<'JobSubmitted'>['spec'] = {
  name: 'resnet',
  work: { kind: 'script', script: { inline: 'echo hi' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 2, gpuModel: 'A100', timeLimitMs: 3_600_000, network: false },
  outputs: { globs: ['**'] },
};

let position = 0n;
function ev<T extends EventType>(type: T, data: EventData<T>): JobEvent;
function ev(type: string, data: unknown): JobEvent;
function ev(type: string, data: unknown): JobEvent {
  position += 1n;
  return { type, data, position, metadata: { occurredAt: '2025-06-01T00:00:59.000Z', jobId: JOB } };
}

const at = (s: number) => `2025-06-01T00:00:${String(s).padStart(2, '0')}.000Z`;
const submitted = () => ev('JobSubmitted', { jobId: JOB, team: 'team-ml', spec, submittedAt: at(0), deadlineAt: '2025-06-02T00:00:00.000Z' });
const staged = () => ev('InputsStaged', { jobId: JOB, inputs: [], totalBytes: 0, stagedAt: at(1) });
const placed = (attemptId = A1, attempt = 1) =>
  ev('JobPlaced', { jobId: JOB, attemptId, attempt, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', placedAt: at(2) });
const held = (attemptId = A1) => ev('ComputeHeld', { jobId: JOB, attemptId, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', gpus: 2, heldAt: at(3) });
const started = (attemptId = A1) => ev('JobStarted', { jobId: JOB, attemptId, nodeId: 'node-1', startedAt: at(4) });
const finished = (outcome: EventData<'JobFinished'>['outcome'], exitCode: number | null = outcome === 'completed' ? 0 : 1, attemptId = A1) =>
  ev('JobFinished', { jobId: JOB, attemptId, nodeId: 'node-1', outcome, exitCode, signal: null, finishedAt: at(5) });
const stored = () =>
  ev('OutputsStored', {
    jobId: JOB,
    attemptId: A1,
    files: [{ path: 'model.bin', sha256: 'a'.repeat(64), size: 10 }],
    totalBytes: 10,
    truncated: false,
    logs: [],
    storedAt: at(6),
  });
const released = (attemptId = A1) => ev('ComputeReleased', { jobId: JOB, attemptId, nodeId: 'node-1', gpuIndices: [0, 1], releasedAt: at(7) });

/** Given these events, the view. */
function given(...events: JobEvent[]): JobView {
  const record = events.reduce<JobRecord | undefined>((r, e) => evolveJob(r, e), undefined);
  if (!record) throw new Error('no view');
  // Every view the fold builds is a valid contracts JobView.
  expect(JobViewSchema.safeParse(record.view).error?.issues ?? []).toEqual([]);
  return record.view;
}

describe('job view (fold of every event of a job)', () => {
  beforeEach(() => {
    position = 0n;
  });

  it('given JobEnded, the view is final with its outcome and what was billed, and stays so', () => {
    const ended = () =>
      ev('JobEnded', { jobId: JOB, team: 'team-ml', outcome: 'completed', attempts: 1, exitCode: 0, billed: { billableMs: 2_000, totals: [{ currency: 'EUR', amountMicros: 4_000 }] }, outputs: null, endedAt: at(8) });
    const view = given(submitted(), staged(), placed(), held(), started(), finished('completed'), stored(), released(), ended());
    expect(view).toMatchObject({ state: 'completed', outcome: 'completed', exitCode: 0, ended: { endedAt: at(8), billed: { billableMs: 2_000, totals: [{ currency: 'EUR', amountMicros: 4_000 }] } } });
    expect(view.outputs?.files.map((f) => f.path)).toEqual(['model.bin']);
    // A job the view had not seen end (a lost attempt withdrawn, say) is final once JobEnded says so.
    position = 0n;
    const withdrawnLate = () => ev('JobEnded', { jobId: JOB, team: 'team-ml', outcome: 'cancelled', attempts: 1, billed: { billableMs: 0, totals: [] }, outputs: null, endedAt: at(9) });
    expect(given(submitted(), staged(), placed(), held(), started(), withdrawnLate())).toMatchObject({ state: 'cancelled', outcome: 'cancelled' });
  });

  it('given a JobFinished at the disk cap: the attempt and the job say which limit stopped it, and why', () => {
    const atCap = () => ev('JobFinished', { jobId: JOB, attemptId: A1, nodeId: 'node-1', outcome: 'failed', exitCode: null, signal: 'SIGKILL', limit: 'disk_limit', message: 'stopped at its disk limit', finishedAt: at(5) });
    const view = given(submitted(), staged(), placed(), held(), started(), atCap(), released());
    expect(view.state).toBe('failed');
    expect(view.limit).toBe('disk_limit');
    expect(view.attempts[0]).toMatchObject({ outcome: 'failed', limit: 'disk_limit', message: 'stopped at its disk limit' });
  });

  it('given JobSubmitted: submitted, with team, spec, name, deadline and a timeline of one', () => {
    const view = given(submitted());
    expect(view).toMatchObject({
      jobId: JOB,
      team: 'team-ml',
      name: 'resnet',
      state: 'submitted',
      cancelRequested: false,
      submittedAt: at(0),
      deadlineAt: '2025-06-02T00:00:00.000Z',
      updatedAt: at(0),
      attempts: [],
      timeline: [{ type: 'JobSubmitted', at: at(0) }],
    });
    expect(view.outcome).toBeUndefined();
  });

  it('walks the happy path: staged → placed → (held) → running → finishing → completed at release', () => {
    const events = [submitted(), staged(), placed(), held(), started(), finished('completed'), stored(), released()];
    const states = events.map((_, i) => given(...events.slice(0, i + 1)).state);
    expect(states).toEqual(['submitted', 'staged', 'placed', 'placed', 'running', 'finishing', 'finishing', 'completed']);
    const view = given(...events);
    expect(view).toMatchObject({ outcome: 'completed', exitCode: 0, updatedAt: at(7) });
    expect(view.attempts).toEqual([
      {
        attemptId: A1,
        attempt: 1,
        nodeId: 'node-1',
        gpuIndices: [0, 1],
        gpuModel: 'A100',
        placedAt: at(2),
        heldAt: at(3),
        startedAt: at(4),
        finishedAt: at(5),
        releasedAt: at(7),
        outcome: 'completed',
        exitCode: 0,
      },
    ]);
    expect(view.outputs).toEqual({ files: [{ path: 'model.bin', sha256: 'a'.repeat(64), size: 10 }], totalBytes: 10, truncated: false });
    expect(view.timeline.map((t) => t.type)).toEqual(['JobSubmitted', 'InputsStaged', 'JobPlaced', 'ComputeHeld', 'JobStarted', 'JobFinished', 'OutputsStored', 'ComputeReleased']);
    expect(view.timeline[3]).toEqual({ type: 'ComputeHeld', at: at(3), attemptId: A1 });
  });

  it.each(['failed', 'timeout', 'cancelled', 'deadline'] as const)('given an attempt that ended %s: final with that outcome at release', (outcome) => {
    const view = given(submitted(), staged(), placed(), held(), started(), finished(outcome, outcome === 'timeout' ? null : 3), released());
    expect(view.state).toBe(outcome);
    expect(view.outcome).toBe(outcome);
    expect(isFinalState(view.state)).toBe(true);
  });

  it('given a node lost and then requeued (release first): back to staged, never final in between, then a second attempt completes', () => {
    const lost = [submitted(), staged(), placed(), held(), started(), finished('node_lost', null), released()];
    expect(given(...lost).state).toBe('finishing');
    const requeued = ev('JobRequeued', { jobId: JOB, previousAttemptId: A1, reason: 'node_lost', nextAttempt: 2, requeuedAt: at(8) });
    expect(given(...lost, requeued).state).toBe('staged');
    const view = given(...lost, requeued, placed(A2, 2), held(A2), started(A2), finished('completed', 0, A2), released(A2));
    expect(view.state).toBe('completed');
    expect(view.attempts.map((a) => [a.attemptId, a.outcome])).toEqual([
      [A1, 'node_lost'],
      [A2, 'completed'],
    ]);
  });

  it('given the requeue before the lost attempt\'s release: the late release of the old attempt does not end the job', () => {
    const view = given(
      submitted(),
      staged(),
      placed(),
      held(),
      finished('node_lost', null),
      ev('JobRequeued', { jobId: JOB, previousAttemptId: A1, reason: 'node_lost', nextAttempt: 2, requeuedAt: at(8) }),
      placed(A2, 2),
      released(A1),
    );
    expect(view.state).toBe('placed');
    expect(view.attempts[0]!.releasedAt).toBe(at(7));
  });

  it('given a cancel request: cancelRequested, state unchanged until the job ends', () => {
    const view = given(submitted(), ev('JobCancelRequested', { jobId: JOB, team: 'team-ml', requestedAt: at(1) }));
    expect(view).toMatchObject({ state: 'submitted', cancelRequested: true });
  });

  it('given a queued job withdrawn: final with the withdrawal outcome and no attempt', () => {
    const view = given(
      submitted(),
      staged(),
      ev('JobCancelRequested', { jobId: JOB, team: 'team-ml', requestedAt: at(2) }),
      ev('JobWithdrawn', { jobId: JOB, team: 'team-ml', outcome: 'cancelled', withdrawnAt: at(3) }),
    );
    expect(view).toMatchObject({ state: 'cancelled', outcome: 'cancelled', attempts: [], updatedAt: at(3) });
  });

  it('given staging failed: failed, and a later stray event does not revive the job', () => {
    const view = given(submitted(), ev('StagingFailed', { jobId: JOB, reason: 'blob_missing', message: 'upload it', failedAt: at(1) }), staged());
    expect(view.state).toBe('failed');
    expect(view.timeline.map((t) => t.type)).toEqual(['JobSubmitted', 'StagingFailed', 'InputsStaged']);
  });

  it('given a rejection: rejected with reason, message and issues', () => {
    const issue = { path: 'request.gpuModel', message: 'no node has it', fix: 'ask for A100' };
    const view = given(submitted(), ev('JobRejected', { jobId: JOB, team: 'team-ml', reason: 'unsatisfiable', message: 'never fits', issues: [issue], rejectedAt: at(1) }));
    expect(view).toMatchObject({ state: 'rejected', rejection: { reason: 'unsatisfiable', message: 'never fits', issues: [issue] } });
  });

  it('ignores an event applied twice (same or earlier position) and events before JobSubmitted', () => {
    const s = submitted();
    const p = staged();
    const once = evolveJob(undefined, s)!;
    const twice = evolveJob(evolveJob(once, p)!, p)!;
    expect(twice.view.timeline).toHaveLength(2);
    expect(evolveJob(undefined, p)).toBeUndefined();
  });

  it('events of other kinds only extend the timeline, at the time they state', () => {
    const view = given(submitted(), ev('UsageRecorded', { jobId: JOB, recordedAt: at(9) }), ev('SomethingNew', { jobId: JOB }));
    expect(view.state).toBe('submitted');
    expect(view.timeline.slice(1)).toEqual([
      { type: 'UsageRecorded', at: at(9) },
      { type: 'SomethingNew', at: '2025-06-01T00:00:59.000Z' },
    ]);
  });
});

describe('helpers', () => {
  it('jobIdOf prefers metadata.jobId, falls back to data.jobId, else undefined', () => {
    expect(jobIdOf({ data: { jobId: 'b' }, metadata: { occurredAt: '', jobId: 'a' } })).toBe('a');
    expect(jobIdOf({ data: { jobId: 'b' }, metadata: { occurredAt: '' } })).toBe('b');
    expect(jobIdOf({ data: { nodeId: 'n' }, metadata: { occurredAt: '' } })).toBeUndefined();
  });

  it('eventTime uses the event\'s own time field, else occurredAt', () => {
    expect(eventTime({ type: 'JobFinished', data: { finishedAt: 'F' }, metadata: { occurredAt: 'O' } })).toBe('F');
    expect(eventTime({ type: 'JobFinished', data: {}, metadata: { occurredAt: 'O' } })).toBe('O');
  });

  it('foldJobs keeps one record per job and skips events of no job', () => {
    position = 0n;
    const other = { ...submitted(), metadata: { occurredAt: at(0), jobId: 'job_other' }, data: { jobId: 'job_other', team: 't2', spec, submittedAt: at(0) } };
    const node = { type: 'NodeRegistered', data: { nodeId: 'n' }, position: 99n, metadata: { occurredAt: at(0) } };
    const records = foldJobs([submitted(), other, node, staged()]);
    expect([...records.keys()].sort()).toEqual([JOB, 'job_other']);
    expect(records.get(JOB)!.view.state).toBe('staged');
  });

  it('toSummary carries the list fields', () => {
    position = 0n;
    expect(toSummary(given(submitted(), staged()))).toEqual({
      jobId: JOB,
      team: 'team-ml',
      name: 'resnet',
      state: 'staged',
      gpus: 2,
      gpuModel: 'A100',
      submittedAt: at(0),
      updatedAt: at(1),
    });
  });
});

describe('a multi-node attempt', () => {
  const part = <T extends EventType>(type: T, data: EventData<T>) => ev(type, data);
  const gang = () => {
    position = 0n;
    const rec = [
      submitted(),
      staged(),
      part('JobPlaced', { jobId: JOB, attemptId: A1, attempt: 1, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', placedAt: at(2), nodes: [{ nodeId: 'node-1', gpuIndices: [0, 1] }, { nodeId: 'node-2', gpuIndices: [0, 1] }] }),
      part('ComputeHeld', { jobId: JOB, attemptId: A1, nodeId: 'node-2', gpuIndices: [0, 1], gpuModel: 'A100', gpus: 2, heldAt: at(3) }),
      part('ComputeHeld', { jobId: JOB, attemptId: A1, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', gpus: 2, heldAt: at(4) }),
      part('JobStarted', { jobId: JOB, attemptId: A1, nodeId: 'node-1', startedAt: at(5) }),
    ];
    return foldJobs(rec).get(JOB)!;
  };

  it('holds from the first part, and ends only when every part ended, with the verdict of the parts that ended on their own', () => {
    let r: JobRecord | undefined = gang();
    expect(r.view.attempts[0]).toMatchObject({ heldAt: at(3), nodes: [{ nodeId: 'node-1', heldAt: at(4) }, { nodeId: 'node-2', heldAt: at(3) }] });
    r = evolveJob(r, part('JobFinished', { jobId: JOB, attemptId: A1, nodeId: 'node-2', outcome: 'failed', exitCode: 3, signal: null, finishedAt: at(6) }))!;
    expect(r.view.state).toBe('running');
    r = evolveJob(r, part('JobFinished', { jobId: JOB, attemptId: A1, nodeId: 'node-1', outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', finishedAt: at(7), peerEnded: 'node-2' }))!;
    expect(r.view).toMatchObject({ state: 'finishing', outcome: 'failed', exitCode: 3 });
    expect(r.view.attempts[0]).toMatchObject({ outcome: 'failed', finishedAt: at(7) });
    r = evolveJob(r, part('ComputeReleased', { jobId: JOB, attemptId: A1, nodeId: 'node-1', gpuIndices: [0, 1], releasedAt: at(8) }))!;
    expect(r.view.state).toBe('finishing');
    r = evolveJob(r, part('ComputeReleased', { jobId: JOB, attemptId: A1, nodeId: 'node-2', gpuIndices: [0, 1], releasedAt: at(9) }))!;
    expect(r.view.state).toBe('failed');
    expect(r.view.attempts[0]!.releasedAt).toBe(at(9));
    expect(JobViewSchema.safeParse(r.view).success).toBe(true);
  });

  it('shows the first quote recorded for the job — a deadline\'s estimate, else the first start shown — and what placement said of the deadline', () => {
    const quoted = (start: number) => ev('JobQuoted', { jobId: JOB, expectedStart: at(start), quotedAt: at(1) });
    const note = 'starts at …: running to its time limit it would end after its deadline';
    const placedWithNote = () => ev('JobPlaced', { jobId: JOB, attemptId: A1, attempt: 1, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'A100', placedAt: at(2), predictedRunMs: 5_000, deadlineNote: note });
    const shown = given(submitted(), staged(), quoted(20), quoted(30), placedWithNote());
    expect(shown.quote).toEqual({ expectedStart: at(20), quotedAt: at(1) });
    expect(shown.attempts[0]).toMatchObject({ predictedRunMs: 5_000, deadlineNote: note });
    const quote = { expectedStart: at(10), expectedEnd: at(40), quotedAt: at(0) };
    const withDeadline = ev('JobSubmitted', { jobId: JOB, team: 'team-ml', spec, submittedAt: at(0), deadlineAt: at(50), quote });
    expect(given(withDeadline, staged(), quoted(20), placed()).quote).toEqual(quote);
    expect(given(submitted(), staged(), placed()).quote).toBeUndefined();
  });
});
