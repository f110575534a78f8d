import { decide, type PlacementDecision } from './decide.js';
import { ev, given, T0 } from './fixtures.js';

const now = new Date(T0 + 10_000);
const placed = (ds: PlacementDecision[]) => ds.filter((d) => d.type === 'JobPlaced').map((d) => d.data);

describe('decide: placement', () => {
  it('places a staged job on the first node with enough free GPUs, lowest indices first', () => {
    const h = given(ev.node('n1', 2), ev.node('n2', 4), ev.submitted('j1', 3), ev.staged('j1'));
    expect(decide(h.state, now)).toEqual([
      {
        type: 'JobPlaced',
        data: { jobId: 'j1', attemptId: 'j1-a1', attempt: 1, nodeId: 'n2', gpuIndices: [0, 1, 2], gpuModel: 'A100', placedAt: now.toISOString() },
      },
    ]);
  });

  it('does not place a job whose inputs are not staged', () => {
    const h = given(ev.node('n1', 2), ev.submitted('j1', 1));
    expect(decide(h.state, now)).toEqual([]);
  });

  it('places in submit order and never gives one GPU twice in a pass', () => {
    const h = given(ev.node('n1', 4), ev.submitted('j1', 2), ev.submitted('j2', 2), ev.submitted('j3', 1), ev.staged('j3'), ev.staged('j2'), ev.staged('j1'));
    expect(placed(decide(h.state, now)).map((p) => [p.jobId, p.gpuIndices])).toEqual([
      ['j1', [0, 1]],
      ['j2', [2, 3]],
    ]);
  });

  it('lets a smaller later job use GPUs a larger earlier one cannot when no reservation can be predicted (the holder\'s job is unknown)', () => {
    const h = given(ev.node('n1', 4), ev.submitted('big', 4), ev.submitted('small', 1), ev.staged('big'), ev.staged('small'), ev.placed('x', 1, 'n1', [0]));
    expect(placed(decide(h.state, now)).map((p) => [p.jobId, p.gpuIndices])).toEqual([['small', [1]]]);
  });

  it('treats GPUs as busy from JobPlaced until ComputeReleased of that attempt, not at JobFinished', () => {
    const h = given(ev.node('n1', 2), ev.placed('old', 1, 'n1', [0, 1]), ev.submitted('j1', 2), ev.staged('j1'));
    expect(decide(h.state, now)).toEqual([]);
    h.apply(ev.held('old', 1, 'n1', [0, 1]), ev.finished('old', 1, 'n1'));
    expect(decide(h.state, now)).toEqual([]);
    h.apply(ev.released('old', 1, 'n1', [0, 1]));
    expect(placed(decide(h.state, now)).map((p) => p.gpuIndices)).toEqual([[0, 1]]);
  });

  it('frees the GPUs of an attempt that finished without ever holding, once it is released', () => {
    const h = given(ev.node('n1', 1), ev.placed('old', 1, 'n1', [0]), ev.finished('old', 1, 'n1', 'failed'), ev.submitted('j1', 1), ev.staged('j1'));
    expect(decide(h.state, now)).toEqual([]);
    h.apply(ev.released('old', 1, 'n1', [0]));
    expect(placed(decide(h.state, now))).toHaveLength(1);
  });

  it('keeps a gang on one model: the requested one, or one model of a mixed node', () => {
    const h = given(ev.mixedNode('mix', ['T4', 'A100', 'T4', 'A100']), ev.submitted('a', 2, 'A100'), ev.submitted('b', 2), ev.staged('a'), ev.staged('b'));
    expect(placed(decide(h.state, now)).map((p) => [p.jobId, p.gpuModel, p.gpuIndices])).toEqual([
      ['a', 'A100', [1, 3]],
      ['b', 'T4', [0, 2]],
    ]);
  });

  it('never splits a job across nodes', () => {
    const h = given(ev.node('n1', 4), ev.node('n2', 4), ev.placed('x', 1, 'n1', [0, 1]), ev.placed('y', 1, 'n2', [2, 3]), ev.submitted('j1', 3), ev.staged('j1'));
    // 4 GPUs are free, 2 on each node: the job waits for one node to have 3.
    expect(decide(h.state, now)).toEqual([]);
    h.apply(ev.released('y', 1, 'n2', [2, 3]));
    expect(placed(decide(h.state, now)).map((p) => [p.nodeId, p.gpuIndices])).toEqual([['n2', [0, 1, 2]]]);
  });

  it('waits when no node is registered yet instead of rejecting', () => {
    const h = given(ev.submitted('j1', 64), ev.staged('j1'));
    expect(decide(h.state, now)).toEqual([]);
  });

  it('takes a job placed before the node registered into account', () => {
    const h = given(ev.placed('old', 1, 'n1', [0]), ev.node('n1', 2), ev.submitted('j1', 2), ev.staged('j1'), ev.submitted('j2', 1), ev.staged('j2'));
    expect(placed(decide(h.state, now)).map((p) => [p.jobId, p.gpuIndices])).toEqual([['j2', [1]]]);
  });

  it('numbers the attempt after the last one', () => {
    const h = given(ev.node('n1', 1), ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'n1', [0]), ev.finished('j1', 1, 'n1', 'node_lost'), ev.requeued('j1', 1), ev.released('j1', 1, 'n1', [0]));
    expect(placed(decide(h.state, now))).toEqual([expect.objectContaining({ attempt: 2, attemptId: 'j1-a2' })]);
  });
});

