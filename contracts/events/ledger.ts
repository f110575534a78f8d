/**
 * Events of money: versioned price lists and one usage line per billed attempt.
 * Amounts are integer micro-units; times are integer ms. No floats anywhere.
 */
import { z } from 'zod';
import { withFix } from '../issues.js';
import { defineEvent } from '../message.js';
import { AttemptId, Currency, DecimalString, DurationMs, EventId, GpuCount, GpuIndices, GpuModel, JobId, JobOutcome, Micros, NodeId, TeamId, Timestamp } from '../primitives.js';

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
  minimumChargeMicros: Micros.optional().describe(
    'Least amount of a charged attempt line (billableMs > 0, not waived): a line whose rounded amount is below it is charged this instead. Absent: no minimum.',
  ),
  publishedAt: Timestamp.describe('When the ledger recorded the list.'),
  publishedBy: z.string().min(1).max(200).optional().describe('Who asked for it: `<team>/<keyId>` of a `billing` API key; absent for the first list, from the ledger\'s configuration.'),
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

// ── invoices ──────────────────────────────────────────────────────────────────────────────

/** A calendar month in UTC, `YYYY-MM`: the period of an invoice. */
export const InvoiceMonth = z
  .string({ error: withFix('month must be `YYYY-MM`', 'write e.g. `2025-06`') })
  .regex(/^\d{4}-(0[1-9]|1[0-2])$/, { error: withFix('month must be `YYYY-MM`', 'write e.g. `2025-06`') })
  .describe('Calendar month in UTC, `YYYY-MM`.');

/** `inv-<team>-<YYYY-MM>`: one invoice per team per month. */
export const InvoiceId = z
  .string({ error: withFix('invoiceId must be `inv-<team>-<YYYY-MM>`', 'copy it from `gpunet invoices list`, e.g. `inv-team-ml-2025-06`') })
  .regex(/^inv-[A-Za-z0-9][A-Za-z0-9_-]{0,63}-\d{4}-(0[1-9]|1[0-2])$/, {
    error: withFix('invoiceId must be `inv-<team>-<YYYY-MM>`', 'copy it from `gpunet invoices list`, e.g. `inv-team-ml-2025-06`'),
  })
  .describe('Invoice id: `inv-<team>-<YYYY-MM>`, e.g. `inv-team-ml-2025-06`.');

export const InvoiceLine = z
  .object({
    lineId: z.string().min(1).describe('`<attemptId>@<nodeId>`: one line per attempt per node (a multi-node attempt has one line per node).'),
    jobId: JobId,
    attemptId: AttemptId,
    run: z.int().min(1).optional().describe('Run number of the attempt (1 for the first), when the attempt id says it.'),
    nodeId: NodeId,
    gpuModel: GpuModel,
    gpus: GpuCount,
    gpuIndices: GpuIndices,
    outcome: JobOutcome,
    heldFrom: Timestamp.describe('ComputeHeld.heldAt (agent clock).'),
    finishedAt: Timestamp.describe('JobFinished.finishedAt (same agent clock).'),
    billableMs: DurationMs.describe('finishedAt − heldFrom, never negative; 0 when waived.'),
    rateMicrosPerGpuHour: Micros,
    priceListVersion: z.int().min(1).describe('Version of the price list the rate came from (0 never: a what-if list is version ≥ 1 too).'),
    currency: Currency,
    amountMicros: Micros.describe('gpus × billableMs × rate / 3,600,000 rounded once half up, raised to the minimum charge if any; 0 when waived.'),
    minimumApplied: z.boolean().describe('True when the minimum charge replaced the rounded amount.'),
    waivedReason: z.enum(WAIVER_REASONS).optional().describe('Why the line is not charged (`platform_fault`: the node was lost).'),
    lateFrom: InvoiceMonth.optional().describe('The month the attempt finished in, when that month\'s invoice was already finalized before the line was complete.'),
    completedAtPosition: DecimalString.describe('Store position of the later of ComputeHeld and JobFinished: when the line became complete.'),
    eventIds: z.array(EventId).min(2).describe('Contributing events: ComputeHeld, JobFinished, then the price list, the NodeLost and the JobSubmitted when used.'),
  })
  .describe('One attempt on one node, as billed.');
