/**
 * Billing messages: publishing and listing price lists, invoices and the ledger's rebuild.
 *
 * People reach them through intake (HTTP, and `gpunet.cmd.PublishPriceList` on NATS), which
 * checks the API key's role and scopes invoices to the key's team; the ledger answers the
 * internal ones (`RecordPriceList`, `RebuildLedger`, `gpunet.qry.ledger.*`), which trust the
 * NATS account and name the team in the payload.
 */
import { z } from 'zod';
import { CreditNoteIssued, InvoiceBody, InvoiceId, InvoiceMonth, PriceListPublished } from './events/ledger.js';
import { fieldError, strictObject } from './issues.js';
import { CallerPrincipal } from './principal.js';
import { defineCommand, defineQuery } from './message.js';
import { Currency, DecimalString, DurationMs, GpuModel, Micros, Sha256, TeamId, Timestamp } from './primitives.js';

// ── price lists ───────────────────────────────────────────────────────────────────────────

const priceListShape = {
  currency: Currency,
  effectiveFrom: Timestamp.optional().describe(
    'From when the list applies (inclusive), not before the time it is recorded: a price list never changes the past. Default: the time it is recorded.',
  ),
  ratesMicrosPerGpuHour: z
    .record(GpuModel, Micros)
    .describe('Price per GPU per hour in micro-units by GPU model, e.g. `{ "A100-80GB": 2500000 }` for 2.50 per GPU-hour.'),
  defaultRateMicrosPerGpuHour: Micros.optional().describe('Price for models the list does not name; absent: such models cannot be priced.'),
  minimumChargeMicros: Micros.optional().describe('Least amount of a charged attempt line; absent: no minimum.'),
};

export const PublishPriceList = strictObject(priceListShape, 'PublishPriceList').describe(
  'A new price list version (the ledger numbers it). Needs an API key with role `billing`.',
);
export type PublishPriceList = z.output<typeof PublishPriceList>;

export const RecordPriceList = strictObject(
  { ...priceListShape, principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key (role `billing`); recorded as `publishedBy` `<team>/<keyId>`. The subject accepts only intake.') },
  'RecordPriceList',
).describe('Internal (intake → ledger): record a new price list version.');
export type RecordPriceList = z.output<typeof RecordPriceList>;

export const ListPriceLists = strictObject({}, 'ListPriceLists').describe('Every price list version.');
export type ListPriceLists = z.output<typeof ListPriceLists>;

export const ListPriceListsReply = z
  .object({
    versions: z.array(PriceListPublished).describe('Every version, ascending.'),
    current: z.int().min(1).optional().describe('The version in force now, if any.'),
    at: Timestamp.describe('When this answer was made.'),
  })
  .describe('The price lists.');
export type ListPriceListsReply = z.output<typeof ListPriceListsReply>;

// ── invoices ──────────────────────────────────────────────────────────────────────────────

export const INVOICE_STATUSES = ['draft', 'finalized'] as const;
export const InvoiceStatus = z
  .enum(INVOICE_STATUSES, { error: fieldError('status', 'must be `draft` or `finalized`', 'write e.g. `status: draft`') })
  .describe('`draft`: the month is open or inside its late-event cutoff, it may still change; `finalized`: frozen, corrected only by credit notes.');
export type InvoiceStatus = z.output<typeof InvoiceStatus>;

const Amount = z.object({ currency: Currency, amountMicros: Micros });

export const InvoiceSummary = z
  .object({
    invoiceId: InvoiceId,
    team: TeamId,
    month: InvoiceMonth,
    status: InvoiceStatus,
    lines: z.int().min(0).describe('Number of lines.'),
    totals: z.array(Amount.extend({ billableMs: DurationMs })).describe('Per currency.'),
    credited: z.array(Amount).describe('Credit notes per currency (finalized invoices only).'),
    derivedAtPosition: DecimalString,
    finalizesAt: Timestamp.describe('Month end plus the late-event cutoff.'),
    finalizedAt: Timestamp.optional(),
  })
  .describe('One invoice in a list.');
export type InvoiceSummary = z.output<typeof InvoiceSummary>;

export const InvoiceView = InvoiceBody.extend({
  status: InvoiceStatus,
  finalizesAt: Timestamp.describe('Month end plus the late-event cutoff: a draft becomes final then.'),
  finalizedAt: Timestamp.optional(),
  creditNotes: z.array(CreditNoteIssued).describe('Corrections, oldest first.'),
  net: z.array(Amount).describe('Totals minus credit notes, per currency.'),
}).describe('An invoice with its status and credit notes.');
export type InvoiceView = z.output<typeof InvoiceView>;

export const ListInvoices = strictObject(
  {
    principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key: the invoices of `principal.team`, or of every team with `allTeams` (the operator). The subject accepts only intake.'),
    month: InvoiceMonth.optional().describe('Only this month.'),
    status: InvoiceStatus.optional().describe('Only drafts or only finalized invoices.'),
  },
  'ListInvoices',
).describe('Invoices, newest month first.');
export type ListInvoices = z.output<typeof ListInvoices>;

export const ListInvoicesReply = z
  .object({
    invoices: z.array(InvoiceSummary).describe('Newest month first, then by team.'),
    asOfPosition: DecimalString.describe('Store position the answer was derived at.'),
  })
  .describe('The invoices.');
export type ListInvoicesReply = z.output<typeof ListInvoicesReply>;

export const GetInvoice = strictObject(
  {
    invoiceId: InvoiceId,
    principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key: another team\'s invoice is not found unless `allTeams`. The subject accepts only intake.'),
  },
  'GetInvoice',
).describe('One invoice with its lines and credit notes.');
export type GetInvoice = z.output<typeof GetInvoice>;

