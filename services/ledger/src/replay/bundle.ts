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
 *  4. with the network's public key (`--public-key`): the bundle's signed chain heads (the latest
 *     `ChainHeadsSigned` digest of the store when it was made) carry the network's signature, and
 *     each bundled stream's head at the digest's position is in the digest's Merkle root (an
 *     inclusion proof per stream), so a bundle whose events were edited and whose chains were
 *     recomputed no longer reaches a signed head; every contributing event lies at or before the
 *     digest's position. Node report signatures (`metadata.report`) are carried and checked.
 * What it cannot prove without the store: that no other event of the team and month exists (a
 * bundle maker could leave a stream out). Without the public key anyone can recompute sha256
 * hashes, so the bundle then shows only consistency with the heads it states (decision 0011).
 */
import { ChainHeadsSigned, recordedReportSigningBytes, StreamHead, type InvoiceBody, type InvoiceFinalized, type ReportProof } from '#contracts';
import { computeEventHash, GENESIS_HASH, type RecordedEvent } from '#event-store';
import { verifySignature } from '#identity';
import { canonicalJson, type StoredEvent } from '../domain/index.js';
import { digestProof, rootFromProof, signatureProblem, type ProofStep } from '../digests/digest.js';
import type { HeadsTree } from '../digests/heads-tree.js';
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
  /** The latest signed chain heads when the bundle was made, with each bundled stream's proof into them. */
  signedHeads?: BundleSignedHeads;
  /** Node report signatures carried by the bundled events (`metadata.report`). */
  reports?: BundleReport[];
  /** What a successful check proves and what it does not. */
  proves: string;
}

/** A digest and, per bundled stream that existed at its position, that stream's head then and its Merkle proof. */
export interface BundleSignedHeads {
  digest: ChainHeadsSigned;
  proofs: { head: StreamHead; proof: ProofStep[] }[];
}

/** An execution node's signature of the report an event was recorded from. */
export interface BundleReport {
  eventId: string;
  nodeId: string;
  publicKey: string;
  signature: string;
}

export const PROVES =
  'Each stream is hash-chained from genesis to the stated head; every event named by the invoice lines is among them; the ledger derivation over these events ' +
  'as of derivedAtPosition yields this invoice byte for byte. Not proven offline: that the store holds no other event of this team and month, or that the heads are current.';

export const PROVES_SIGNED =
  `${PROVES} With the network public key: the streams reach the heads the network signed (ChainHeadsSigned digest, Merkle proof per stream), every contributing event ` +
  'lies at or before the signed position, and each node report signature carried holds; an edited bundle with recomputed chains fails.';

/** The node report of an event's metadata, when it carries one (the recorder's {@link ReportProof}). */
export function reportOf(e: { eventId: string; metadata: unknown }): BundleReport | undefined {
  const r = isObj(e.metadata) ? e.metadata.report : undefined;
  if (!isObj(r) || typeof r.nodeId !== 'string' || typeof r.publicKey !== 'string' || typeof r.signature !== 'string') return undefined;
  return { eventId: e.eventId, nodeId: r.nodeId, publicKey: r.publicKey, signature: r.signature };
}

/** The recorder's whole proof of an event (what the node signed), when it carries one. */
function proofOf(e: { metadata: unknown }): ReportProof | undefined {
  const r = isObj(e.metadata) ? e.metadata.report : undefined;
  if (!isObj(r) || typeof r.journal !== 'string' || typeof r.seq !== 'string' || !isObj(r.metadata)) return undefined;
  return r as unknown as ReportProof;
}

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
  /** The store's latest digest and the full heads it covers. */
  signed?: { digest: ChainHeadsSigned; tree: HeadsTree };
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
  let signedHeads: BundleSignedHeads | undefined;
  if (input.signed) {
    const proofs: BundleSignedHeads['proofs'] = [];
    for (const s of streams) {
      const head = input.signed.tree.get(s.streamId);
      const proof = head && digestProof(input.signed.tree, input.signed.digest, s.streamId);
      if (head && proof) proofs.push({ head, proof });
    }
    signedHeads = { digest: input.signed.digest, proofs };
  }
  const reports = streams.flatMap((s) => s.events.map(reportOf)).filter((r): r is BundleReport => r !== undefined);
  return {
    format: BUNDLE_FORMAT,
    createdAt: input.createdAt,
    chain: input.chainKeyed ? 'hmac-sha256' : 'sha256',
    invoice: input.invoice,
    invoiceStatus: input.invoiceStatus,
    ...(input.finalizedEventId ? { finalizedEventId: input.finalizedEventId } : {}),
    contributingEventIds: [...contributing],
    streams,
    ...(signedHeads ? { signedHeads } : {}),
    ...(reports.length > 0 ? { reports } : {}),
    proves: signedHeads ? PROVES_SIGNED : PROVES,
  };
}

