/**
 * Dispute bundles: one JSON file with an invoice, the events it comes from and the chain heads of
 * their streams, checkable on a machine with neither network nor store.
 *
 * What a bundle holds, and why: the store's hash chain is per stream (decision 0002), each event's
 * hash covering the previous event of its stream. A lone event proves nothing; its stream from
 * revision 0 does. So for every stream that holds a contributing event (the lines' ComputeHeld,
 * JobFinished, price list, NodeLost and JobSubmitted events; the team's finalized invoices and
 * credit notes, which decide where late lines go), the bundle carries the whole stream as it
 * stood when the bundle was made, from revision 0 to its head, with every hash.
 *
 * What `verifyBundle` proves offline:
 *  1. every event's hash recomputes from its content and its predecessor, from the genesis hash
 *     up to the stated head of its stream (an edited, removed or inserted event is named);
 *  2. every event the invoice's lines name is among them;
 *  3. the ledger's derivation, run over these events as of the position recorded on the invoice,
 *     gives this invoice byte for byte (and, for a finalized invoice, it is the one its own
 *     InvoiceFinalized event, also chained, recorded).
 * What it cannot prove without the store: that no other event of the team and month exists (a
 * bundle maker could leave a stream out), nor that the heads are the store's current ones. Hold
 * the heads against the store (`gpunet verify`, `gpunet replay invoice`) for those. With a chain
 * key (HMAC) the checker needs the key; without one anyone can recompute the hashes, so the
 * bundle shows consistency with the heads it states, which are worth as much as where they were
 * kept (decision 0002, "exported heads").
 */
import type { InvoiceBody, InvoiceFinalized } from '#contracts';
import { computeEventHash, GENESIS_HASH, type RecordedEvent } from '#event-store';
import { canonicalJson, type StoredEvent } from '../domain/index.js';
import { replayInvoice, type InvoiceReplay } from './invoice-replay.js';

export const BUNDLE_FORMAT = 'gpunet.dispute-bundle/1';

/** An event as a bundle carries it: revision and position as decimal strings. */
export interface BundleEvent {
  streamId: string;
  revision: string;
  position: string;
  eventId: string;
  type: string;
  data: unknown;
  metadata: RecordedEvent['metadata'];
  recordedAt: string;
  hash: string;
}

export interface BundleStream {
  streamId: string;
  /** The stream's head when the bundle was made: its last revision, position and hash. */
  head: { revision: string; position: string; hash: string };
  /** Every event of the stream, revision 0 to the head. */
  events: BundleEvent[];
}

export interface DisputeBundle {
  format: typeof BUNDLE_FORMAT;
  createdAt: string;
  /** `sha256`, or `hmac-sha256` when the store chains with a key (the checker needs it). */
  chain: 'sha256' | 'hmac-sha256';
  invoice: InvoiceBody;
  /** `finalized`: the invoice its InvoiceFinalized event recorded (`finalizedEventId`); `draft`: derived at the store head when bundled. */
  invoiceStatus: 'finalized' | 'draft';
  finalizedEventId?: string;
  /** Ids of the events the invoice comes from (every line's eventIds, and the InvoiceFinalized). */
  contributingEventIds: string[];
  streams: BundleStream[];
  /** What a successful check proves and what it does not. */
  proves: string;
}

export const PROVES =
  'Each stream is hash-chained from genesis to the stated head; every event named by the invoice lines is among them; the ledger derivation over these events ' +
  'as of derivedAtPosition yields this invoice byte for byte. Not proven offline: that the store holds no other event of this team and month, or that the heads are current.';

export function toBundleEvent(e: RecordedEvent): BundleEvent {
  return {
    streamId: e.streamId,
    revision: e.revision.toString(),
    position: e.position.toString(),
    eventId: e.eventId,
    type: e.type,
    data: e.data,
    metadata: e.metadata,
    recordedAt: e.recordedAt,
    hash: e.hash,
  };
}