// ── replay, what-if and dispute bundle ────────────────────────────────────────────────────

export const WhatIfPriceList = strictObject(
  {
    currency: Currency,
    effectiveFrom: Timestamp.optional().describe('From when this list applies in the what-if (inclusive). Default: since ever, so one list prices every line.'),
    ratesMicrosPerGpuHour: priceListShape.ratesMicrosPerGpuHour,
    defaultRateMicrosPerGpuHour: priceListShape.defaultRateMicrosPerGpuHour,
    minimumChargeMicros: priceListShape.minimumChargeMicros,
  },
  'prices',
).describe('A what-if price list: priced the same way as a published one, never recorded.');
export type WhatIfPriceList = z.output<typeof WhatIfPriceList>;

/** What the HTTP body of a replay may hold: nothing, or a what-if price list. */
export const ReplayInvoiceBody = strictObject(
  {
    prices: WhatIfPriceList.optional().describe('A what-if price list: the invoice is re-derived with these rates instead of the published ones (one list for the whole month unless `effectiveFrom` says otherwise). Nothing is written.'),
  },
  'replay request',
).describe('Replay an invoice from the store; with `prices`, a what-if.');
export type ReplayInvoiceBody = z.output<typeof ReplayInvoiceBody>;

export const ReplayInvoice = strictObject(
  {
    invoiceId: InvoiceId,
    principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key: another team\'s invoice is not found unless `allTeams`. The subject accepts only intake.'),
    prices: ReplayInvoiceBody.shape.prices,
  },
  'ReplayInvoice',
).describe('Re-derive an invoice from the event store as of the position recorded on it and compare it line by line with the recorded one; with `prices`, a what-if.');
export type ReplayInvoice = z.output<typeof ReplayInvoice>;

export const REPLAY_LINE_STATUSES = ['same', 'changed', 'missing', 'extra'] as const;

