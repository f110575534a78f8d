import type { BaseConfig } from '#service-kit';
import { z } from 'zod';
import { DEFAULT_HEADROOM, DEFAULT_PRIORITY_WEIGHTS, DEFAULT_RESERVATION_AFTER_MS, DEFAULT_RESERVATION_DEPTH, DEFAULT_RUN_TIME_SCALE_MS, DEFAULT_USAGE_HALF_LIFE_MS, RUN_TIME_FLOOR_MS, type PlanOptions, type StateOptions } from './domain/index.js';

const weight = (name: string, dflt: number) =>
  z.coerce.number().int().min(0).max(1_000_000).default(dflt).describe(`${name} (integer 0–1000000; 0 turns the factor off)`);

/** Placement's own environment variables (merged with the kit's); see services/placement/README.md. */
export const PlacementConfig = z.object({
  GPUNET_NODE_LEASE_MS: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe('ms a node may stay silent before it is lost; default 3 × its heartbeat interval, at least 5000'),
  GPUNET_NODE_CHECK_MS: z.coerce.number().int().min(10).default(1_000).describe('ms between checks for silent nodes'),
  GPUNET_PRIORITY_WEIGHT_AGE: weight('weight of the age factor', DEFAULT_PRIORITY_WEIGHTS.age),
  GPUNET_PRIORITY_WEIGHT_FAIRSHARE: weight('weight of the fair-share factor', DEFAULT_PRIORITY_WEIGHTS.fairShare),
  GPUNET_PRIORITY_WEIGHT_SIZE: weight('weight of the job-size factor', DEFAULT_PRIORITY_WEIGHTS.size),
  GPUNET_PRIORITY_AGE_CAP_MS: z.coerce.number().int().min(1).default(DEFAULT_PRIORITY_WEIGHTS.ageCapMs).describe('ms of waiting at which the age factor reaches 1'),
  GPUNET_PRIORITY_SIZE_FULL_GPUS: z.coerce.number().int().min(1).default(DEFAULT_PRIORITY_WEIGHTS.sizeFullGpus).describe('GPUs at which the size factor reaches 1'),
  GPUNET_FAIRSHARE_HALF_LIFE_MS: z.coerce.number().int().min(1).default(DEFAULT_USAGE_HALF_LIFE_MS).describe('half-life of past usage in fair share, ms'),
  GPUNET_PRIORITY_WEIGHT_RUNTIME: weight('weight of the run-time factor (shorter predicted runs first)', DEFAULT_PRIORITY_WEIGHTS.runTime ?? 0),
  GPUNET_PRIORITY_RUNTIME_SCALE_MS: z.coerce
    .number()
    .int()
    .min(RUN_TIME_FLOOR_MS + 1)
    .default(DEFAULT_PRIORITY_WEIGHTS.runTimeScaleMs ?? DEFAULT_RUN_TIME_SCALE_MS)
    .describe('predicted run time (ms) at which the run-time factor reaches 0'),
  GPUNET_RESERVATION_AFTER_MS: z.coerce.number().int().min(0).default(DEFAULT_RESERVATION_AFTER_MS).describe('ms a waiting job waits before it holds a reservation (0: at once)'),
  GPUNET_PREDICTIONS: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on').describe('on: run-time predictions from history rank jobs and date expected starts; off: every job runs to its time limit'),
  GPUNET_RESERVE_BY: z.enum(['limits', 'predictions'], { error: 'must be limits or predictions' }).default('limits').describe('limits: the pass dates its reservations by running work\'s time limits, as EASY does (decision 0020); predictions: by their predicted ends'),
  GPUNET_RESERVATION_DEPTH: z.coerce.number().int().min(0).max(10_000).default(DEFAULT_RESERVATION_DEPTH).describe('how many waiting jobs, highest priority first, hold reservations'),
  GPUNET_BACKFILL: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on').describe('on: lower jobs start where they delay no reservation; off: strict priority order'),
  GPUNET_LONG_WORK_SHARE: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(Math.round(DEFAULT_HEADROOM.share * 100))
    .describe('percent of the GPUs long work may hold at once while short work flows (100: no limit; decision 0028)'),
  GPUNET_PLACEMENT_SNAPSHOT_EVENTS: z.coerce
    .number()
    .int()
    .min(1)
    .default(10_000)
    .describe('events applied after which the snapshot of placement\'s state is moved on (decision 0037)'),
  GPUNET_PLACEMENT_SNAPSHOT_MS: z.coerce.number().int().min(0).default(60_000).describe('ms between moves of the snapshot while events arrive (0: only by count and at shutdown)'),
  GPUNET_LONG_WORK_FROM_MS: z.coerce.number().int().min(1).default(DEFAULT_HEADROOM.longRunMs).describe('predicted run time (ms) from which a job is long work'),
});
export type PlacementConfig = z.output<typeof PlacementConfig> & BaseConfig;

/** The scheduling options of the plan (priority weights, reservations, backfill) from the config. */
export function planOptionsOf(config: Partial<PlacementConfig>): PlanOptions {
  const c = PlacementConfig.parse(config);
  return {
    weights: {
      age: c.GPUNET_PRIORITY_WEIGHT_AGE,
      ageCapMs: c.GPUNET_PRIORITY_AGE_CAP_MS,
      fairShare: c.GPUNET_PRIORITY_WEIGHT_FAIRSHARE,
      size: c.GPUNET_PRIORITY_WEIGHT_SIZE,
      sizeFullGpus: c.GPUNET_PRIORITY_SIZE_FULL_GPUS,
      runTime: c.GPUNET_PRIORITY_WEIGHT_RUNTIME,
      runTimeScaleMs: c.GPUNET_PRIORITY_RUNTIME_SCALE_MS,
    },
    order: 'priority',
    reservationDepth: c.GPUNET_RESERVATION_DEPTH,
    reservationAfterMs: c.GPUNET_RESERVATION_AFTER_MS,
    backfill: c.GPUNET_BACKFILL === 'on',
    predictions: c.GPUNET_PREDICTIONS === 'on',
    reserveByLimits: c.GPUNET_RESERVE_BY === 'limits',
    headroom: c.GPUNET_LONG_WORK_SHARE >= 100 ? false : { longRunMs: c.GPUNET_LONG_WORK_FROM_MS, share: c.GPUNET_LONG_WORK_SHARE / 100 },
  };
}

/** The state options (fair-share half-life) from the config. */
export function stateOptionsOf(config: Partial<PlacementConfig>): StateOptions {
  return { usageHalfLifeMs: PlacementConfig.parse(config).GPUNET_FAIRSHARE_HALF_LIFE_MS };
}

/** When placement moves its snapshot on (decision 0037). */
export function snapshotOptionsOf(config: Partial<PlacementConfig>): { everyEvents: number; everyMs: number } {
  const c = PlacementConfig.parse(config);
  return { everyEvents: c.GPUNET_PLACEMENT_SNAPSHOT_EVENTS, everyMs: c.GPUNET_PLACEMENT_SNAPSHOT_MS };
}
