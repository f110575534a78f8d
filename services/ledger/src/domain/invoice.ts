/**
 * Invoices: one per team per calendar month (UTC), derived from the billing fold as of a store
 * position. Pure: prices, the cutoff and the clock are handed in.
 *
 * - A line is one attempt on one node that held compute and finished: ComputeHeld.heldAt →
 *   JobFinished.finishedAt (same agent clock), priced at the rate in force at heldAt, rounded once
 *   (per-line half up), raised to the list's minimum charge if any; 0 when waived (node lost).
 * - It belongs to the month its attempt finished in (UTC). When that month's invoice was already
 *   finalized before the line was complete (a late event after the cutoff), it goes to the month
 *   the store recorded the completing event in (or the first later month not finalized), with
 *   `lateFrom` naming the month it finished in. Finalized invoices never change.
 * - A finalized line that later turns out waived (the node was declared lost after finalization)
 *   is corrected by a credit note referencing the line.
 * - Postings are double-entry per currency: an invoice debits `receivable:<team>` and credits
 *   `revenue:compute`; a credit note does the reverse.
 */
import type { ComputeHeld, CreditLine, CreditNoteIssued, InvoiceBody, InvoiceFinalized, InvoiceLine, InvoiceTotal, JobFinished, Posting } from '#contracts';
import { foldBilling, type AttemptFacts, type BillingState, type FinalizedEntry, type Sourced, type StoredEvent } from './billing.js';
import { epochMs } from './price-list.js';
import { billableMs, lineAmountMicros, rateAt, ROUNDING_RULE, type PriceListVersion } from './pricing.js';
import { monthEnd, monthOf, monthStart, nextMonth } from './months.js';
import { WAIVED_OUTCOMES } from './usage.js';

/** Account a team's invoices debit. */
export function receivableAccount(team: string): string {
  return `receivable:${team}`;
}
/** Account every invoice credits. */
export const REVENUE_ACCOUNT = 'revenue:compute';

/** `inv-<team>-<YYYY-MM>`. */
export function invoiceIdOf(team: string, month: string): string {
  return `inv-${team}-${month}`;
}

/** The team and month of an invoice id (the month is its last 7 characters). */
export function parseInvoiceId(invoiceId: string): { team: string; month: string } {
  return { team: invoiceId.slice(4, -8), month: invoiceId.slice(-7) };
}

/** Options of a derivation. */
export interface InvoiceOptions {
  /**
   * Price list versions to price with instead of those in the store (a what-if replay). Lines
   * then name no price list event among their contributing events.
   */
  prices?: readonly PriceListVersion[];
}

/** A line with what the month assignment needs. */
export interface TeamLine {
  team: string;
  month: string;
  line: InvoiceLine;
}

const RUN = /-a([1-9][0-9]{0,8})$/;

function maxMonth(a: string, b: string): string {
  return a > b ? a : b;
}

/** The team an attempt bills: its agent events' metadata, else intake's JobSubmitted (`submitted`, named on the line). */
function teamOf(state: BillingState, held: Sourced<ComputeHeld>, finished: Sourced<JobFinished>): { team?: string; submitted?: { team: string; eventId: string } } {
  const team = held.team ?? finished.team;
  if (team !== undefined) return { team };
  const submitted = state.jobTeams.get(held.data.jobId);
  return submitted ? { team: submitted.team, submitted } : {};
}

/**
 * The line of an attempt on a node as of the state, with its team and month; undefined while it
 * lacks ComputeHeld or JobFinished, or when no team can be told (no team in the agent's metadata
 * and no JobSubmitted).
 */