export const ReplayedLine = z
  .object({
    lineId: z.string().min(1).describe('`<attemptId>@<nodeId>`.'),
    status: z.enum(REPLAY_LINE_STATUSES).describe('`same`: identical field by field; `changed`: some field differs (`changes`); `missing`: recorded but not re-derived; `extra`: re-derived but not recorded.'),
    identical: z.boolean().describe('`status` is `same`.'),
    jobId: z.string().min(1).describe('The job billed.'),
    attemptId: z.string().min(1).describe('Its run attempt.'),
    nodeId: z.string().min(1).describe('The node the attempt held GPUs on.'),
    gpuModel: GpuModel,
    gpus: z.int().min(1).describe('GPUs held.'),
    billableMs: DurationMs.describe('Of the replayed line (the recorded one when it is missing now).'),
    currency: Currency,
    recordedAmountMicros: Micros.optional().describe('Absent for an `extra` line.'),
    replayedAmountMicros: Micros.optional().describe('Absent for a `missing` line.'),
    recordedRateMicrosPerGpuHour: Micros.optional(),
    replayedRateMicrosPerGpuHour: Micros.optional(),
    changes: z
      .array(z.object({ field: z.string().min(1).describe('The invoice line field, e.g. `amountMicros`.'), recorded: z.string().describe('JSON text of the recorded value.'), replayed: z.string().describe('JSON text of the replayed value.') }))
      .describe('Each field that differs (changed lines only).'),
    eventIds: z.array(z.string().min(1)).describe('Events the line comes from (the replayed line\'s, or the recorded one\'s when it is missing now).'),
  })
  .describe('One invoice line: recorded against replayed.');
export type ReplayedLine = z.output<typeof ReplayedLine>;

export const ReplayInvoiceReply = z
  .object({
    invoiceId: InvoiceId,
    invoiceStatus: InvoiceStatus.describe('`finalized`: compared with the copy its InvoiceFinalized event recorded; `draft`: with the ledger\'s current draft.'),
    asOfPosition: DecimalString.describe('Store position the recorded invoice was derived at, and the replay with it.'),
    whatIf: z.boolean().describe('True when priced with the request\'s what-if list: nothing is written, and differences are expected.'),
    identical: z.boolean().describe('The replayed invoice is byte-identical to the recorded one (canonical JSON).'),
    lines: z.array(ReplayedLine).describe('Every line, recorded and replayed, in the recorded order, then lines only the replay has.'),
    totals: z
      .array(z.object({ currency: Currency, recordedMicros: Micros, replayedMicros: Micros, identical: z.boolean().describe('Both totals are equal.') }))
      .describe('Per currency, recorded and replayed (0 where one side has none).'),
    otherChanges: z.array(z.string()).describe('Other top-level fields that differ (period, rounding, postings, …).'),
    summary: z.string().describe('One sentence for people: identical, or how many lines differ.'),
  })
  .describe('An invoice replayed from the event store, line by line.');
export type ReplayInvoiceReply = z.output<typeof ReplayInvoiceReply>;

export const GetDisputeBundle = strictObject(
  {
    invoiceId: InvoiceId,
    principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key: another team\'s invoice is not found unless `allTeams`. The subject accepts only intake.'),
  },
  'GetDisputeBundle',
).describe('The dispute bundle of an invoice, as `gpunet dispute-bundle` writes it.');
export type GetDisputeBundle = z.output<typeof GetDisputeBundle>;

/**
 * The bundle itself is checked by `gpunet verify --bundle` byte for byte (hashes over every event's
 * content), so this schema only names its outline and lets every field through unchanged.
 */
export const DisputeBundleReply = z
  .object({
    fileName: z.string().min(1).describe('`<invoiceId>.bundle.json`.'),
    bundle: z
      .looseObject({
        format: z.literal('gpunet.dispute-bundle/1').describe('The bundle format and its version.'),
        createdAt: Timestamp,
        chain: z.enum(['sha256', 'hmac-sha256']).describe('`hmac-sha256`: the checker needs the store\'s chain key (`GPUNET_CHAIN_KEY`).'),
        invoice: z.looseObject({ invoiceId: InvoiceId }).describe('The invoice (InvoiceBody).'),
        invoiceStatus: InvoiceStatus,
        contributingEventIds: z.array(z.string()).describe('Ids of the events the invoice comes from.'),
        streams: z.array(z.looseObject({ streamId: z.string().describe('The stream.'), head: z.looseObject({}).describe('Its last revision, position and hash.'), events: z.array(z.looseObject({})).describe('Every event from revision 0 to the head, with its hash.') })).describe('Whole streams, revision 0 to their head, with every hash.'),
        proves: z.string().describe('What a successful `gpunet verify --bundle` proves, and what it does not.'),
      })
      .describe('A dispute bundle (`gpunet.dispute-bundle/1`): check it offline with `gpunet verify --bundle FILE --public-key KEY`.'),
  })
  .describe('A dispute bundle and the file name to save it under.');