describe('decide: rejection', () => {
  it('rejects at once a job larger than all nodes together, naming the largest node', () => {
    const h = given(ev.node('n1', 2), ev.node('n2', 8), ev.submitted('huge', 16));
    const [d, ...rest] = decide(h.state, now);
    expect(rest).toEqual([]);
    expect(d).toEqual({
      type: 'JobRejected',
      data: expect.objectContaining({ jobId: 'huge', team: 'team-a', reason: 'unsatisfiable', rejectedAt: now.toISOString() }),
    });
    expect(d!.data).toHaveProperty('message', 'the job asks for 16 GPUs of one model, but all nodes together have at most 10 (largest node: n2, 8 × A100)');
    expect(d!.data).toHaveProperty('issues', [expect.objectContaining({ path: 'request.gpus', fix: 'ask for at most 10 GPUs' })]);
  });

  it('counts only GPUs of the requested model', () => {
    const h = given(ev.mixedNode('mix', ['T4', 'T4', 'T4', 'A100']), ev.submitted('j1', 2, 'A100'));
    expect(decide(h.state, now)[0]!.data).toHaveProperty('message', 'the job asks for 2 GPUs of model A100, but all nodes together have 1 (largest node: mix, 1 × A100)');
  });

  it('rejects a model no node offers, listing the models there are', () => {
    const h = given(ev.node('n1', 2, 'T4'), ev.node('n2', 2, 'A100'), ev.submitted('j1', 1, 'H100'));
    const [d] = decide(h.state, now);
    expect(d!.data).toHaveProperty('message', 'no node offers GPUs of model H100; the network has A100, T4');
    expect(d!.data).toHaveProperty('issues', [expect.objectContaining({ path: 'request.gpuModel' })]);
  });

  it('stops deciding about a rejected job once the rejection is applied', () => {
    const h = given(ev.node('n1', 1), ev.submitted('j1', 2));
    const [d] = decide(h.state, now);
    h.apply(d!);
    expect(decide(h.state, now)).toEqual([]);
  });
});

