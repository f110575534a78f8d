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
 */
import type { ComputeHeld, CreditNoteIssued, InvoiceFinalized, JobFinished, JobSubmitted, NodeLost, PriceListPublished } from '#contracts';
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

export interface BillingState {
  /** Highest position folded (0n: nothing). */
  position: bigint;
  /** Price list versions by number, first recorded wins. */
  readonly prices: Map<number, PricedVersion>;
  /** By line id `<attemptId>@<nodeId>`, in the order first seen. */
  readonly attempts: Map<string, AttemptFacts>;
  /** Team of each job from intake's JobSubmitted (first wins). */
  readonly jobTeams: Map<string, { team: string; eventId: string }>;
  /** Finalized invoices by id, first wins. */
  readonly finalized: Map<string, { data: InvoiceFinalized; eventId: string; position: bigint }>;
  /** Credit notes per invoice id, in position order; one per credit note id. */
  readonly creditNotes: Map<string, { data: CreditNoteIssued; eventId: string; position: bigint }[]>;
}

/** An empty state. */
export function initialBilling(): BillingState {
  return { position: 0n, prices: new Map(), attempts: new Map(), jobTeams: new Map(), finalized: new Map(), creditNotes: new Map() };
}

/** The line id of an attempt on a node. */
export function lineIdOf(attemptId: string, nodeId: string): string {
  return `${attemptId}@${nodeId}`;
}

function factsOf(state: BillingState, attemptId: string, nodeId: string): AttemptFacts {
  const key = lineIdOf(attemptId, nodeId);
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
      const facts = factsOf(state, d.attemptId, d.nodeId);
      if (!facts.held) facts.held = sourced(event);
      break;
    }
    case 'JobFinished': {
      const d = event.data as JobFinished;
      const facts = factsOf(state, d.attemptId, d.nodeId);
      if (!facts.finished) facts.finished = sourced(event);
      break;
    }
    case 'NodeLost': {
      const d = event.data as NodeLost;
      for (const a of d.affectedAttempts) {
        const facts = factsOf(state, a.attemptId, d.nodeId);
        if (!facts.lost) facts.lost = { eventId: event.eventId, position: event.position };
      }
      break;
    }
    case 'JobSubmitted': {
      const d = event.data as JobSubmitted;
      if (!state.jobTeams.has(d.jobId)) state.jobTeams.set(d.jobId, { team: d.team, eventId: event.eventId });
      break;
    }
    case 'PriceListPublished': {
      const d = event.data as PriceListPublished;
      if (!state.prices.has(d.version)) state.prices.set(d.version, { ...priceVersionOf(d), eventId: event.eventId, position: event.position });
      break;
    }
    case 'InvoiceFinalized': {
      const d = event.data as InvoiceFinalized;
      if (!state.finalized.has(d.invoice.invoiceId)) state.finalized.set(d.invoice.invoiceId, { data: d, eventId: event.eventId, position: event.position });
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

/** Folds events (in position order) into a fresh state, stopping after `asOf` when given. */
export function foldBilling(events: Iterable<StoredEvent>, asOf?: bigint): BillingState {
  const state = initialBilling();
  for (const e of events) {
    if (asOf !== undefined && e.position > asOf) break;
    evolveBilling(state, e);
  }
  return state;
}