export function lineOf(state: BillingState, facts: AttemptFacts, options: InvoiceOptions = {}): TeamLine | undefined {
  const { held, finished } = facts;
  if (!held || !finished) return undefined;
  const { team, submitted } = teamOf(state, held, finished);
  if (team === undefined) return undefined;

  const heldMs = epochMs(held.data.heldAt, 'heldAt');
  const finishedMs = epochMs(finished.data.finishedAt, 'finishedAt');
  const versions = options.prices ?? [...state.prices.values()];
  const rate = rateAt(versions, held.data.gpuModel, heldMs);
  const waivedReason = WAIVED_OUTCOMES[finished.data.outcome] ?? (facts.lost ? WAIVED_OUTCOMES.node_lost : undefined);
  const ms = waivedReason ? 0 : billableMs(heldMs, finishedMs);
  const amount = waivedReason ? { amountMicros: 0, minimumApplied: false } : lineAmountMicros(held.data.gpus, ms, rate.rateMicrosPerGpuHour, rate.minimumChargeMicros);

  const completing = held.position > finished.position ? held : finished;
  const eventIds = [held.eventId, finished.eventId];
  if (!options.prices) eventIds.push(state.prices.get(rate.priceListVersion)!.eventId);
  if (waivedReason && !WAIVED_OUTCOMES[finished.data.outcome] && facts.lost) eventIds.push(facts.lost.eventId);
  if (submitted) eventIds.push(submitted.eventId);

  const line: InvoiceLine = {
    lineId: facts.key,
    jobId: held.data.jobId,
    attemptId: held.data.attemptId,
    nodeId: held.data.nodeId,
    gpuModel: held.data.gpuModel,
    gpus: held.data.gpus,
    gpuIndices: [...held.data.gpuIndices],
    outcome: finished.data.outcome,
    heldFrom: held.data.heldAt,
    finishedAt: finished.data.finishedAt,
    billableMs: ms,
    rateMicrosPerGpuHour: rate.rateMicrosPerGpuHour,
    priceListVersion: rate.priceListVersion,
    currency: rate.currency,
    amountMicros: amount.amountMicros,
    minimumApplied: amount.minimumApplied,
    completedAtPosition: completing.position.toString(),
    eventIds,
  };
  const run = RUN.exec(held.data.attemptId);
  if (run) line.run = Number(run[1]);
  if (waivedReason) line.waivedReason = waivedReason;

  // The month: the one it finished in, unless that invoice was finalized before the line was complete.
  let month = monthOf(finishedMs);
  const finalized = state.finalized.get(invoiceIdOf(team, month));
  if (finalized && completing.position > BigInt(finalized.data.invoice.derivedAtPosition)) {
    line.lateFrom = month;
    month = maxMonth(nextMonth(month), monthOf(epochMs(completing.recordedAt, 'recordedAt')));
    for (;;) {
      const later = state.finalized.get(invoiceIdOf(team, month));
      if (!later || completing.position <= BigInt(later.data.invoice.derivedAtPosition)) break;
      month = nextMonth(month);
    }
  }
  return { team, month, line };
}

/** Orders lines by finishedAt, heldFrom, jobId, attemptId, nodeId: a total order, so a derivation is byte-stable. */
export function compareLines(a: InvoiceLine, b: InvoiceLine): number {
  const byTime = Date.parse(a.finishedAt) - Date.parse(b.finishedAt) || Date.parse(a.heldFrom) - Date.parse(b.heldFrom);
  if (byTime !== 0) return byTime;
  for (const k of ['jobId', 'attemptId', 'nodeId'] as const) {
    if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  }
  return 0;
}

/** A sum left the safe integer range. */
export class InvoiceOverflowError extends RangeError {
  constructor(what: string) {
    super(`${what} exceeds the safe integer range of micro-units; split the period`);
    this.name = 'InvoiceOverflowError';
  }
}

function safe(n: bigint, what: string): number {
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvoiceOverflowError(what);
  return Number(n);
}

/** Totals per currency, in the order currencies first appear. */
export function totalsOf(lines: readonly InvoiceLine[]): InvoiceTotal[] {
  const sums = new Map<string, { amount: bigint; ms: bigint; lines: number }>();
  for (const l of lines) {
    const s = sums.get(l.currency) ?? { amount: 0n, ms: 0n, lines: 0 };
    s.amount += BigInt(l.amountMicros);
    s.ms += BigInt(l.billableMs);
    s.lines += 1;
    sums.set(l.currency, s);
  }
  return [...sums].map(([currency, s]) => ({ currency, amountMicros: safe(s.amount, `the ${currency} total`), billableMs: safe(s.ms, 'the billable time'), lines: s.lines }));
}