/** One problem found; `eventId` / `streamId` name where. */
export interface BundleProblem {
  check: 'format' | 'chain' | 'head' | 'contributing' | 'invoice' | 'signature' | 'report';
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
  /** With a public key: the signed digest the bundle's heads were proven against. */
  signedBy?: { publicKey: string; sequence: number; position: string; signedAt: string };
  /** Node report signatures checked. */
  reports?: number;
  proves: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Checks a bundle offline: the chains, the heads, the contributing events, and the invoice
 * re-derived from the bundled events. `chainKey` is needed when `chain` is `hmac-sha256`; with
 * `publicKey` the heads must also be the ones the network signed. Pure (hashing only).
 */
export function verifyBundle(raw: unknown, chainKey?: string, publicKey?: string): BundleVerification {
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
  let signedBy: BundleVerification['signedBy'];
  if (publicKey) signedBy = checkSignedHeads(bundle, publicKey, problems);
  const reports = checkReports(all, problems);
  const base = { invoiceId: bundle.invoice.invoiceId, streams: bundle.streams.length, events: all.length, proves: publicKey ? PROVES_SIGNED : PROVES, ...(signedBy ? { signedBy } : {}), reports };
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

/**
 * The bundle's streams against the heads the network signed: the digest's signature, then each
 * stream's head at the digest position proven into its root, then every contributing event at or
 * before that position. Appends what fails to `problems`.
 */
function checkSignedHeads(bundle: DisputeBundle, publicKey: string, problems: BundleProblem[]): BundleVerification['signedBy'] {
  const parsed = ChainHeadsSigned.safeParse(bundle.signedHeads?.digest);
  if (!bundle.signedHeads || !parsed.success) {
    problems.push({ check: 'signature', message: 'the bundle carries no signed chain heads: make it again from a network whose ledger holds the signing key (after `gpunet digests sign`)' });
    return undefined;
  }
  const digest = parsed.data;
  const bad = signatureProblem(digest, publicKey);
  if (bad) {
    problems.push({ check: 'signature', message: bad });
    return undefined;
  }
  const at = BigInt(digest.position);
  const proofs = new Map<string, { head: unknown; proof: unknown }>();
  for (const p of Array.isArray(bundle.signedHeads.proofs) ? bundle.signedHeads.proofs : []) {
    const head = StreamHead.safeParse((p as { head?: unknown }).head);
    if (head.success) proofs.set(head.data.streamId, p);
  }
  for (const s of bundle.streams) {
    const covered = s.events.filter((e) => BigInt(e.position) <= at);
    if (covered.length === 0) continue;
    const last = covered[covered.length - 1]!;
    const p = proofs.get(s.streamId);
    const head = StreamHead.parse(p?.head ?? { streamId: s.streamId, revision: last.revision, position: last.position, hash: last.hash });
    const where = { streamId: s.streamId, eventId: last.eventId, position: last.position };
    if (!p || !Array.isArray(p.proof)) {
      problems.push({ check: 'signature', ...where, message: `stream ${s.streamId} has events at or before signed position ${digest.position} but no proof into digest #${digest.sequence}` });
    } else if (head.revision !== last.revision || head.position !== last.position || head.hash !== last.hash) {
      problems.push({
        check: 'signature',
        ...where,
        message: `stream ${s.streamId} reaches revision ${last.revision} (position ${last.position}, hash ${last.hash.slice(0, 16)}…) at signed position ${digest.position}, but digest #${digest.sequence} signed revision ${head.revision} (position ${head.position}, hash ${head.hash.slice(0, 16)}…): the stream was edited and re-chained`,
      });
    } else if (rootFromProof(head, p.proof as ProofStep[]) !== digest.headsRoot) {
      problems.push({ check: 'signature', ...where, message: `stream ${s.streamId}'s head (revision ${head.revision}, position ${head.position}) is not in the root digest #${digest.sequence} signed: the stream was edited and re-chained` });
    }
  }
  const positions = new Map(bundle.streams.flatMap((s) => s.events.map((e) => [e.eventId, e] as const)));
  for (const id of bundle.contributingEventIds) {
    const e = positions.get(id);
    if (e && BigInt(e.position) > at) {
      problems.push({ check: 'signature', eventId: id, streamId: e.streamId, position: e.position, message: `contributing event ${id} (position ${e.position}) lies after signed position ${digest.position}: no signature covers it yet; run \`gpunet digests sign\`, then make the bundle again` });
    }
  }
  return { publicKey, sequence: digest.sequence, position: digest.position, signedAt: digest.signedAt };
}

/** Every node report signature carried in the events' metadata: the node named is the event's, the signature holds. */
function checkReports(events: readonly BundleEvent[], problems: BundleProblem[]): number {
  let n = 0;
  for (const e of events) {
    const r = reportOf(e);
    if (!r) continue;
    n += 1;
    const where = { streamId: e.streamId, eventId: e.eventId, position: e.position };
    const nodeId = isObj(e.data) ? e.data.nodeId : undefined;
    if (nodeId !== undefined && nodeId !== r.nodeId) problems.push({ check: 'report', ...where, message: `event ${e.eventId} is about node ${String(nodeId)} but carries the report signature of node ${r.nodeId}` });
    else if (!proofOf(e)) problems.push({ check: 'report', ...where, message: `event ${e.eventId} carries node ${r.nodeId}'s signature without what the node signed (journal, seq, its metadata): it cannot be checked` });
    else if (!verifySignature(r.publicKey, recordedReportSigningBytes(e, proofOf(e)!), r.signature)) problems.push({ check: 'report', ...where, message: `node ${r.nodeId}'s report signature on event ${e.eventId} (${e.type}) does not hold: the event was edited after the node signed it` });
  }
  return n;
}