export type InvoiceLine = z.output<typeof InvoiceLine>;

export const Posting = z
  .object({
    account: z.string().min(1).describe('`receivable:<team>` or `revenue:compute`.'),
    side: z.enum(['debit', 'credit']).describe('`debit` or `credit`.'),
    currency: Currency,
    amountMicros: Micros,
    ref: z.string().min(1).describe('The invoice or credit note it posts.'),
  })
  .describe('One side of a double-entry posting.');
export type Posting = z.output<typeof Posting>;

export const InvoiceTotal = z.object({
  currency: Currency,
  amountMicros: Micros.describe('Sum of the lines\' amounts (never rounded again).'),
  billableMs: DurationMs.describe('Sum of the lines\' billable ms.'),
  lines: z.int().min(0).describe('Number of lines in this currency.'),
});
export type InvoiceTotal = z.output<typeof InvoiceTotal>;

export const InvoiceBody = z
  .object({
    invoiceId: InvoiceId,
    team: TeamId,
    month: InvoiceMonth,
    periodStart: Timestamp.describe('First instant of the month (UTC).'),
    periodEnd: Timestamp.describe('First instant of the next month (UTC), exclusive.'),
    derivedAtPosition: DecimalString.describe('Store position the invoice was derived at: replaying the store up to it gives the same invoice.'),
    rounding: z.string().min(1).describe(`The rounding rule, \`${ROUNDING_RULE_PER_LINE_HALF_UP}\`.`),
    lines: z.array(InvoiceLine).describe('Ordered by finishedAt, heldFrom, jobId, attemptId, nodeId.'),
    totals: z.array(InvoiceTotal).describe('Per currency, in the order currencies first appear.'),
    postings: z.array(Posting).describe('Debit receivable:<team>, credit revenue:compute, per currency.'),
  })
  .describe('An invoice as derived from the store at a position.');
export type InvoiceBody = z.output<typeof InvoiceBody>;

export const InvoiceFinalized = z.object({
  invoice: InvoiceBody,
  finalizedAt: Timestamp.describe('When the ledger finalized it (its clock), at or after the month end plus the late-event cutoff.'),
  cutoffMs: DurationMs.describe('The late-event cutoff in force.'),
});
export type InvoiceFinalized = z.output<typeof InvoiceFinalized>;

export const CreditLine = z.object({
  lineId: z.string().min(1).describe('The invoice line credited.'),
  jobId: JobId,
  attemptId: AttemptId,
  nodeId: NodeId,
  currency: Currency,
  amountMicros: Micros.describe('Amount credited (positive).'),
  reason: z.enum(WAIVER_REASONS).describe('Why: `platform_fault` (the node was declared lost after the invoice was finalized).'),
  eventIds: z.array(EventId).describe('Events that call for the correction.'),
});
export type CreditLine = z.output<typeof CreditLine>;

export const CreditNoteIssued = z.object({
  creditNoteId: z.string().min(1).describe('`<invoiceId>-cn<n>`, n from 1.'),
  invoiceId: InvoiceId,
  team: TeamId,
  derivedAtPosition: DecimalString.describe('Store position the correction was derived at.'),
  issuedAt: Timestamp,
  lines: z.array(CreditLine).min(1).describe('The lines credited, each referencing an invoice line.'),
  totals: z.array(z.object({ currency: Currency, amountMicros: Micros })).describe('Credited per currency.'),
  postings: z.array(Posting).describe('Debit revenue:compute, credit receivable:<team>, per currency.'),
});
export type CreditNoteIssued = z.output<typeof CreditNoteIssued>;

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
  defineEvent({
    name: 'InvoiceFinalized',
    version: 1,
    producers: ['ledger'],
    description: 'A team\'s invoice for a month, frozen after the late-event cutoff: its lines, totals, postings and the store position it was derived at. Never changed.',
    schema: InvoiceFinalized,
  }),
  defineEvent({
    name: 'CreditNoteIssued',
    version: 1,
    producers: ['ledger'],
    description: 'A correction to a finalized invoice: credited amounts referencing its lines, with double-entry postings.',
    schema: CreditNoteIssued,
  }),
] as const;