/** Both sides of a posting of `amount` from `debit` to `credit`, per currency; nothing for 0. */
function post(totals: readonly { currency: string; amountMicros: number }[], debit: string, credit: string, ref: string): Posting[] {
  return totals
    .filter((t) => t.amountMicros > 0)
    .flatMap((t) => [
      { account: debit, side: 'debit' as const, currency: t.currency, amountMicros: t.amountMicros, ref },
      { account: credit, side: 'credit' as const, currency: t.currency, amountMicros: t.amountMicros, ref },
    ]);
}

/** Sorts lines by {@link compareLines}, parsing each time once (a month of a big team has 10⁵ lines). */
function sortLines(lines: InvoiceLine[]): void {
  const keyed = lines.map((line) => ({ line, finished: Date.parse(line.finishedAt), held: Date.parse(line.heldFrom) }));
  keyed.sort((a, b) => {
    const byTime = a.finished - b.finished || a.held - b.held;
    if (byTime !== 0) return byTime;
    for (const k of ['jobId', 'attemptId', 'nodeId'] as const) {
      if (a.line[k] !== b.line[k]) return a.line[k] < b.line[k] ? -1 : 1;
    }
    return 0;
  });
  for (let i = 0; i < keyed.length; i++) lines[i] = keyed[i]!.line;
}

function body(team: string, month: string, lines: InvoiceLine[], position: bigint): InvoiceBody {
  sortLines(lines);
  const invoiceId = invoiceIdOf(team, month);
  const totals = totalsOf(lines);
  return {
    invoiceId,
    team,
    month,
    periodStart: new Date(monthStart(month)).toISOString(),
    periodEnd: new Date(monthEnd(month)).toISOString(),
    derivedAtPosition: position.toString(),
    rounding: ROUNDING_RULE,
    lines,
    totals,
    postings: post(totals, receivableAccount(team), REVENUE_ACCOUNT, invoiceId),
  };
}

/**
 * The invoice of a team for a month, derived afresh from the state (never the stored copy of a
 * finalized one: this is what a replay compares it with). `derivedAtPosition` is the state's.
 */
export function invoiceOf(state: BillingState, team: string, month: string, options: InvoiceOptions = {}): InvoiceBody {
  const lines: InvoiceLine[] = [];
  for (const facts of state.attempts.values()) {
    const found = lineOf(state, facts, options);
    if (found && found.team === team && found.month === month) lines.push(found.line);
  }
  return body(team, month, lines, state.position);
}

/** Every invoice that has at least one line, derived afresh, by invoice id in id order. */
export function allInvoices(state: BillingState, options: InvoiceOptions = {}): Map<string, InvoiceBody> {
  return invoicesOf(state, state.attempts.values(), options);
}

/** The invoices the lines of `attempts` fall on, by invoice id in id order (whole only when every line of each is among them). */
function invoicesOf(state: BillingState, attempts: Iterable<AttemptFacts>, options: InvoiceOptions = {}): Map<string, InvoiceBody> {
  const grouped = new Map<string, { team: string; month: string; lines: InvoiceLine[] }>();
  for (const facts of attempts) {
    const found = lineOf(state, facts, options);
    if (!found) continue;
    const id = invoiceIdOf(found.team, found.month);
    const group = grouped.get(id) ?? { team: found.team, month: found.month, lines: [] };
    group.lines.push(found.line);
    grouped.set(id, group);
  }
  const ids = [...grouped.keys()].sort();
  return new Map(ids.map((id) => [id, body(grouped.get(id)!.team, grouped.get(id)!.month, grouped.get(id)!.lines, state.position)]));
}

/**
 * THE derivation a replay uses: a team's invoice for a month from stored events (in position
 * order) and the price lists among them, as of a store position. `prices` replaces the stored
 * price lists (what-if). Deterministic: the same events and position give the same invoice, byte
 * for byte under {@link canonicalJson}.
 */
export function deriveInvoice(events: Iterable<StoredEvent>, query: { team: string; month: string; asOf?: bigint } & InvoiceOptions): InvoiceBody {
  const state = foldBilling(events, query.asOf);
  if (query.asOf !== undefined) state.position = query.asOf;
  return invoiceOf(state, query.team, query.month, query.prices ? { prices: query.prices } : {});
}

