import { attemptIdFor } from './attempt-id.js';
import { evolve, observeHeartbeat, type PlacementEvent } from './evolve.js';
import { ev, given } from './fixtures.js';
import { queueView } from './queue-view.js';
import { initialState } from './state.js';

describe('evolve: the queue', () => {
  it('keeps jobs in submit (store position) order whatever order they arrive in', () => {
    const s = initialState();
    for (const [jobId, position] of [['c', 30n], ['a', 10n], ['b', 20n]] as const) {
      evolve(s, { ...ev.submitted(jobId, 1), position } as PlacementEvent);
    }
    expect(s.queue.map((j) => j.jobId)).toEqual(['a', 'b', 'c']);
    expect(s.position).toBe(30n);
  });

  it('takes a placed job out of the queue and puts a lost one back at its original place', () => {
    const h = given(ev.node('n1', 2), ev.submitted('a', 1), ev.submitted('b', 1), ev.staged('a'), ev.placed('a', 1, 'n1', [0]));
    expect(h.state.queue.map((j) => j.jobId)).toEqual(['b']);
    h.apply(ev.finished('a', 1, 'n1', 'node_lost'));
    expect(h.state.queue.map((j) => [j.jobId, j.phase])).toEqual([
      ['a', 'lost'],
      ['b', 'waiting_inputs'],
    ]);
    h.apply(ev.requeued('a', 1));
    expect(h.state.jobs.get('a')!.phase).toBe('queued');
  });

  it('ends a job on staging failure, rejection or withdrawal, and not once it is placed', () => {
    const h = given(ev.submitted('f', 1), ev.stagingFailed('f'), ev.submitted('r', 1), ev.rejected('r'), ev.submitted('w', 1), ev.withdrawn('w'));
    expect([...h.state.jobs.values()].map((j) => [j.jobId, j.phase, j.end])).toEqual([
      ['f', 'ended', 'staging_failed'],
      ['r', 'ended', 'rejected'],
      ['w', 'ended', 'withdrawn'],
    ]);
    expect(h.state.queue).toEqual([]);
    h.apply(ev.node('n1', 1), ev.submitted('p', 1), ev.staged('p'), ev.placed('p', 1, 'n1', [0]), ev.withdrawn('p'));
    expect(h.state.jobs.get('p')!.phase).toBe('placed');
  });

  it('keeps the request of the spec', () => {
    const h = given(ev.submitted('j', 3, 'T4'));
    expect(h.state.jobs.get('j')!.request).toEqual({ gpus: 3, gpuModel: 'T4', timeLimitMs: 3_600_000 });
  });
});

describe('evolve: holds', () => {
  it('holds GPUs from JobPlaced to ComputeReleased of that attempt', () => {
    const h = given(ev.node('n1', 4), ev.submitted('j', 2), ev.staged('j'), ev.placed('j', 1, 'n1', [1, 3]));
    const node = h.state.nodes.get('n1')!;
    expect([...node.busy.keys()].sort()).toEqual([1, 3]);
    expect(h.state.holders.get('j-a1')).toEqual(['n1']);
    h.apply(ev.held('j', 1, 'n1', [1, 3]), ev.finished('j', 1, 'n1'));
    expect(node.busy.size).toBe(2);
    h.apply(ev.released('j', 1, 'n1', [1, 3]));
    expect(node.busy.size).toBe(0);
    expect(h.state.holders.size).toBe(0);
    expect(h.state.jobs.get('j')).toMatchObject({ phase: 'ended', end: 'finished', attempts: [{ heldAt: expect.any(String), outcome: 'completed', released: true }] });
  });

  it('keeps a re-registered node\'s holds', () => {
    const h = given(ev.node('n1', 2), ev.placed('x', 1, 'n1', [1]), ev.node('n1', 4));
    expect(h.state.nodes.get('n1')!.gpus).toHaveLength(4);
    expect([...h.state.nodes.get('n1')!.busy.keys()]).toEqual([1]);
    expect(h.state.nodes.get('n1')!.order).toBe(0);
  });

  it('counts a GPU placed twice (which decide never does) as busy until both holders released it', () => {
    const h = given(ev.node('n1', 1), ev.placed('x', 1, 'n1', [0]), ev.placed('y', 1, 'n1', [0]));
    expect(h.state.nodes.get('n1')!.busy.get(0)).toBe(2);
    h.apply(ev.released('x', 1, 'n1', [0]));
    expect(h.state.nodes.get('n1')!.busy.get(0)).toBe(1);
    h.apply(ev.released('y', 1, 'n1', [0]));
    expect(h.state.nodes.get('n1')!.busy.size).toBe(0);
  });

  it('ignores a release of an attempt it never saw placed', () => {
    const h = given(ev.node('n1', 1), ev.placed('x', 1, 'n1', [0]), ev.released('nope', 1, 'n1', [0]));
    expect(h.state.nodes.get('n1')!.busy.size).toBe(1);
  });
});

