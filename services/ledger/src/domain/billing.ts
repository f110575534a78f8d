/**
 * The billing fold: the facts invoices are derived from, folded from stored events in position
 * order. Pure; the state is folded in place (one owner, and a million-event replay must not copy
 * maps per event).
 *
 * Usage is keyed by (attemptId, nodeId), never by attemptId alone: a multi-node attempt has one
 * ComputeHeld … JobFinished per node, each in `execution-<nodeId>-attempt-<attemptId>`, and each
 * node's hold is a line of its own.
 *
 * Duplicates: the first ComputeHeld and the first JobFinished of an (attempt, node) win, as do the
 * first PriceListPublished of a version, the first InvoiceFinalized of an invoice and the first
 * credit note of an id. An event at or below the position already folded is ignored, so folding
 * again after a restart from an older checkpoint changes nothing.
 *
 * Settling (decision 0046): a state made with `settle` (the ledger's own) lets an attempt go once
 * its line is on a finalized invoice. The invoice's InvoiceFinalized event holds the line, and a
 * finalized line never changes but by a credit note, which only a NodeLost of its node can call
 * for. So the state keeps of it only its line id (later ComputeHeld and JobFinished of it are
 * duplicates, ignored as before) and, once a NodeLost names it, that NodeLost and the line as
 * the invoice recorded it. A finalized invoice keeps its header, without its lines: its stored
 * copy is read from the store when asked for (`position`). A job whose attempts all settled
 * leaves `jobTeams` too. Should an attempt of it come later with no team in its agent's metadata,
 * the job is named in `teamless` and its JobSubmitted is read again from its intake stream
 * ({@link readJobTeam}), which holds the one JobSubmitted of the job (intake appends it to a new
 * stream only). Without `settle` (replays, what-ifs, tests of the derivation) every attempt, every
 * job's team and every stored copy stays, as it always did.
 *
 * In the table (`inTable`, the ledger's own since decision 0053) a state settles too, but holds
 * only the lines and job teams of the page being folded: the rest are rows of the store's
 * database (`billing-rows.ts`). A job's team is a row kept for ever there, so such a state neither
 * counts a job's open attempts nor names jobs in `teamless`.
 */
import type { ComputeHeld, CreditNoteIssued, InvoiceFinalized, InvoiceLine, JobFinished, JobSubmitted, NodeLost, PriceListPublished } from '#contracts';
import { priceVersionOf } from './price-list.js';
import type { PriceListVersion } from './pricing.js';

/** What the fold reads of a recorded event (a `RecordedEvent` of the store fits). */
export interface StoredEvent {
  eventId: string;
  type: string;
  data: unknown;
  position: bigint;
  /** When the store recorded it (ISO-8601). */
  recordedAt: string;
  metadata: { team?: string | undefined };
}

/** Event types the billing fold reads; anything else is skipped. */
export const BILLING_EVENT_TYPES = [
  'PriceListPublished',
  'JobSubmitted',
  'ComputeHeld',
  'JobFinished',
  'NodeLost',
  'InvoiceFinalized',
  'CreditNoteIssued',
] as const;

/** A fact with where it came from. */
export interface Sourced<T> {
  data: T;
  eventId: string;
  position: bigint;
  recordedAt: string;
  /** Team carried in the event's metadata, if any. */
  team?: string | undefined;
}

/** Everything known of one attempt on one node. */
export interface AttemptFacts {
  /** `<attemptId>@<nodeId>`: the line id. */
  key: string;
  held?: Sourced<ComputeHeld>;
  finished?: Sourced<JobFinished>;
  /** The first NodeLost of the node that lists the attempt. */
  lost?: { eventId: string; position: bigint };
}

/** A price list version with the event it came from. */
export interface PricedVersion extends PriceListVersion {
  eventId: string;
  position: bigint;
}

