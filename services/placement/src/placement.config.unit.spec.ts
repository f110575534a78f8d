import { describe, expect, it } from '@jest/globals';
import { DEFAULT_PLAN_OPTIONS, DEFAULT_PRIORITY_WEIGHTS, DEFAULT_RESERVATION_DEPTH, DEFAULT_USAGE_HALF_LIFE_MS, plan } from './domain/index.js';
import { ev, given, T0 } from './domain/fixtures.js';
import { PlacementConfig, planOptionsOf, stateOptionsOf } from './placement.config.js';

/** A 1-GPU job with time limit `timeLimitMs`. */
function shortJob(jobId: string, timeLimitMs: number): ReturnType<typeof ev.submitted> {
  const e = ev.submitted(jobId, 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
  return { ...e, data: { ...e.data, spec: { ...e.data.spec, request: { ...e.data.spec.request, timeLimitMs } } } };
}

describe('placement config: scheduling options', () => {
  it('defaults to the documented weights, depth, backfill and half-life', () => {
    expect(planOptionsOf({})).toEqual({ ...DEFAULT_PLAN_OPTIONS, weights: { ...DEFAULT_PRIORITY_WEIGHTS } });
    expect(planOptionsOf({}).reservationDepth).toBe(DEFAULT_RESERVATION_DEPTH);
    expect(stateOptionsOf({})).toEqual({ usageHalfLifeMs: DEFAULT_USAGE_HALF_LIFE_MS });
  });

  it('reads the weights from the environment, and they change the order of the plan', () => {
    const env = { GPUNET_PRIORITY_WEIGHT_AGE: '0', GPUNET_PRIORITY_WEIGHT_FAIRSHARE: '0', GPUNET_PRIORITY_WEIGHT_SIZE: '500', GPUNET_PRIORITY_WEIGHT_RUNTIME: '0', GPUNET_BACKFILL: 'off', GPUNET_RESERVATION_DEPTH: '2', GPUNET_RESERVATION_AFTER_MS: '0', GPUNET_PREDICTIONS: 'off', GPUNET_RESERVE_BY: 'predictions', GPUNET_LONG_WORK_SHARE: '100' };
    const options = planOptionsOf(PlacementConfig.parse(env));
    expect(options).toMatchObject({ weights: { age: 0, fairShare: 0, size: 500, runTime: 0 }, backfill: false, reservationDepth: 2, reservationAfterMs: 0, predictions: false, reserveByLimits: false, headroom: false });
    expect(planOptionsOf(PlacementConfig.parse({ GPUNET_LONG_WORK_SHARE: '70', GPUNET_LONG_WORK_FROM_MS: '7200000' })).headroom).toEqual({ longRunMs: 7_200_000, share: 0.7 });
    // A short 1-GPU job and a long 4-GPU job behind a busy node: by default the shorter predicted run
    // ranks first (run-time factor); weighing size instead, the large one does.
    const h = given(ev.node('n', 4), shortJob('small', 600_000), ev.staged('small'), ev.submitted('large', 4), ev.staged('large'), ev.submitted('run', 4), ev.placed('run', 1, 'n', [0, 1, 2, 3]));
    const order = (o: Parameters<typeof plan>[2]) => plan(h.state, T0 + 3_600_000, o).jobs.map((j) => j.job.jobId);
    expect(order(planOptionsOf({}))).toEqual(['small', 'large']);
    expect(order(options)).toEqual(['large', 'small']);
  });

  it('refuses a bad value naming the variable', () => {
    const r = PlacementConfig.safeParse({ GPUNET_BACKFILL: 'maybe' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['GPUNET_BACKFILL']);
    expect(PlacementConfig.safeParse({ GPUNET_PRIORITY_WEIGHT_SIZE: '-1' }).success).toBe(false);
  });
});
