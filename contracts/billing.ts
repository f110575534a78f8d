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
] as const;