// ── finalization and credit notes ──────────────────────────────────────────────────────────

/** When an invoice of a month becomes final: its end plus the late-event cutoff (epoch ms). */
export function finalizesAt(month: string, cutoffMs: number): number {
  return monthEnd(month) + cutoffMs;
}

/** Sum credited so far per line id of an invoice. */
function creditedOf(state: BillingState, invoiceId: string): Map<string, number> {
  const credited = new Map<string, number>();
  for (const note of state.creditNotes.get(invoiceId) ?? []) {
    for (const l of note.data.lines) credited.set(l.lineId, (credited.get(l.lineId) ?? 0) + l.amountMicros);
  }
  return credited;
}

/**
 * The corrections a finalized invoice needs as of the state: lines now waived that were charged.
 * In a settling state its lines' attempts are gone, and the losses it keeps stand for them: a line
 * charged and then lost is waived as `node_lost` (a line that finished with a waived outcome was
 * charged nothing), exactly what deriving it again from its facts would say.
 */
export function correctionsOf(state: BillingState, finalized: FinalizedEntry): CreditLine[] {
  const credited = creditedOf(state, finalized.data.invoice.invoiceId);
  const out: CreditLine[] = [];
  const owe = (line: InvoiceLine, now: { amountMicros: number; reason: NonNullable<InvoiceLine['waivedReason']>; eventIds: string[] }) => {
    const owed = line.amountMicros - (credited.get(line.lineId) ?? 0) - now.amountMicros;
    if (owed <= 0) return;
    out.push({ lineId: line.lineId, jobId: line.jobId, attemptId: line.attemptId, nodeId: line.nodeId, currency: line.currency, amountMicros: owed, reason: now.reason, eventIds: now.eventIds });
  };
  if (finalized.losses) {
    const losses = [...finalized.losses].map(([lineId, loss]) => {
      if (loss.line === undefined || loss.index === undefined) throw new Error(`the line ${lineId} of ${finalized.data.invoice.invoiceId} was lost and is not read from its InvoiceFinalized event yet`);
      return { line: loss.line, index: loss.index, eventId: loss.eventId };
    });
    // In the invoice's order of lines, as a derivation from the facts goes.
    for (const { line, eventId } of losses.sort((a, b) => a.index - b.index)) {
      if (line.amountMicros === 0) continue;
      owe(line, { amountMicros: 0, reason: WAIVED_OUTCOMES[line.outcome] ?? WAIVED_OUTCOMES.node_lost!, eventIds: [eventId] });
    }
    return out;
  }
  for (const line of finalized.data.invoice.lines) {
    const facts = state.attempts.get(line.lineId);
    // Facts are first-wins and prices never change the past: only a NodeLost can waive a line
    // that was charged, so a line without one needs no look (this runs on every pass).
    if (!facts?.lost || line.amountMicros === 0) continue;
    const now = lineOf(state, facts);
    if (!now?.line.waivedReason) continue;
    owe(line, { amountMicros: now.line.amountMicros, reason: now.line.waivedReason, eventIds: facts.lost ? [facts.lost.eventId] : now.line.eventIds.slice(0, 2) });
  }
  return out;
}

/**
 * The attempts whose line may fall on an invoice due for finalization at `now`: every attempt but
 * those whose line is on a finalized invoice or on a month not yet past its cutoff, told apart
 * without deriving the line. A line is on the month it finished in, unless that month's invoice
 * was finalized before the line was complete; then on a later month (see {@link lineOf}). So a
 * line complete by its finished month's finalization is on that finalized invoice, and a line
 * whose finished month is not past its cutoff is on no month that is (later months end later).
 * Every line of an invoice due is therefore among these, and {@link decideInvoices} derives its
 * invoices from them alone: the same bytes as from every attempt, at a cost that does not grow
 * with the settled history (a million attempts took seconds to derive on every pass).
 */
function* unsettled(state: BillingState, now: number, cutoffMs: number): Generator<AttemptFacts> {
  for (const facts of state.attempts.values()) {
    const { held, finished } = facts;
    if (!held || !finished) continue;
    const { team } = teamOf(state, held, finished);
    if (team === undefined) continue;
    const month = monthOf(epochMs(finished.data.finishedAt, 'finishedAt'));
    if (now < finalizesAt(month, cutoffMs)) continue;
    const finalized = state.finalized.get(invoiceIdOf(team, month));
    const completing = held.position > finished.position ? held.position : finished.position;
    if (finalized && completing <= BigInt(finalized.data.invoice.derivedAtPosition)) continue;
    yield facts;
  }
}

