import { describe, expect, it } from '@jest/globals';
import { DEFAULT_PRIORITY_WEIGHTS, DEFAULT_RESERVATION_DEPTH, DEFAULT_USAGE_HALF_LIFE_MS, plan } from './domain/index.js';
import { ev, given, T0 } from './domain/fixtures.js';
import { PlacementConfig, planOptionsOf, stateOptionsOf } from './placement.config.js';

describe('placement config: scheduling options', () => {
  it('defaults to the documented weights, depth, backfill and half-life', () => {
    expect(planOptionsOf({})).toEqual({ weights: { ...DEFAULT_PRIORITY_WEIGHTS }, reservationDepth: DEFAULT_RESERVATION_DEPTH, backfill: true });
    expect(stateOptionsOf({})).toEqual({ usageHalfLifeMs: DEFAULT_USAGE_HALF_LIFE_MS });
  });

  it('reads the weights from the environment, and they change the order of the plan', () => {
    const env = { GPUNET_PRIORITY_WEIGHT_AGE: '0', GPUNET_PRIORITY_WEIGHT_FAIRSHARE: '0', GPUNET_PRIORITY_WEIGHT_SIZE: '0', GPUNET_BACKFILL: 'off', GPUNET_RESERVATION_DEPTH: '2' };
    const options = planOptionsOf(PlacementConfig.parse(env));
    expect(options).toMatchObject({ weights: { age: 0, fairShare: 0, size: 0 }, backfill: false, reservationDepth: 2 });
    // One 1-GPU and one 4-GPU job behind a busy node: by default the large one ranks first (size
    // factor); with no factor weighing, ties go to the earlier submission, the small one.
    const h = given(ev.node('n', 4), ev.submitted('small', 1), ev.staged('small'), ev.submitted('large', 4), ev.staged('large'), ev.submitted('run', 4), ev.placed('run', 1, 'n', [0, 1, 2, 3]));
    const order = (o: Parameters<typeof plan>[2]) => plan(h.state, T0 + 3_600_000, o).jobs.map((j) => j.job.jobId);
    expect(order(planOptionsOf({}))).toEqual(['large', 'small']);
    expect(order(options)).toEqual(['small', 'large']);
  });

  it('refuses a bad value naming the variable', () => {
    const r = PlacementConfig.safeParse({ GPUNET_BACKFILL: 'maybe' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['GPUNET_BACKFILL']);
    expect(PlacementConfig.safeParse({ GPUNET_PRIORITY_WEIGHT_SIZE: '-1' }).success).toBe(false);
  });
});
