import { ev, given, T0 } from './fixtures.js';
import { expectedEndOf, plan, predictionsOutlived } from './plan.js';
import { predictRun, workKeyOf } from './predict.js';
import { evolve, type PlacementEvent } from './evolve.js';

const HOUR = 3_600_000;
const MIN = 60_000;

/** A job of work `name` asking for 1 GPU for an hour, held at `t` and finished `runMs` later. */
function ran(h: ReturnType<typeof given>, jobId: string, name: string, t: number, runMs: number): void {
  const e = ev.submitted(jobId, 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
  h.apply({ ...e, data: { ...e.data, spec: { ...e.data.spec, name } } }, ev.staged(jobId), ev.placed(jobId, 1, 'n1', [0]));
  h.apply({ type: 'ComputeHeld', data: { jobId, attemptId: `${jobId}-a1`, nodeId: 'n1', gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: new Date(t).toISOString() } });
  h.apply({ type: 'JobFinished', data: { jobId, attemptId: `${jobId}-a1`, nodeId: 'n1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date(t + runMs).toISOString() } });
  h.apply(ev.released(jobId, 1, 'n1', [0]));
}

describe('run-time predictions', () => {
  it('predicts the mean of the last two runs of the same team, work and request; the time limit without history', () => {
    const h = given(ev.node('n1', 1));
    expect(predictRun(h.state, 'team-a', 'name:train', { gpus: 1, timeLimitMs: HOUR })).toEqual({ runMs: HOUR, basis: 'limit', samples: 0 });
    ran(h, 'a', 'train', T0, 10 * MIN);
    ran(h, 'b', 'train', T0 + HOUR, 20 * MIN);
    ran(h, 'c', 'train', T0 + 2 * HOUR, 30 * MIN);
    expect(predictRun(h.state, 'team-a', 'name:train', { gpus: 1, timeLimitMs: HOUR })).toEqual({ runMs: 25 * MIN, basis: 'similar', samples: 2 });
    // Same work, other request: the work's own history; another team learns nothing from it.
    expect(predictRun(h.state, 'team-a', 'name:train', { gpus: 2, timeLimitMs: 2 * HOUR })).toMatchObject({ runMs: 25 * MIN, basis: 'work' });
    expect(predictRun(h.state, 'team-b', 'name:train', { gpus: 1, timeLimitMs: HOUR }).basis).toBe('limit');
    // Never above the limit.
    expect(predictRun(h.state, 'team-a', 'name:train', { gpus: 1, timeLimitMs: 5 * MIN }).runMs).toBe(5 * MIN);
  });

  it('names work by its name, else its script path, image, or inline text', () => {
    const work = (w: object, name?: string) => workKeyOf({ work: w as never, ...(name !== undefined ? { name } : {}) });
    expect(work({ kind: 'script', script: { path: 'a.sh' } }, 'n')).toBe('name:n');
    expect(work({ kind: 'script', script: { path: 'a.sh' } })).toBe('path:a.sh');
    expect(work({ kind: 'container', image: 'img:1' })).toBe('image:img:1');
    expect(work({ kind: 'script', script: { inline: 'x' } })).toBe(work({ kind: 'script', script: { inline: 'x' } }));
    expect(work({ kind: 'script', script: { inline: 'x' } })).not.toBe(work({ kind: 'script', script: { inline: 'y' } }));
  });

  it('gives a submitted job its prediction, and JobPlaced records it', () => {
    const h = given(ev.node('n1', 1));
    ran(h, 'a', 'train', T0, 10 * MIN);
    const e = ev.submitted('next', 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
    h.apply({ ...e, data: { ...e.data, spec: { ...e.data.spec, name: 'train' } } }, ev.staged('next'));
    expect(h.state.jobs.get('next')!.predictedRunMs).toBe(10 * MIN);
  });

  it('expects running work to end at its prediction, and at its time limit once it outlives it', () => {
    const h = given(ev.node('n1', 1));
    ran(h, 'a', 'train', T0, 10 * MIN);
    const e = ev.submitted('run', 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
    h.apply({ ...e, data: { ...e.data, spec: { ...e.data.spec, name: 'train' } } }, ev.staged('run'), ev.placed('run', 1, 'n1', [0]));
    const start = T0 + 5 * HOUR;
    evolve(h.state, { type: 'ComputeHeld', data: { jobId: 'run', attemptId: 'run-a1', nodeId: 'n1', gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: new Date(start).toISOString() }, position: 999n } as PlacementEvent);
    const live = h.state.live.get('run-a1')!;
    expect(expectedEndOf(live, start + MIN)).toBe(start + 10 * MIN);
    expect(expectedEndOf(live, start + MIN, false)).toBe(start + HOUR);
    expect(expectedEndOf(live, start + 11 * MIN)).toBe(start + HOUR);
    expect(predictionsOutlived(h.state, start + 9 * MIN, start + 10 * MIN)).toBe(true);
    expect(predictionsOutlived(h.state, start + 10 * MIN, start + 11 * MIN)).toBe(false);
    // A waiting job's expected start (status, estimates) follows: at the prediction, then at the limit once outlived.
    h.apply(ev.submitted('wait', 1), ev.staged('wait'));
    const at = (now: number, reserveByLimits: boolean) => plan(h.state, now, { reservationAfterMs: 0, reserveByLimits }).jobs.find((j) => j.job.jobId === 'wait')!.expectedStart;
    expect(at(start + MIN, false)).toBe(start + 10 * MIN);
    expect(at(start + 11 * MIN, false)).toBe(start + HOUR);
    // The pass's own reservation is dated by the limit throughout, as EASY's: the GPUs are sure to be free then.
    expect(at(start + MIN, true)).toBe(start + HOUR);
    expect(at(start + 11 * MIN, true)).toBe(start + HOUR);
  });
});