export type DisputeBundleReply = z.output<typeof DisputeBundleReply>;

// ── rebuild ───────────────────────────────────────────────────────────────────────────────

export const RebuildLedger = strictObject({ principal: CallerPrincipal.describe('Who asks, set by intake from the caller\'s key (logged by the ledger). The subject accepts only intake.') }, 'RebuildLedger').describe('Recompute every ledger projection from position 0 and compare the invoices.');
export type RebuildLedger = z.output<typeof RebuildLedger>;

export const RebuildLedgerReply = z
  .object({
    toPosition: DecimalString.describe('Store position both sides were derived at.'),
    events: z.int().min(0).describe('Events folded by the rebuild.'),
    elapsedMs: DurationMs,
    invoices: z
      .array(
        z.object({
          invoiceId: InvoiceId,
          status: InvoiceStatus,
          before: Sha256.describe('sha256 of the canonical JSON of the invoice before the rebuild.'),
          after: Sha256.describe('… and after it.'),
          identical: z.boolean().describe('Both digests exist and are equal.'),
        }),
      )
      .describe('Every invoice (with its credit notes).'),
    finalized: z
      .array(z.object({ invoiceId: InvoiceId, identical: z.boolean().describe('Re-derived at its recorded position, byte-identical to the stored one.') }))
      .describe('Every finalized invoice, re-derived from zero at the position recorded on it.'),
    identical: z.boolean().describe('All of the above identical.'),
  })
  .describe('What the rebuild found.');
export type RebuildLedgerReply = z.output<typeof RebuildLedgerReply>;

export const billingCommands = [
  defineCommand({
    name: 'PublishPriceList',
    version: 1,
    handler: 'intake',
    description: 'Publish a new price list version (API key with role `billing`). Same as `POST /v1/prices`.',
    schema: PublishPriceList,
    replySchema: PriceListPublished,
  }),
  defineCommand({
    name: 'RecordPriceList',
    version: 1,
    handler: 'ledger',
    description: 'Internal (intake → ledger): record a new price list version, numbered by the ledger.',
    schema: RecordPriceList,
    replySchema: PriceListPublished,
  }),
  defineCommand({
    name: 'RebuildLedger',
    version: 1,
    handler: 'ledger',
    description: 'Internal (intake → ledger): recompute every ledger projection from zero and compare the invoices byte for byte.',
    schema: RebuildLedger,
    replySchema: RebuildLedgerReply,
  }),
] as const;

export const billingQueries = [
  defineQuery({
    name: 'ListPriceLists',
    version: 1,
    service: 'ledger',
    description: 'Every price list version and the one in force now.',
    schema: ListPriceLists,
    replySchema: ListPriceListsReply,
  }),
  defineQuery({
    name: 'ListInvoices',
    version: 1,
    service: 'ledger',
    description: 'Invoices of a team (or of every team), drafts and finalized.',
    schema: ListInvoices,
    replySchema: ListInvoicesReply,
  }),
  defineQuery({
    name: 'GetInvoice',
    version: 1,
    service: 'ledger',
    description: 'One invoice: lines, totals, postings, status, credit notes.',
    schema: GetInvoice,
    replySchema: InvoiceView,
  }),
  defineQuery({
    name: 'ReplayInvoice',
    version: 1,
    service: 'ledger',
    description: 'Re-derive an invoice from the event store as of its recorded position and diff it line by line; with `prices`, a what-if that writes nothing.',
    schema: ReplayInvoice,
    replySchema: ReplayInvoiceReply,
  }),
  defineQuery({
    name: 'GetDisputeBundle',
    version: 1,
    service: 'ledger',
    description: 'An invoice\'s dispute bundle (its events in whole hash-chained streams, the signed heads), as `gpunet dispute-bundle` writes it.',
    schema: GetDisputeBundle,
    replySchema: DisputeBundleReply,
  }),
] as const;