function toStored(e: BundleEvent): StoredEvent {
  return { eventId: e.eventId, type: e.type, data: e.data, position: BigInt(e.position), recordedAt: e.recordedAt, metadata: e.metadata };
}

/** Builds a bundle from whole streams (each from revision 0). Pure. */
export function buildBundle(input: {
  invoice: InvoiceBody;
  invoiceStatus: 'finalized' | 'draft';
  finalizedEventId?: string;
  streams: readonly (readonly RecordedEvent[])[];
  chainKeyed: boolean;
  createdAt: string;
}): DisputeBundle {
  const contributing = new Set(input.invoice.lines.flatMap((l) => l.eventIds));
  if (input.finalizedEventId) contributing.add(input.finalizedEventId);
  const streams = input.streams
    .filter((s) => s.length > 0)
    .map((events) => {
      const last = events[events.length - 1]!;
      return { streamId: last.streamId, head: { revision: last.revision.toString(), position: last.position.toString(), hash: last.hash }, events: events.map(toBundleEvent) };
    })
    .sort((a, b) => (a.streamId < b.streamId ? -1 : 1));
  return {
    format: BUNDLE_FORMAT,
    createdAt: input.createdAt,
    chain: input.chainKeyed ? 'hmac-sha256' : 'sha256',
    invoice: input.invoice,
    invoiceStatus: input.invoiceStatus,
    ...(input.finalizedEventId ? { finalizedEventId: input.finalizedEventId } : {}),
    contributingEventIds: [...contributing],
    streams,
    proves: PROVES,
  };
}

/** One problem found; `eventId` / `streamId` name where. */
export interface BundleProblem {
  check: 'format' | 'chain' | 'head' | 'contributing' | 'invoice';
  message: string;
  streamId?: string;
  eventId?: string;
  position?: string;
}