/** What the ledger should record now: invoices past their cutoff, and credit notes for finalized invoices. */
export interface InvoiceDecisions {
  finalize: InvoiceFinalized[];
  credit: CreditNoteIssued[];
}

/**
 * Decides, as of the state and the time `now` (epoch ms), which invoices to finalize (every
 * invoice with lines whose month ended at least `cutoffMs` ago and that is not finalized) and
 * which credit notes to issue. Recording them and folding them back makes a second call decide
 * nothing, so the ledger may call it on every tick and after every restart.
 */
export function decideInvoices(state: BillingState, now: number, cutoffMs: number): InvoiceDecisions {
  const at = new Date(now).toISOString();
  const finalize: InvoiceFinalized[] = [];
  for (const [id, invoice] of invoicesOf(state, unsettled(state, now, cutoffMs))) {
    if (state.finalized.has(id) || now < finalizesAt(invoice.month, cutoffMs)) continue;
    finalize.push({ invoice, finalizedAt: at, cutoffMs });
  }
  const credit: CreditNoteIssued[] = [];
  for (const [invoiceId, f] of [...state.finalized].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const lines = correctionsOf(state, f);
    if (lines.length === 0) continue;
    const sums = new Map<string, bigint>();
    for (const l of lines) sums.set(l.currency, (sums.get(l.currency) ?? 0n) + BigInt(l.amountMicros));
    const totals = [...sums].map(([currency, s]) => ({ currency, amountMicros: safe(s, `the ${currency} credit`) }));
    const creditNoteId = `${invoiceId}-cn${(state.creditNotes.get(invoiceId)?.length ?? 0) + 1}`;
    credit.push({
      creditNoteId,
      invoiceId,
      team: f.data.invoice.team,
      derivedAtPosition: state.position.toString(),
      issuedAt: at,
      lines,
      totals,
      postings: post(totals, REVENUE_ACCOUNT, receivableAccount(f.data.invoice.team), creditNoteId),
    });
  }
  return { finalize, credit };
}

// ── canonical form ─────────────────────────────────────────────────────────────────────────

/**
 * JSON with object keys sorted at every level and no spaces: the byte form in which two invoices
 * are compared (a store may reorder keys, e.g. PostgreSQL jsonb).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

// ── views ──────────────────────────────────────────────────────────────────────────────────

/** Status, credit notes and net totals of an invoice, as the queries answer it. */
export interface InvoiceViewOf extends InvoiceBody {
  status: 'draft' | 'finalized';
  finalizesAt: string;
  finalizedAt?: string;
  creditNotes: CreditNoteIssued[];
  net: { currency: string; amountMicros: number }[];
}

function creditedTotals(notes: readonly CreditNoteIssued[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const n of notes) for (const t of n.totals) sums.set(t.currency, (sums.get(t.currency) ?? 0n) + BigInt(t.amountMicros));
  return sums;
}

/**
 * The stored copy of a finalized invoice: the state's, or in a settling state (which keeps no
 * lines of it) `stored`, read from its InvoiceFinalized event at `entry.position`.
 */
export function storedCopyOf(entry: FinalizedEntry, stored?: InvoiceBody): InvoiceBody {
  if (!entry.losses) return entry.data.invoice;
  if (!stored) throw new Error(`the stored copy of ${entry.data.invoice.invoiceId} is read from its InvoiceFinalized event at position ${entry.position}; none was handed in`);
  if (stored.invoiceId !== entry.data.invoice.invoiceId || stored.lines.length !== entry.lines) throw new Error(`the copy handed in for ${entry.data.invoice.invoiceId} is not the one finalized at position ${entry.position}`);
  return stored;
}

/**
 * An invoice as of the state: the stored copy when finalized (never re-derived: it does not
 * change), else the draft derived now (empty when the team has no lines that month). `drafts`
 * (from {@link allInvoices} of the same state) saves deriving it again. A settling state keeps no
 * finalized lines: `stored` is the copy its InvoiceFinalized event holds ({@link storedCopyOf}).
 */
