import { reportSigningBytes, type JobPlaced, type NodeReport } from '#contracts';
import { newIdentity, signBytes, verifySignature } from '#identity';
import { judgeOutputs, judgeReport, type ReportInput, type StreamEvent } from './report.js';

const node1 = newIdentity();
const node2 = newIdentity();
const JOB = 'job-1';
const ATTEMPT = 'job-1-a1';
const stream = `execution-node-1-attempt-${ATTEMPT}`;
const placed: JobPlaced = { jobId: JOB, attemptId: ATTEMPT, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'sim-gpu', placedAt: '2026-01-01T00:00:00.000Z' } as JobPlaced;
const held = { jobId: JOB, attemptId: ATTEMPT, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'sim-gpu', gpus: 2, heldAt: '2026-01-01T00:00:01.000Z' };
const started = { jobId: JOB, attemptId: ATTEMPT, nodeId: 'node-1', startedAt: '2026-01-01T00:00:02.000Z' };
const finished = { jobId: JOB, attemptId: ATTEMPT, nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: '2026-01-01T00:01:00.000Z' };
const released = { jobId: JOB, attemptId: ATTEMPT, nodeId: 'node-1', gpuIndices: [0, 1], releasedAt: '2026-01-01T00:01:01.000Z' };
const ids = { held: '00000000-0000-4000-8000-000000000001', started: '00000000-0000-4000-8000-000000000002', finished: '00000000-0000-4000-8000-000000000003', released: '00000000-0000-4000-8000-000000000004' };

function report(type: string, data: unknown, o: { eventId?: string; seq?: bigint; streamId?: string; nodeId?: string; key?: typeof node1 } = {}) {
  const body: Omit<NodeReport, 'signature'> = {
    nodeId: o.nodeId ?? 'node-1',
    journal: 'j1',
    seq: String(o.seq ?? 10n),
    event: { streamId: o.streamId ?? stream, eventId: o.eventId ?? ids.held, type, data, metadata: { correlationId: 'c', causationId: 'c', producer: 'execution', occurredAt: '2026-01-01T00:00:00.000Z' } },
  };
  const signedBytes = reportSigningBytes(body);
  return { nodeId: body.nodeId, journal: body.journal, seq: BigInt(body.seq), event: body.event, signature: signBytes(o.key ?? node1, signedBytes), signedBytes };
}

function given(r: ReturnType<typeof report>, over: Partial<ReportInput> = {}): ReportInput {
  return { fromNode: 'node-1', report: r, publicKey: node1.publicKey, verify: verifySignature, highWater: 5n, stream: [], placed, ...over };
}

const recorded = (...events: [string, unknown, string][]): StreamEvent[] => events.map(([type, data, eventId]) => ({ type, data, eventId }));

