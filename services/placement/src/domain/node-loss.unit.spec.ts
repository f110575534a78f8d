import type { EventData, NodeHeartbeat } from '#contracts';
import { decide } from './decide.js';
import { observeHeartbeat } from './evolve.js';
import { at, ev, given, T0, type Unpositioned } from './fixtures.js';
import { detectLostNodes, leaseOf, MIN_LEASE_MS, observeRegistration } from './node-loss.js';
import { freeGpuIndices } from './state.js';

const hb = (nodeId: string, sequence: number, sentMs: number): NodeHeartbeat => ({ nodeId, freeGpuIndices: [], runningAttempts: [], sequence, sentAt: at(sentMs) });
const lostEvent = (data: EventData<'NodeLost'>): Unpositioned => ({ type: 'NodeLost', data }) as Unpositioned;

/** Two 2-GPU nodes (heartbeat every 1 s, lease 5 s), j1 running on n1, both heard from at T0. */
function running() {
  const h = given(
    ev.node('n1', 2),
    ev.node('n2', 2),
    ev.submitted('j1', 2),
    ev.staged('j1'),
    ev.placed('j1', 1, 'n1', [0, 1]),
    ev.held('j1', 1, 'n1', [0, 1]),
  );
  observeHeartbeat(h.state, hb('n1', 7, 0), T0);
  observeHeartbeat(h.state, hb('n2', 7, 0), T0);
  return h;
}

describe('node loss: the lease', () => {
  it('is 3 heartbeat intervals, at least 5 s, unless configured', () => {
    expect(leaseOf({ heartbeatIntervalMs: 2_000 })).toBe(6_000);
    expect(leaseOf({ heartbeatIntervalMs: 1_000 })).toBe(MIN_LEASE_MS);
    expect(leaseOf({ heartbeatIntervalMs: 1_000 }, { leaseMs: 1_500 })).toBe(1_500);
  });
});

describe('detectLostNodes', () => {
  it('given heartbeats within the lease, loses nothing', () => {
    const h = running();
    expect(detectLostNodes(h.state, new Date(T0 + 5_000))).toEqual([]);
  });

  it('given a node silent past its lease, declares it lost with its running attempts; the other node stays', () => {
    const h = running();
    observeHeartbeat(h.state, hb('n2', 8, 4_000), T0 + 4_000);
    const now = new Date(T0 + 5_001);
    expect(detectLostNodes(h.state, now)).toEqual([
      {
        type: 'NodeLost',
        registrationKey: `n1@${at()}`,
        data: { nodeId: 'n1', reason: 'heartbeat_timeout', lastSeenAt: at(0), detectedAt: now.toISOString(), affectedAttempts: [{ jobId: 'j1', attemptId: 'j1-a1' }] },
      },
    ]);
  });

  it('does not count a finished or released attempt as affected', () => {
    const h = running();
    h.apply(ev.submitted('j2', 1), ev.staged('j2'), ev.placed('j2', 1, 'n2', [0]), ev.finished('j1', 1, 'n1'));
    expect(detectLostNodes(h.state, new Date(T0 + 10_000)).map((d) => [d.data.nodeId, d.data.affectedAttempts])).toEqual([
      ['n1', []],
      ['n2', [{ jobId: 'j2', attemptId: 'j2-a1' }]],
    ]);
  });

  it('never loses a node it has not started watching, and gives a registration a whole lease', () => {
    const h = given(ev.node('n1', 2));
    expect(detectLostNodes(h.state, new Date(T0 + 60_000))).toEqual([]);
    observeRegistration(h.state, 'n1', T0 + 60_000);
    expect(detectLostNodes(h.state, new Date(T0 + 65_000))).toEqual([]);
    expect(detectLostNodes(h.state, new Date(T0 + 65_001))).toHaveLength(1);
  });
});

describe('applying NodeLost', () => {
  it('ends the running attempt node_lost, frees the node out of service, and decide requeues the job onto the other node', () => {
    const h = running();
    const [loss] = detectLostNodes(h.state, new Date(T0 + 6_000));
    h.apply(lostEvent(loss!.data));
    const job = h.state.jobs.get('j1')!;
    expect(job.phase).toBe('lost');
    expect(job.attempts[0]).toMatchObject({ outcome: 'node_lost', finishedAt: loss!.data.detectedAt });
    const n1 = h.state.nodes.get('n1')!;
    expect([n1.registered, n1.holds.size, n1.busy.size]).toEqual([false, 0, 0]);
    // Not declared twice.
    expect(detectLostNodes(h.state, new Date(T0 + 60_000)).map((d) => d.data.nodeId)).toEqual(['n2']);

    const now = new Date(T0 + 6_001);
    expect(decide(h.state, now).map((d) => [d.type, d.data])).toEqual([
      ['JobRequeued', { jobId: 'j1', previousAttemptId: 'j1-a1', reason: 'node_lost', nextAttempt: 2, requeuedAt: now.toISOString() }],
      ['JobPlaced', expect.objectContaining({ jobId: 'j1', attemptId: 'j1-a2', attempt: 2, nodeId: 'n2', gpuIndices: [0, 1] })],
    ]);
  });

  it('is idempotent, and a late JobFinished or ComputeReleased of the lost attempt changes nothing', () => {
    const h = running();
    const [loss] = detectLostNodes(h.state, new Date(T0 + 6_000));
    h.apply(lostEvent(loss!.data), lostEvent(loss!.data));
    expect(h.state.queue.map((j) => j.jobId)).toEqual(['j1']);
    h.apply(ev.finished('j1', 1, 'n1', 'completed'), ev.released('j1', 1, 'n1', [0, 1]));
    expect(h.state.jobs.get('j1')!.attempts[0]!.outcome).toBe('node_lost');
    expect(h.state.jobs.get('j1')!.phase).toBe('lost');
  });

  it('withdraws a lost job whose team asked to cancel it instead of requeuing it', () => {
    const h = running();
    h.apply(ev.cancelRequested('j1'));
    const [loss] = detectLostNodes(h.state, new Date(T0 + 6_000));
    h.apply(lostEvent(loss!.data));
    expect(decide(h.state, new Date(T0 + 6_001))).toEqual([{ type: 'JobWithdrawn', data: expect.objectContaining({ jobId: 'j1', outcome: 'cancelled' }) }]);
  });

  it('a node that registers again comes back with fresh GPUs', () => {
    const h = running();
    const [loss] = detectLostNodes(h.state, new Date(T0 + 6_000));
    h.apply(lostEvent(loss!.data), ev.node('n1', 2));
    const n1 = h.state.nodes.get('n1')!;
    expect(n1.registered).toBe(true);
    expect(freeGpuIndices(n1)).toEqual([0, 1]);
  });
});