describe('evolve: idempotent on redelivery', () => {
  it('applies each event once however often it arrives', () => {
    const events = [
      ev.node('n1', 2),
      ev.submitted('j', 1),
      ev.staged('j'),
      ev.placed('j', 1, 'n1', [0]),
      ev.held('j', 1, 'n1', [0]),
      ev.finished('j', 1, 'n1', 'node_lost'),
      ev.requeued('j', 1),
      ev.placed('j', 2, 'n1', [1]),
      ev.released('j', 1, 'n1', [0]),
    ].map((e, i) => ({ ...e, position: BigInt(i + 1) }) as PlacementEvent);
    const once = initialState();
    for (const e of events) evolve(once, e);
    const twice = initialState();
    for (const e of events) evolve(evolve(twice, e), e);
    // Redeliver everything again, late.
    for (const e of events) evolve(twice, e);
    expect(twice).toEqual(once);
    expect(once.jobs.get('j')).toMatchObject({ phase: 'placed', attempts: [{ attempt: 1, released: true }, { attempt: 2 }] });
    expect([...once.nodes.get('n1')!.busy.keys()]).toEqual([1]);
  });
});

describe('observeHeartbeat', () => {
  it('keeps the last heartbeat time and sequence per node, registered or not yet', () => {
    const h = given(ev.node('n1', 1));
    observeHeartbeat(h.state, { nodeId: 'n1', freeGpuIndices: [0], runningAttempts: [], sequence: 7, sentAt: '2026-01-01T00:00:00.000Z' }, 1234);
    observeHeartbeat(h.state, { nodeId: 'n2', freeGpuIndices: [], runningAttempts: [], sequence: 0, sentAt: '2026-01-01T00:00:00.000Z' }, 99);
    expect(h.state.nodes.get('n1')).toMatchObject({ lastHeartbeatAt: 1234, lastHeartbeatSequence: 7, registered: true });
    expect(h.state.nodes.get('n2')).toMatchObject({ lastHeartbeatAt: 99, registered: false });
    expect(queueView(h.state).nodes.map((n) => n.nodeId)).toEqual(['n1']);
  });
});

describe('queueView', () => {
  it('lists waiting jobs in line with why they wait, and nodes with their free GPUs', () => {
    const h = given(ev.submitted('a', 1), ev.submitted('b', 1), ev.staged('b'), ev.submitted('c', 1), ev.cancelRequested('c'));
    expect(queueView(h.state).pending.map((p) => [p.job.jobId, p.position, p.reason])).toEqual([
      ['a', 1, 'Inputs'],
      ['b', 2, 'NoNodes'],
      ['c', 3, 'Cancelling'],
    ]);
    h.apply(ev.node('n1', 2), ev.placed('x', 1, 'n1', [0]));
    const view = queueView(h.state);
    expect(view.pending[1]!.reason).toBe('Resources');
    expect(view.nodes).toEqual([{ nodeId: 'n1', gpus: 2, gpuModels: ['A100'], freeGpuIndices: [1], holds: [{ attemptId: 'x-a1', gpuIndices: [0] }] }]);
  });
});

describe('attemptIdFor', () => {
  it('is <jobId>-a<n>, and stays a valid id (≤ 64 characters) for long job ids without colliding', () => {
    expect(attemptIdFor('job_1', 3)).toBe('job_1-a3');
    const long1 = 'j'.repeat(60) + 'xxxx';
    const long2 = 'j'.repeat(60) + 'yyyy';
    const a = attemptIdFor(long1, 12);
    expect(a).toHaveLength(64);
    expect(a.endsWith('-a12')).toBe(true);
    expect(a).not.toBe(attemptIdFor(long2, 12));
    expect(a).toBe(attemptIdFor(long1, 12));
  });
});