describe('judgeReport: what the recorder records from a node', () => {
  it('accepts a signed report that fits: the first ComputeHeld of an attempt placed on the node, with the placement\'s GPUs', () => {
    expect(judgeReport(given(report('ComputeHeld', held)))).toEqual({ verdict: 'accept', attemptId: ATTEMPT, jobId: JOB });
  });

  it('accepts each next step in order, and a node-stream report (NodeRegistered)', () => {
    const history = recorded(['ComputeHeld', held, ids.held]);
    expect(judgeReport(given(report('JobStarted', started, { eventId: ids.started, seq: 11n }), { stream: history })).verdict).toBe('accept');
    const running = recorded(['ComputeHeld', held, ids.held], ['JobStarted', started, ids.started]);
    expect(judgeReport(given(report('JobFinished', finished, { eventId: ids.finished, seq: 12n }), { stream: running })).verdict).toBe('accept');
    const ended = [...running, ...recorded(['JobFinished', finished, ids.finished])];
    expect(judgeReport(given(report('ComputeReleased', released, { eventId: ids.released, seq: 13n }), { stream: ended })).verdict).toBe('accept');
    const registered = { nodeId: 'node-1', gpus: [{ index: 0, model: 'sim-gpu' }], simulated: true, networkIsolation: false, heartbeatIntervalMs: 1000, registeredAt: '2026-01-01T00:00:00.000Z' };
    expect(judgeReport(given(report('NodeRegistered', registered, { streamId: 'execution-node-1-node' }), { placed: undefined })).verdict).toBe('accept');
  });

  it('takes a report recorded before (same id, same content, same signature, the node\'s latest) as a duplicate', () => {
    const r = report('ComputeHeld', held, { seq: 10n });
    expect(judgeReport(given(r, { highWater: 10n, stream: [{ type: 'ComputeHeld', data: held, eventId: ids.held, signature: r.signature }] }))).toEqual({ verdict: 'duplicate' });
  });

  it.each([
    ['other_node', 'the body names another node than its subject', () => given(report('ComputeHeld', held), { fromNode: 'node-2' })],
    ['unknown_node', 'the node is not enrolled', () => given(report('ComputeHeld', held), { publicKey: undefined })],
    ['bad_signature', 'it is signed by another node\'s key', () => given(report('ComputeHeld', held, { key: node2 }))],
    ['bad_signature', 'a byte changed after signing', () => {
      const r = report('ComputeHeld', held);
      return given({ ...r, event: { ...r.event, data: { ...held, heldAt: '2026-01-01T00:00:59.000Z' } }, signedBytes: reportSigningBytes({ nodeId: r.nodeId, journal: r.journal, seq: String(r.seq), event: { ...r.event, data: { ...held, heldAt: '2026-01-01T00:00:59.000Z' } } as NodeReport['event'] }) });
    }],
    ['other_node', 'it is about another node\'s stream (node-1 reporting node-2\'s attempt)', () => given(report('JobFinished', { ...finished, nodeId: 'node-2' }, { streamId: `execution-node-2-attempt-${ATTEMPT}` }))],
    ['other_node', 'its data names another node', () => given(report('ComputeHeld', { ...held, nodeId: 'node-2' }))],
    ['other_node', 'the attempt was placed on another node', () => given(report('ComputeHeld', held), { placed: { ...placed, nodeId: 'node-2' } })],
    ['not_placed', 'the attempt was never placed', () => given(report('ComputeHeld', held), { placed: undefined })],
    ['not_placed', 'the event names another job than the placement', () => given(report('ComputeHeld', { ...held, jobId: 'job-other' }))],
    ['malformed', 'a type no node reports (a JobPlaced of its own)', () => given(report('JobPlaced', { ...placed }))],
    ['replayed', 'its seq is not after the node\'s last report', () => given(report('ComputeHeld', held, { seq: 5n }))],
    ['replayed', 'an old report of an event recorded long ago, sent again', () => {
      const r = report('JobFinished', finished, { eventId: ids.finished, seq: 12n });
      return given(r, { highWater: 20n, stream: recorded(['ComputeHeld', held, ids.held], ['JobFinished', finished, ids.finished]).map((e) => ({ ...e, signature: r.signature })) });
    }],
    ['replayed', 'a used event id with other content', () => given(report('ComputeHeld', { ...held, heldAt: '2026-01-01T00:00:09.000Z' }), { stream: recorded(['ComputeHeld', held, ids.held]) })],
    ['state', 'a second JobFinished for a finished attempt', () => given(report('JobFinished', { ...finished, finishedAt: '2026-01-01T00:00:03.000Z' }, { eventId: '00000000-0000-4000-8000-000000000009' }), { stream: recorded(['ComputeHeld', held, ids.held], ['JobFinished', finished, ids.finished]) })],
    ['state', 'JobStarted before ComputeHeld', () => given(report('JobStarted', started, { eventId: ids.started }))],
    ['state', 'ComputeHeld of GPUs the placement did not give', () => given(report('ComputeHeld', { ...held, gpuIndices: [2, 3] }))],
    ['state', 'a JobFinished that ends before compute was held (a 0 ms bill)', () => given(report('JobFinished', { ...finished, finishedAt: '2026-01-01T00:00:00.500Z' }, { eventId: ids.finished }), { stream: recorded(['ComputeHeld', held, ids.held]) })],
    ['state', 'ComputeReleased before JobFinished', () => given(report('ComputeReleased', released, { eventId: ids.released }), { stream: recorded(['ComputeHeld', held, ids.held]) })],
  ])('refuses %s: %s', (reason, _what, input) => {
    expect(judgeReport(input())).toMatchObject({ verdict: 'refuse', reason, detail: expect.any(String) });
  });
});

describe('judgeOutputs: outputs the recorder hands to storage', () => {
  const outputs = { jobId: JOB, team: 'team-a', attemptId: ATTEMPT, nodeId: 'node-1', files: [], truncated: false, rejected: [], logs: [] };
  const bytes = new TextEncoder().encode('outputs');
  const ran = recorded(['ComputeHeld', held, ids.held], ['JobStarted', started, ids.started], ['JobFinished', finished, ids.finished]);
  const input = (over: Partial<Parameters<typeof judgeOutputs>[0]> = {}) => ({
    fromNode: 'node-1', nodeId: 'node-1', outputs, signature: signBytes(node1, bytes), signedBytes: bytes, publicKey: node1.publicKey, verify: verifySignature, placed, team: 'team-a', stream: ran, ...over,
  });

  it('accepts the outputs of an attempt that ran and ended on the node, for the job\'s team', () => {
    expect(judgeOutputs(input())).toEqual({ verdict: 'accept' });
  });

  it('says not yet while the attempt\'s end is not recorded (its report may be on its way)', () => {
    expect(judgeOutputs(input({ stream: ran.slice(0, 2) })).verdict).toBe('not_yet');
  });

  it.each([
    ['other_node', 'from another node\'s subject', { fromNode: 'node-2' }],
    ['unknown_node', 'from a node not enrolled', { publicKey: undefined }],
    ['bad_signature', 'signed by another key', { signature: signBytes(node2, bytes) }],
    ['not_placed', 'for an attempt never placed', { placed: undefined }],
    ['other_node', 'for an attempt placed on another node', { placed: { ...placed, nodeId: 'node-2' } }],
    ['other_team', 'for another team\'s job', { team: 'team-b' }],
    ['state', 'for a released attempt (a replay)', { stream: [...ran, ...recorded(['ComputeReleased', released, ids.released])] }],
    ['state', 'for an attempt that never started', { stream: recorded(['JobFinished', { ...finished, exitCode: null, outcome: 'failed' }, ids.finished]) }],
  ])('refuses %s: %s', (reason, _what, over) => {
    expect(judgeOutputs(input(over as never))).toMatchObject({ verdict: 'refuse', reason });
  });
});
