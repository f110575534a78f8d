/** Intake's own liveness answer (`GET /healthz`); the other HTTP reply shapes are in the contracts. */
import { DecimalString, Timestamp } from '#contracts';
import { z } from 'zod';

export const Healthz = z
  .object({
    status: z.enum(['ok']).describe('`ok` when intake serves.'),
    jobs: z.int().min(0).describe('Jobs in the read model.'),
    position: DecimalString.describe('Store position the read model has reached.'),
    checkedAt: Timestamp,
  })
  .describe('Liveness of this intake process.');
export type Healthz = z.output<typeof Healthz>;
