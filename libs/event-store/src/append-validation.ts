import { ValidationError, type FieldIssue } from '#errors';
import type { AppendOptions, EventToAppend } from './event-store.js';
import { canonicalJson } from './hash-chain.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An event checked and serialized once, ready for any adapter to store and hash. */
export interface PreparedEvent {
  eventId: string;
  type: string;
  /** `canonicalJson(data)`: what is stored and hashed. */
  dataJson: string;
  /** `canonicalJson(metadata)`: what is stored and hashed. */
  metadataJson: string;
  /** Indexed copies of the optional metadata fields. */
  jobId: string | null;
  team: string | null;
}

/**
 * Checks an append's input and serializes each event to canonical JSON, so that adapters share
 * one set of rules and one error shape: a ValidationError whose issues name the field
 * (`streamId`, `events`, `events.2.eventId`, ...). Pure; throws before any I/O.
 */
export function prepareAppend(streamId: unknown, events: unknown, options?: AppendOptions): PreparedEvent[] {
  const issues: FieldIssue[] = [];
  if (typeof streamId !== 'string' || streamId.length === 0) {
    issues.push({ path: 'streamId', message: 'must be a non-empty string', fix: 'name the stream, e.g. `job-<id>`' });
  }
  const expected = options?.expectedRevision;
  if (typeof expected === 'bigint' && expected < 0n) {
    issues.push({ path: 'options.expectedRevision', message: 'must be ≥ 0 (revisions start at 0)', fix: "use 'no_stream' for a stream that must not exist" });
  }
  const fence = options?.fence;
  if (fence !== undefined && (typeof fence.streamId !== 'string' || fence.streamId.length === 0 || typeof fence.revision !== 'bigint' || fence.revision < 0n)) {
    issues.push({ path: 'options.fence', message: 'must name a stream and a revision ≥ 0', fix: 'pass the stream and revision of the writer\'s own term event' });
  }
  if (!Array.isArray(events) || events.length === 0) {
    issues.push({ path: 'events', message: 'must be a non-empty array', fix: 'append at least one event' });
    throw new ValidationError('invalid append', issues);
  }

  const prepared: PreparedEvent[] = [];
  const seen = new Map<string, number>();
  (events as EventToAppend[]).forEach((e, i) => {
    const at = `events.${i}`;
    if (e === null || typeof e !== 'object') {
      issues.push({ path: at, message: 'must be an object with eventId, type, data and metadata' });
      return;
    }
    if (typeof e.eventId !== 'string' || !UUID.test(e.eventId)) {
      issues.push({ path: `${at}.eventId`, message: 'must be a UUID', fix: 'generate one with uuid v4 or v7; it is the idempotency key' });
    } else {
      // One spelling per id: PostgreSQL's uuid type lower-cases, so every adapter does.
      e = { ...e, eventId: e.eventId.toLowerCase() };
      const first = seen.get(e.eventId);
      if (first !== undefined) {
        issues.push({ path: `${at}.eventId`, message: `duplicates events.${first}.eventId within the batch`, fix: 'give every event its own id' });
      } else {
        seen.set(e.eventId, i);
      }
    }
    if (typeof e.type !== 'string' || e.type.length === 0) {
      issues.push({ path: `${at}.type`, message: 'must be a non-empty string' });
    }
    const m = e.metadata;
    if (m === null || typeof m !== 'object') {
      issues.push({ path: `${at}.metadata`, message: 'must be an object with correlationId, causationId, producer and occurredAt' });
      return;
    }
    for (const field of ['correlationId', 'causationId', 'producer', 'occurredAt'] as const) {
      if (typeof m[field] !== 'string') issues.push({ path: `${at}.metadata.${field}`, message: 'must be a string' });
    }
    for (const field of ['jobId', 'team'] as const) {
      if (m[field] !== undefined && typeof m[field] !== 'string') issues.push({ path: `${at}.metadata.${field}`, message: 'must be a string when given' });
    }
    let dataJson: string | undefined;
    let metadataJson: string | undefined;
    try {
      dataJson = canonicalJson(e.data);
      metadataJson = canonicalJson(m);
    } catch (cause) {
      issues.push({ path: `${at}.data`, message: `is not JSON-serializable (${(cause as Error).message})` });
      return;
    }
    if (dataJson === undefined) {
      issues.push({ path: `${at}.data`, message: 'must be a JSON value (null, not undefined, for none)' });
      return;
    }
    prepared.push({
      eventId: e.eventId,
      type: e.type,
      dataJson,
      metadataJson: metadataJson!,
      jobId: m.jobId ?? null,
      team: m.team ?? null,
    });
  });
  if (issues.length > 0) throw new ValidationError(`invalid append to ${String(streamId)}: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, issues);
  return prepared;
}