describe('decide: cancel and requeue', () => {
  it('withdraws a queued job whose cancel was requested, staged or not, and never places it', () => {
    const h = given(ev.node('n1', 4), ev.submitted('j1', 1), ev.submitted('j2', 1), ev.staged('j2'), ev.cancelRequested('j1'), ev.cancelRequested('j2'));
    expect(decide(h.state, now)).toEqual([
      { type: 'JobWithdrawn', data: expect.objectContaining({ jobId: 'j1', team: 'team-a', outcome: 'cancelled', withdrawnAt: now.toISOString() }) },
      { type: 'JobWithdrawn', data: expect.objectContaining({ jobId: 'j2', outcome: 'cancelled' }) },
    ]);
  });

  it('leaves a placed job to its agent when a cancel arrives', () => {
    const h = given(ev.node('n1', 1), ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'n1', [0]), ev.cancelRequested('j1'));
    expect(decide(h.state, now)).toEqual([]);
  });

  it('requeues a job whose attempt ended node_lost and places it again at its submit position', () => {
    const h = given(
      ev.node('n1', 1),
      ev.node('n2', 1),
      ev.submitted('early', 1),
      ev.submitted('late', 1),
      ev.staged('early'),
      ev.placed('early', 1, 'n1', [0]),
      ev.staged('late'),
      ev.placed('x', 1, 'n2', [0]),
      ev.finished('early', 1, 'n1', 'node_lost'),
      ev.released('early', 1, 'n1', [0]),
    );
    expect(decide(h.state, now)).toEqual([
      { type: 'JobRequeued', data: { jobId: 'early', previousAttemptId: 'early-a1', reason: 'node_lost', nextAttempt: 2, requeuedAt: now.toISOString() } },
      { type: 'JobPlaced', data: expect.objectContaining({ jobId: 'early', attempt: 2, attemptId: 'early-a2', nodeId: 'n1', gpuIndices: [0] }) },
    ]);
  });

  it('does not rerun a lost attempt when the team asked to cancel: it withdraws it, cancel before or after the loss', () => {
    const withdrawal = [{ type: 'JobWithdrawn', data: expect.objectContaining({ jobId: 'j1', outcome: 'cancelled', message: expect.stringContaining('after attempt 1 ended node_lost') }) }];
    const h = given(ev.node('n1', 1), ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'n1', [0]), ev.cancelRequested('j1'), ev.finished('j1', 1, 'n1', 'node_lost'), ev.released('j1', 1, 'n1', [0]));
    expect(decide(h.state, now)).toEqual(withdrawal);
    const h2 = given(ev.node('n1', 1), ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'n1', [0]), ev.finished('j1', 1, 'n1', 'node_lost'), ev.cancelRequested('j1'));
    expect(decide(h2.state, now)).toEqual(withdrawal);
    // Once recorded, the job is over for placement: nothing more is decided for it.
    h2.apply(ev.withdrawn('j1'));
    expect(h2.state.jobs.get('j1')!.phase).toBe('ended');
    expect(decide(h2.state, now)).toEqual([]);
  });

  it('does not requeue other outcomes', () => {
    for (const outcome of ['completed', 'failed', 'timeout', 'cancelled'] as const) {
      const h = given(ev.node('n1', 1), ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'n1', [0]), ev.finished('j1', 1, 'n1', outcome), ev.released('j1', 1, 'n1', [0]));
      expect(decide(h.state, now)).toEqual([]);
    }
  });
});

describe('decide: a pass is complete', () => {
  it('proposes nothing more once its own decisions are applied', () => {
    const h = given(ev.node('n1', 2), ev.node('n2', 1));
    for (let i = 0; i < 6; i++) h.apply(ev.submitted(`j${i}`, 1 + (i % 2)), ev.staged(`j${i}`));
    h.apply(ev.cancelRequested('j5'), ev.submitted('huge', 4));
    const first = decide(h.state, now);
    // Equal predicted runs and ages: submit order, each where it fits (j0 on n1, j1 needs n1's two GPUs, j2 takes n2).
    expect(first.map((d) => `${d.type}:${d.data.jobId}`)).toEqual(['JobWithdrawn:j5', 'JobRejected:huge', 'JobPlaced:j0', 'JobPlaced:j2', 'JobPlaced:j4']);
    h.apply(...first);
    expect(decide(h.state, now)).toEqual([]);
  });

  it('does not change the state it reads', () => {
    const h = given(ev.node('n1', 2), ev.submitted('j1', 1), ev.staged('j1'), ev.submitted('j2', 1), ev.cancelRequested('j2'));
    const before = JSON.stringify([...h.state.jobs.values()], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    decide(h.state, now);
    decide(h.state, now);
    expect(JSON.stringify([...h.state.jobs.values()], (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).toBe(before);
    expect(h.state.queue.map((j) => j.jobId)).toEqual(['j1', 'j2']);
  });
});