/** A NodeLost that names an attempt whose line is on a finalized invoice, with that line (once read). */
export interface SettledLoss {
  eventId: string;
  position: bigint;
  /** The line as the invoice recorded it, and its index among the invoice's lines; undefined until read from the InvoiceFinalized event. */
  line?: InvoiceLine;
  index?: number;
}

/** A finalized invoice as the state keeps it. */
export interface FinalizedEntry {
  /** The event's data; in a settling state without its lines (`invoice.lines` is empty: read the stored copy from the store). */
  data: InvoiceFinalized;
  eventId: string;
  position: bigint;
  /** How many lines the invoice has. */
  lines: number;
  /** Settling state only: `data` holds no lines, and these are the losses of its lines by line id. */
  losses?: Map<string, SettledLoss>;
}

export interface BillingState {
  /** Highest position folded (0n: nothing). */
  position: bigint;
  /** Attempts on finalized invoices leave the state (see the head of this file). */
  readonly settle: boolean;
  /**
   * Lines kept in the store's database (decision 0053; settling states only): `attempts`,
   * `settled` and `jobTeams` hold only the rows of the events being folded, read before and
   * written after each page ({@link billingRowKeys}), and a derivation is handed a view with the
   * rows it needs. `openAttempts` and `teamless` stay empty: a job's team is a row for ever.
   */
  readonly inTable: boolean;
  /** Settling state only: the invoice id of each line on a finalized invoice, by line id, in the order they settled. */
  readonly settled: Map<string, string>;
  /** Settling state in memory only: jobs with an attempt whose events carry no team and whose JobSubmitted is not in `jobTeams` (to read: {@link readJobTeam}). */
  readonly teamless: Set<string>;
  /**
   * Settling state in memory only: how many attempts in `attempts` with a ComputeHeld or JobFinished
   * each job has (by the job id of the first of the two folded). A job with none left needs its
   * team no more.
   */
  readonly openAttempts: Map<string, number>;
  /** Price list versions by number, first recorded wins. */
  readonly prices: Map<number, PricedVersion>;
  /** By line id `<attemptId>@<nodeId>`, in the order first seen. */
  readonly attempts: Map<string, AttemptFacts>;
  /** Team of each job from intake's JobSubmitted (first wins). */
  readonly jobTeams: Map<string, { team: string; eventId: string }>;
  /** Finalized invoices by id, first wins. */
  readonly finalized: Map<string, FinalizedEntry>;
  /** Credit notes per invoice id, in position order; one per credit note id. */
  readonly creditNotes: Map<string, { data: CreditNoteIssued; eventId: string; position: bigint }[]>;
}

/** An empty state; `settle`: one whose settled attempts leave it; `inTable`: one whose lines are rows of the store's database (the ledger's). */
export function initialBilling(options: { settle?: boolean; inTable?: boolean } = {}): BillingState {
  return { position: 0n, settle: (options.settle ?? false) || (options.inTable ?? false), inTable: options.inTable ?? false, settled: new Map(), teamless: new Set(), openAttempts: new Map(), prices: new Map(), attempts: new Map(), jobTeams: new Map(), finalized: new Map(), creditNotes: new Map() };
}

/** The line id of an attempt on a node. */
export function lineIdOf(attemptId: string, nodeId: string): string {
  return `${attemptId}@${nodeId}`;
}

function factsOf(state: BillingState, key: string): AttemptFacts {
  let facts = state.attempts.get(key);
  if (!facts) {
    facts = { key };
    state.attempts.set(key, facts);
  }
  return facts;
}

function sourced<T>(event: StoredEvent): Sourced<T> {
  return { data: event.data as T, eventId: event.eventId, position: event.position, recordedAt: event.recordedAt, team: event.metadata.team };
}