export interface BundleVerification {
  ok: boolean;
  invoiceId?: string;
  streams: number;
  events: number;
  problems: BundleProblem[];
  /** The re-derivation's line diff, when the chain held. */
  replay?: InvoiceReplay;
  proves: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Checks a bundle offline: the chains, the heads, the contributing events, and the invoice
 * re-derived from the bundled events. `chainKey` is needed when `chain` is `hmac-sha256`.
 * Pure (hashing only).
 */
export function verifyBundle(raw: unknown, chainKey?: string): BundleVerification {
  const problems: BundleProblem[] = [];
  const fail = (p: BundleProblem): BundleVerification => ({ ok: false, streams: 0, events: 0, problems: [...problems, p], proves: PROVES });
  if (!isObj(raw) || raw.format !== BUNDLE_FORMAT) return fail({ check: 'format', message: `not a dispute bundle: format must be ${BUNDLE_FORMAT}` });
  if (!isObj(raw.invoice) || !Array.isArray(raw.streams) || !Array.isArray(raw.contributingEventIds)) {
    return fail({ check: 'format', message: 'a dispute bundle needs invoice, streams and contributingEventIds' });
  }
  const bundle = raw as unknown as DisputeBundle;
  if (bundle.chain === 'hmac-sha256' && !chainKey) {
    return fail({ check: 'chain', message: 'this bundle was made from a store chained with an HMAC key: set GPUNET_CHAIN_KEY to the store\'s key to check it' });
  }
  const key = bundle.chain === 'hmac-sha256' ? chainKey : undefined;

  const all: BundleEvent[] = [];
  const seenStreams = new Set<string>();
  for (const s of bundle.streams) {
    if (seenStreams.has(s.streamId)) problems.push({ check: 'format', message: `stream ${s.streamId} appears twice`, streamId: s.streamId });
    seenStreams.add(s.streamId);
    let prev = GENESIS_HASH;
    let bad = false;
    s.events.forEach((e, i) => {
      if (bad) return;
      const where = { streamId: s.streamId, eventId: e.eventId, position: e.position };
      if (e.streamId !== s.streamId || e.revision !== String(i)) {
        problems.push({ check: 'chain', ...where, message: `event ${e.eventId} is at revision ${e.revision} of ${e.streamId} where revision ${i} of ${s.streamId} should be: an event was removed, inserted or moved` });
        bad = true;
        return;
      }
      let expected: string;
      try {
        expected = computeEventHash(prev, { streamId: e.streamId, revision: BigInt(e.revision), position: BigInt(e.position), eventId: e.eventId, type: e.type, data: e.data, metadata: e.metadata, recordedAt: e.recordedAt }, key);
      } catch {
        expected = '';
      }
      if (expected !== e.hash) {
        problems.push({ check: 'chain', ...where, message: `event ${e.eventId} (${e.type}, ${e.streamId} revision ${e.revision}, position ${e.position}) does not match its hash: its content or a predecessor was altered` });
        bad = true;
        return;
      }
      prev = e.hash;
    });
    const last = s.events[s.events.length - 1];
    if (!bad && (!last || last.hash !== s.head.hash || last.revision !== s.head.revision || last.position !== s.head.position)) {
      problems.push({ check: 'head', streamId: s.streamId, message: `stream ${s.streamId} does not end at its stated head (revision ${s.head.revision}, position ${s.head.position}): events are missing or added at its end` });
    }
    all.push(...s.events);
  }

  const ids = new Set(all.map((e) => e.eventId));
  for (const id of bundle.contributingEventIds) {
    if (!ids.has(id)) problems.push({ check: 'contributing', eventId: id, message: `contributing event ${id} is not in the bundle` });
  }
  for (const l of bundle.invoice.lines ?? []) {
    for (const id of l.eventIds) if (!ids.has(id)) problems.push({ check: 'contributing', eventId: id, message: `event ${id} of line ${l.lineId} is not in the bundle` });
  }
  const base = { invoiceId: bundle.invoice.invoiceId, streams: bundle.streams.length, events: all.length, proves: PROVES };
  // A broken chain makes the re-derivation meaningless: say where it broke, not what it derived.
  if (problems.length > 0) return { ok: false, ...base, problems };

  if (bundle.invoiceStatus === 'finalized') {
    const fin = all.find((e) => e.eventId === bundle.finalizedEventId && e.type === 'InvoiceFinalized');
    if (!fin) problems.push({ check: 'invoice', message: `the InvoiceFinalized event ${bundle.finalizedEventId ?? '(none named)'} is not in the bundle` });
    else if (canonicalJson((fin.data as InvoiceFinalized).invoice) !== canonicalJson(bundle.invoice)) {
      problems.push({ check: 'invoice', eventId: fin.eventId, message: `the bundle's invoice is not the one InvoiceFinalized ${fin.eventId} recorded` });
    }
  }
  const ordered = [...all].sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1)).map(toStored);
  const replay = replayInvoice(ordered, bundle.invoice);
  if (!replay.identical) {
    for (const l of replay.lines.filter((x) => x.status !== 'same')) {
      problems.push({ check: 'invoice', message: `line ${l.lineId} ${l.status}${l.changes.length ? `: ${l.changes.map((c) => `${c.field} ${JSON.stringify(c.recorded)} vs derived ${JSON.stringify(c.derived)}`).join(', ')}` : ''} (events ${l.eventIds.join(', ')})` });
    }
    for (const t of replay.totals) problems.push({ check: 'invoice', message: `total ${t.currency}: invoice says ${t.recorded ?? 0}, the events give ${t.derived ?? 0}` });
    for (const k of replay.otherChanges) problems.push({ check: 'invoice', message: `${k} differs from the re-derivation` });
    if (problems.length === 0) problems.push({ check: 'invoice', message: 'the invoice differs from its re-derivation' });
  }
  return { ok: problems.length === 0, ...base, problems, replay };
}
