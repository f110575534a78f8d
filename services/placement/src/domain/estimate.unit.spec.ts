import type { EventData } from '#contracts';
import { estimate, ESTIMATE_JOB_ID } from './estimate.js';
import { ev, given, T0, type Unpositioned } from './fixtures.js';
import { plan } from './plan.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

function submitted(jobId: string, gpus: number, timeLimitMs: number, team = 'team-a'): Unpositioned {
  const e = ev.submitted(jobId, gpus, undefined, team) as { type: 'JobSubmitted'; data: EventData<'JobSubmitted'> };
  return { type: 'JobSubmitted', data: { ...e.data, spec: { ...e.data.spec, request: { ...e.data.spec.request, timeLimitMs } } } };
}
const heldAt = (jobId: string, nodeId: string, gpuIndices: number[], t: number): Unpositioned => ({
  type: 'ComputeHeld',
  data: { jobId, attemptId: `${jobId}-a1`, nodeId, gpuIndices, gpuModel: 'A100', gpus: gpuIndices.length, heldAt: new Date(t).toISOString() },
});

describe('estimate: a job that is not submitted, at the back of the queue', () => {
  // n1: 4 A100; `run` holds 3 of them until T0 + 1h.
  const busy = () => given(ev.node('n1', 4), submitted('run', 3, HOUR), ev.placed('run', 1, 'n1', [0, 1, 2]), heldAt('run', 'n1', [0, 1, 2], T0));

  it('given a free GPU, when a 1-GPU job is estimated, then it starts now and ends after its time limit', () => {
    expect(estimate(busy().state, { team: 'team-b', gpus: 1, timeLimitMs: 30 * MIN }, T0 + 10 * MIN)).toEqual({
      runnable: true,
      expectedStart: T0 + 10 * MIN,
      expectedEnd: T0 + 40 * MIN,
      gpuModel: 'A100',
      nodes: 1,
      rank: 1,
      priority: expect.any(Number),
    });
  });

  it('given running work, when the job needs the whole node, then it starts when that work\'s time limit ends', () => {
    expect(estimate(busy().state, { team: 'team-b', gpus: 4, timeLimitMs: 2 * HOUR }, T0 + 10 * MIN)).toMatchObject({
      runnable: true,
      expectedStart: T0 + HOUR,
      expectedEnd: T0 + 3 * HOUR,
      reason: 'Resources',
    });
  });

  it('queues behind waiting jobs of equal priority and beyond the live reservation depth', () => {
    const h = busy();
    for (let i = 0; i < 3; i++) h.apply(submitted(`big${i}`, 4, HOUR), ev.staged(`big${i}`));
    // big0 from 1h, big1 from 2h, big2 from 3h; the estimate (same team, same size, newest) after them.
    const e = estimate(h.state, { team: 'team-a', gpus: 4, timeLimitMs: HOUR }, T0 + 10 * MIN, { reservationDepth: 1 });
    expect(e).toMatchObject({ runnable: true, expectedStart: T0 + 4 * HOUR, expectedEnd: T0 + 5 * HOUR, rank: 4 });
  });

  it('backfills into a gap before a reservation when it is short enough, not when it would delay it', () => {
    const h = busy().apply(submitted('big', 4, HOUR), ev.staged('big'));
    expect(estimate(h.state, { team: 'team-a', gpus: 1, timeLimitMs: 30 * MIN }, T0 + 10 * MIN)).toMatchObject({ expectedStart: T0 + 10 * MIN });
    // 2 h would run into big's reservation at 1h: it waits for the reservation to end at 2h.
    expect(estimate(h.state, { team: 'team-a', gpus: 1, timeLimitMs: 2 * HOUR }, T0 + 10 * MIN)).toMatchObject({
      expectedStart: T0 + 2 * HOUR,
      reason: 'Reservation',
    });
  });

  it('does not change the state: the live plan is the same before and after', () => {
    const h = busy().apply(submitted('big', 4, HOUR), ev.staged('big'));
    const before = plan(h.state, T0 + 10 * MIN);
    estimate(h.state, { team: 'team-a', gpus: 2, timeLimitMs: HOUR }, T0 + 10 * MIN);
    expect(plan(h.state, T0 + 10 * MIN)).toEqual(before);
    expect(h.state.jobs.has(ESTIMATE_JOB_ID)).toBe(false);
  });

  it('says when no node can ever run it', () => {
    expect(estimate(given().state, { team: 't', gpus: 1, timeLimitMs: HOUR }, T0)).toEqual({ runnable: false, reason: 'NoNodes' });
    expect(estimate(busy().state, { team: 't', gpus: 5, timeLimitMs: HOUR }, T0)).toEqual({ runnable: false, reason: 'NoNodeFits' });
    expect(estimate(busy().state, { team: 't', gpus: 1, gpuModel: 'H100', timeLimitMs: HOUR }, T0)).toEqual({ runnable: false, reason: 'NoNodeFits' });
    // 2 A100 + 2 H100 on one node: 3 of one model never fit.
    expect(estimate(given(ev.mixedNode('m', ['A100', 'A100', 'H100', 'H100'])).state, { team: 't', gpus: 3, timeLimitMs: HOUR }, T0)).toEqual({
      runnable: false,
      reason: 'NoNodeFits',
    });
  });

  it('says when the start cannot be predicted (behind work that never ends)', () => {
    const h = given(ev.node('n1', 2), ev.placed('ghost', 1, 'n1', [0]));
    expect(estimate(h.state, { team: 't', gpus: 2, timeLimitMs: HOUR }, T0)).toEqual({ runnable: false, reason: 'Unpredictable' });
  });
});

