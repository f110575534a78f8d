import { createHash, createHmac } from 'node:crypto';
import type { EventMetadata } from './event-store.js';

/** The `prevHash` of the first event of every stream. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * JSON with object keys sorted at every level, so that the same value always serializes to
 * the same bytes whichever database stored it (PostgreSQL jsonb reorders keys).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  // As JSON.stringify does: a Date (or anything with toJSON) stands for what toJSON returns.
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return sortKeys((value as { toJSON: () => unknown }).toJSON());
  }
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value as Record<string, unknown>).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** The fields of a recorded event that the chain covers. */
export interface ChainedFields {
  streamId: string;
  revision: bigint;
  position: bigint;
  eventId: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
  recordedAt: string;
}

/**
 * hash = H(prevHash ‖ canonical fields), where prevHash is the hash of the previous event of the
 * same stream (GENESIS_HASH for revision 0). H is sha256, or HMAC-sha256 when a chain key is
 * configured, so that only a holder of the key can forge a consistent chain.
 */
export function computeEventHash(prevHash: string, e: ChainedFields, chainKey?: string): string {
  return computeEventHashCanonical(
    prevHash,
    { ...e, dataJson: canonicalJson(e.data) ?? 'null', metadataJson: canonicalJson(e.metadata) },
    chainKey,
  );
}

/** The chained fields with `data` and `metadata` already in canonical JSON (as an adapter stores them). */
export interface CanonicalChainedFields {
  streamId: string;
  revision: bigint;
  position: bigint;
  eventId: string;
  type: string;
  /** `canonicalJson(data)`. */
  dataJson: string;
  /** `canonicalJson(metadata)`. */
  metadataJson: string;
  recordedAt: string;
}

/**
 * The same hash as `computeEventHash`, for adapters that hold data and metadata as canonical JSON
 * text already: it skips re-sorting keys on the append and verify hot paths. The body is the
 * canonical JSON array of the chained fields, built by concatenation (JSON.stringify of an array
 * joins its elements' serializations with commas, and strings serialize the same in and out).
 */
export function computeEventHashCanonical(prevHash: string, e: CanonicalChainedFields, chainKey?: string): string {
  const body =
    '[' +
    JSON.stringify(e.streamId) +
    ',"' +
    e.revision.toString() +
    '","' +
    e.position.toString() +
    '",' +
    JSON.stringify(e.eventId) +
    ',' +
    JSON.stringify(e.type) +
    ',' +
    e.dataJson +
    ',' +
    e.metadataJson +
    ',' +
    JSON.stringify(e.recordedAt) +
    ']';
  const h = chainKey ? createHmac('sha256', chainKey) : createHash('sha256');
  return h.update(prevHash).update('\n').update(body).digest('hex');
}

/** Whether two payloads under one event id are the same event (used for idempotent appends). */
export function samePayload(
  a: { type: string; data: unknown; metadata: EventMetadata },
  b: { type: string; data: unknown; metadata: EventMetadata },
): boolean {
  return a.type === b.type && canonicalJson(a.data) === canonicalJson(b.data) && canonicalJson(a.metadata) === canonicalJson(b.metadata);
}