/** Folds one stored event (in place) and returns the state. Events must come in position order. */
export function evolveBilling(state: BillingState, event: StoredEvent): BillingState {
  if (event.position <= state.position) return state;
  state.position = event.position;
  switch (event.type) {
    case 'ComputeHeld': {
      const d = event.data as ComputeHeld;
      const key = lineIdOf(d.attemptId, d.nodeId);
      if (state.settled.has(key)) break;
      const facts = factsOf(state, key);
      if (counts(state) && !facts.held && !facts.finished) countOpen(state, d.jobId, 1);
      if (!facts.held) facts.held = sourced(event);
      if (counts(state)) noteTeamless(state, facts);
      break;
    }
    case 'JobFinished': {
      const d = event.data as JobFinished;
      const key = lineIdOf(d.attemptId, d.nodeId);
      if (state.settled.has(key)) break;
      const facts = factsOf(state, key);
      if (counts(state) && !facts.held && !facts.finished) countOpen(state, d.jobId, 1);
      if (!facts.finished) facts.finished = sourced(event);
      if (counts(state)) noteTeamless(state, facts);
      break;
    }
    case 'NodeLost': {
      const d = event.data as NodeLost;
      for (const a of d.affectedAttempts) {
        const key = lineIdOf(a.attemptId, d.nodeId);
        const invoiceId = state.settled.get(key);
        if (invoiceId !== undefined) {
          const losses = state.finalized.get(invoiceId)!.losses!;
          if (!losses.has(key)) losses.set(key, { eventId: event.eventId, position: event.position });
          continue;
        }
        const facts = factsOf(state, key);
        if (!facts.lost) facts.lost = { eventId: event.eventId, position: event.position };
      }
      break;
    }
    case 'JobSubmitted': {
      const d = event.data as JobSubmitted;
      if (!state.jobTeams.has(d.jobId)) state.jobTeams.set(d.jobId, { team: d.team, eventId: event.eventId });
      state.teamless.delete(d.jobId);
      break;
    }
    case 'PriceListPublished': {
      const d = event.data as PriceListPublished;
      if (!state.prices.has(d.version)) state.prices.set(d.version, { ...priceVersionOf(d), eventId: event.eventId, position: event.position });
      break;
    }
    case 'InvoiceFinalized': {
      const d = event.data as InvoiceFinalized;
      if (state.finalized.has(d.invoice.invoiceId)) break;
      const entry: FinalizedEntry = { data: d, eventId: event.eventId, position: event.position, lines: d.invoice.lines.length };
      if (state.settle) settle(state, entry);
      state.finalized.set(d.invoice.invoiceId, entry);
      break;
    }
    case 'CreditNoteIssued': {
      const d = event.data as CreditNoteIssued;
      const notes = state.creditNotes.get(d.invoiceId) ?? [];
      if (!notes.some((n) => n.data.creditNoteId === d.creditNoteId)) notes.push({ data: d, eventId: event.eventId, position: event.position });
      state.creditNotes.set(d.invoiceId, notes);
      break;
    }
  }
  return state;
}

/** Lets the attempts of a finalized invoice's lines go (a settling state): see the head of this file. */
function settle(state: BillingState, entry: FinalizedEntry): void {
  const { invoice } = entry.data;
  const losses = new Map<string, SettledLoss>();
  const jobs = new Set<string>();
  invoice.lines.forEach((line, index) => {
    jobs.add(line.jobId);
    if (state.settled.has(line.lineId)) return;
    const facts = state.attempts.get(line.lineId);
    const opened = facts && counts(state) ? openedBy(facts) : undefined;
    if (opened !== undefined) countOpen(state, opened, -1);
    state.attempts.delete(line.lineId);
    state.settled.set(line.lineId, invoice.invoiceId);
    // Lost after the invoice was derived and before it was folded: a correction may be owed.
    if (facts?.lost) losses.set(line.lineId, { ...facts.lost, line, index });
  });
  entry.data = { ...entry.data, invoice: { ...invoice, lines: [] } };
  entry.losses = losses;
  // A job none of whose attempts is left needs its team no more, unless another attempt comes (then `teamless`).
  // In the table a job's team is a row for ever: nothing to count.
  if (counts(state)) for (const jobId of jobs) if (!state.openAttempts.has(jobId)) state.jobTeams.delete(jobId);
}