describe('estimate: long work while short work flows (headroom, decision 0028)', () => {
  it('given long work holding 7 of 10 GPUs and short work waiting, when 2 GPUs of long work are estimated, then they start once long work leaves room, not now', () => {
    const h = given(ev.node('n1', 10), submitted('run', 7, 2 * HOUR), ev.placed('run', 1, 'n1', [0, 1, 2, 3, 4, 5, 6]), heldAt('run', 'n1', [0, 1, 2, 3, 4, 5, 6], T0)).apply(
      submitted('short', 1, 10 * MIN),
      ev.staged('short'),
    );
    // 3 GPUs are free now, but long work may hold only 8: the estimate waits for `run`'s expected end.
    expect(estimate(h.state, { team: 'team-a', gpus: 2, timeLimitMs: 3 * HOUR }, T0 + 10 * MIN)).toMatchObject({ runnable: true, expectedStart: T0 + 2 * HOUR, expectedEnd: T0 + 5 * HOUR });
    // Short work is not held back.
    expect(estimate(h.state, { team: 'team-a', gpus: 2, timeLimitMs: 30 * MIN }, T0 + 10 * MIN)).toMatchObject({ runnable: true, expectedStart: T0 + 10 * MIN });
  });
});

describe('estimate: its cost does not grow with the jobs ever run', () => {
  it('given jobs that ended, when a job is estimated, then it answers without walking every job placement knows (each submit with a deadline asks for one)', () => {
    const h = given(ev.node('n1', 4), submitted('run', 3, HOUR), ev.placed('run', 1, 'n1', [0, 1, 2]), heldAt('run', 'n1', [0, 1, 2], T0)).apply(submitted('waiting', 4, HOUR), ev.staged('waiting'));
    const expected = estimate(h.state, { team: 'team-b', gpus: 2, timeLimitMs: HOUR }, T0 + 10 * MIN);
    // Every job ever run stays in the state: a walk over them would cost an estimate more with each.
    class Unwalkable<K, V> extends Map<K, V> {
      override values(): MapIterator<V> {
        throw new Error('walked every job');
      }
      override entries(): MapIterator<[K, V]> {
        throw new Error('walked every job');
      }
      override [Symbol.iterator](): MapIterator<[K, V]> {
        throw new Error('walked every job');
      }
      override forEach(): void {
        throw new Error('walked every job');
      }
    }
    const state = { ...h.state, jobs: new Unwalkable(h.state.jobs) };
    expect(estimate(state, { team: 'team-b', gpus: 2, timeLimitMs: HOUR }, T0 + 10 * MIN)).toEqual(expected);
    expect(expected).toMatchObject({ runnable: true, rank: 1 }); // team-b has no usage yet: ahead of team-a's waiting job
  });
});