export function invoiceView(state: BillingState, invoiceId: string, cutoffMs: number, drafts?: ReadonlyMap<string, InvoiceBody>, stored?: InvoiceBody): InvoiceViewOf {
  const { team, month } = parseInvoiceId(invoiceId);
  const finalized = state.finalized.get(invoiceId);
  const notes = (state.creditNotes.get(invoiceId) ?? []).map((n) => n.data);
  const invoice = finalized ? storedCopyOf(finalized, stored) : (drafts?.get(invoiceId) ?? invoiceOf(state, team, month));
  const credited = creditedTotals(notes);
  const view: InvoiceViewOf = {
    ...invoice,
    status: finalized ? 'finalized' : 'draft',
    finalizesAt: new Date(finalizesAt(month, cutoffMs)).toISOString(),
    creditNotes: notes,
    net: invoice.totals.map((t) => ({ currency: t.currency, amountMicros: Number(BigInt(t.amountMicros) - (credited.get(t.currency) ?? 0n)) })),
  };
  if (finalized) view.finalizedAt = finalized.data.finalizedAt;
  return view;
}

/** One invoice in a list. */
export interface InvoiceSummaryOf {
  invoiceId: string;
  team: string;
  month: string;
  status: 'draft' | 'finalized';
  lines: number;
  totals: { currency: string; amountMicros: number; billableMs: number }[];
  credited: { currency: string; amountMicros: number }[];
  derivedAtPosition: string;
  finalizesAt: string;
  finalizedAt?: string;
}

/**
 * Every invoice with lines (drafts derived now, finalized ones as stored), newest month first,
 * then by team; filtered by team, month and status when given.
 */
export function invoiceSummaries(state: BillingState, filter: { team?: string; month?: string; status?: 'draft' | 'finalized' }, cutoffMs: number): InvoiceSummaryOf[] {
  const drafts = allInvoices(state);
  const ids = new Set([...drafts.keys(), ...state.finalized.keys()]);
  const out: InvoiceSummaryOf[] = [];
  for (const id of ids) {
    const finalized = state.finalized.get(id);
    const invoice = finalized ? finalized.data.invoice : drafts.get(id)!;
    if (filter.team !== undefined && invoice.team !== filter.team) continue;
    if (filter.month !== undefined && invoice.month !== filter.month) continue;
    const status = finalized ? 'finalized' : 'draft';
    if (filter.status !== undefined && filter.status !== status) continue;
    const credited = [...creditedTotals((state.creditNotes.get(id) ?? []).map((n) => n.data))].map(([currency, s]) => ({ currency, amountMicros: Number(s) }));
    const summary: InvoiceSummaryOf = {
      invoiceId: id,
      team: invoice.team,
      month: invoice.month,
      status,
      lines: finalized ? finalized.lines : invoice.lines.length,
      totals: invoice.totals.map((t) => ({ currency: t.currency, amountMicros: t.amountMicros, billableMs: t.billableMs })),
      credited,
      derivedAtPosition: invoice.derivedAtPosition,
      finalizesAt: new Date(finalizesAt(invoice.month, cutoffMs)).toISOString(),
    };
    if (finalized) summary.finalizedAt = finalized.data.finalizedAt;
    out.push(summary);
  }
  return out.sort((a, b) => (a.month !== b.month ? (a.month < b.month ? 1 : -1) : a.team < b.team ? -1 : a.team > b.team ? 1 : 0));
}

/**
 * Every invoice with lines as {@link invoiceView} answers it, by id in id order, from one pass over
 * the state; a settling state needs `stored` for each finalized one (the copies of its events).
 */
export function allInvoiceViews(state: BillingState, cutoffMs: number, stored?: ReadonlyMap<string, InvoiceBody>): Map<string, InvoiceViewOf> {
  const drafts = allInvoices(state);
  const ids = [...new Set([...drafts.keys(), ...state.finalized.keys()])].sort();
  return new Map(ids.map((id) => [id, invoiceView(state, id, cutoffMs, drafts, stored?.get(id))]));
}