/** The job id an attempt is counted under in `openAttempts`: that of the first of its ComputeHeld and JobFinished folded; undefined without either. */
export function openedBy(facts: AttemptFacts): string | undefined {
  const { held, finished } = facts;
  const first = held && finished ? (held.position < finished.position ? held : finished) : (held ?? finished);
  return first?.data.jobId;
}

/** A settling state in memory counts each job's open attempts, to let its team go with the last. */
function counts(state: BillingState): boolean {
  return state.settle && !state.inTable;
}

function countOpen(state: BillingState, jobId: string, by: 1 | -1): void {
  const n = (state.openAttempts.get(jobId) ?? 0) + by;
  if (n > 0) state.openAttempts.set(jobId, n);
  else state.openAttempts.delete(jobId);
}

/** Names the attempt's job in `teamless` when its line needs the job's team and the state does not hold it. */
function noteTeamless(state: BillingState, facts: AttemptFacts): void {
  const { held, finished } = facts;
  if (!held || !finished || held.team !== undefined || finished.team !== undefined || state.jobTeams.has(held.data.jobId)) return;
  state.teamless.add(held.data.jobId);
}

/**
 * Gives a job named in `teamless` its team from its JobSubmitted (the first event of its intake
 * stream, read from the store; undefined when there is none), as the fold had it before the job
 * left `jobTeams`: only when that event is within the state's position.
 */
export function readJobTeam(state: BillingState, jobId: string, submitted: { eventId: string; type: string; position: bigint; data: unknown } | undefined): void {
  state.teamless.delete(jobId);
  if (!submitted || submitted.type !== 'JobSubmitted' || submitted.position > state.position || state.jobTeams.has(jobId)) return;
  const d = submitted.data as JobSubmitted;
  if (d.jobId === jobId) state.jobTeams.set(jobId, { team: d.team, eventId: submitted.eventId });
}

/** Finalized invoices of a settling state with a loss whose line is not read yet: their InvoiceFinalized events hold it ({@link readSettledLines}). */
export function unreadLosses(state: BillingState): FinalizedEntry[] {
  const out: FinalizedEntry[] = [];
  for (const entry of state.finalized.values()) {
    if (!entry.losses) continue;
    for (const loss of entry.losses.values()) {
      if (loss.line === undefined) {
        out.push(entry);
        break;
      }
    }
  }
  return out;
}

/** Gives the losses of `entry` their lines, from the data of its InvoiceFinalized event (read from the store). */
export function readSettledLines(entry: FinalizedEntry, stored: InvoiceFinalized): void {
  if (stored.invoice.invoiceId !== entry.data.invoice.invoiceId) throw new Error(`the event at position ${entry.position} finalized ${stored.invoice.invoiceId}, not ${entry.data.invoice.invoiceId}`);
  const index = new Map<string, number>();
  stored.invoice.lines.forEach((line, i) => index.set(line.lineId, i));
  for (const [lineId, loss] of entry.losses ?? []) {
    if (loss.line !== undefined) continue;
    const i = index.get(lineId);
    if (i === undefined) throw new Error(`${entry.data.invoice.invoiceId} has no line ${lineId}`);
    loss.line = stored.invoice.lines[i]!;
    loss.index = i;
  }
}

/** Folds events (in position order) into a fresh state, stopping after `asOf` when given. */
export function foldBilling(events: Iterable<StoredEvent>, asOf?: bigint, options: { settle?: boolean; inTable?: boolean } = {}): BillingState {
  const state = initialBilling(options);
  for (const e of events) {
    if (asOf !== undefined && e.position > asOf) break;
    evolveBilling(state, e);
  }
  return state;
}
