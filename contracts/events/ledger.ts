/**
 * Events of money: versioned price lists and one usage line per billed attempt.
 * Amounts are integer micro-units; times are integer ms. No floats anywhere.
 */
import { z } from 'zod';
import { withFix } from '../issues.js';
import { defineEvent } from '../message.js';
import { AttemptId, Currency, DurationMs, GpuCount, GpuModel, JobId, JobOutcome, Micros, NodeId, TeamId, Timestamp } from '../primitives.js';

/** Name of the rounding rule the ledger applies today; recorded on every usage line. */
export const ROUNDING_RULE_PER_LINE_HALF_UP = 'per-line-half-up-micros';

const version = z.int().min(1).describe('Price list version, an integer ≥ 1, increasing.');

export const PriceListPublished = z.object({
  version,
  currency: Currency,
  effectiveFrom: Timestamp.describe('From when this version applies (inclusive); the latest version in force wins.'),
  ratesMicrosPerGpuHour: z
    .record(GpuModel, Micros)
    .describe('Price per GPU per hour in micro-units, by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.'),
  defaultRateMicrosPerGpuHour: Micros.optional().describe('Price for models the list does not name; absent: such models cannot be priced.'),
  publishedAt: Timestamp.describe('When the ledger recorded the list.'),
});
export type PriceListPublished = z.output<typeof PriceListPublished>;

export const WAIVER_REASONS = ['platform_fault'] as const;

export const UsageRecorded = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    team: TeamId,
    nodeId: NodeId,
    gpuModel: GpuModel,
    gpus: GpuCount.describe('GPUs held by the attempt.'),
    outcome: JobOutcome,
    heldFrom: Timestamp.describe('ComputeHeld.heldAt of the attempt (agent clock).'),
    finishedAt: Timestamp.describe('JobFinished.finishedAt of the attempt (same agent\'s clock).'),
    billableMs: DurationMs.describe('finishedAt − heldFrom in ms, never negative.'),
    rateMicrosPerGpuHour: Micros.describe('Rate applied, micro-units per GPU per hour.'),
    amountMicros: Micros.describe('Charge: gpus × billableMs × rate / 3,600,000, rounded once by the rounding rule; 0 when waived.'),
    currency: Currency,
    priceListVersion: version.describe('Version of the price list the rate came from.'),
    rounding: z.string().min(1).describe(`Name of the rounding rule applied, e.g. \`${ROUNDING_RULE_PER_LINE_HALF_UP}\` (exact value, then half up, once per line).`),
    waivedReason: z
      .enum(WAIVER_REASONS)
      .optional()
      .describe('Present when the attempt is not charged: `platform_fault` (e.g. node lost). amountMicros is then 0.'),
    recordedAt: Timestamp.describe('When the ledger computed the line.'),
  })
  .refine((u) => u.waivedReason === undefined || u.amountMicros === 0, {
    error: withFix('amountMicros must be 0 when the attempt is waived', 'set amountMicros to 0 or drop waivedReason'),
    path: ['amountMicros'],
  });
export type UsageRecorded = z.output<typeof UsageRecorded>;

export const ledgerEvents = [
  defineEvent({
    name: 'PriceListPublished',
    version: 1,
    producers: ['ledger'],
    description: 'A new version of the price list: micro-units per GPU per hour, by GPU model.',
    schema: PriceListPublished,
  }),
  defineEvent({
    name: 'UsageRecorded',
    version: 1,
    producers: ['ledger'],
    description: 'One billed (or waived) run attempt: held → finished time, rate, amount and the rounding rule used.',
    schema: UsageRecorded,
  }),
] as const;
