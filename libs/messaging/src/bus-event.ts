import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import type { EventMetadata, RecordedEvent } from '#event-store';
import { z } from 'zod';
import { HEADERS, eventSubject } from '#contracts';
import { Headers } from './conventions.js';
import { MalformedMessageError } from './errors.js';
import { toFieldIssues } from './zod-issues.js';

/**
 * An event as it travels on the bus: the JSON of a recorded event from the event store (bigints as
 * decimal strings on the wire). Events emitted straight to the bus (not through the store) lack the
 * store fields, hence their optionality.
 */
export interface BusEvent<TType extends string = string, TData = unknown> {
  eventId: string;
  type: TType;
  data: TData;
  metadata: EventMetadata;
  streamId?: string;
  revision?: bigint;
  position?: bigint;
  recordedAt?: string;
  hash?: string;
}

const decimal = z.string().regex(/^\d+$/, 'must be a decimal integer string');

/** What every event envelope must look like; `data` is checked by the schema registered for `type`. */
const envelopeSchema = z.object({
  eventId: z.string().min(1),
  type: z.string().min(1),
  data: z.unknown(),
  metadata: z.looseObject({
    correlationId: z.string(),
    causationId: z.string(),
    jobId: z.string().optional(),
    team: z.string().optional(),
    producer: z.string(),
    occurredAt: z.string(),
  }),
  streamId: z.string().optional(),
  revision: decimal.optional(),
  position: decimal.optional(),
  recordedAt: z.string().optional(),
  hash: z.string().optional(),
});

/** A bus message ready to publish. */
export interface EncodedEvent {
  subject: string;
  payload: string;
  headers: MsgHdrs;
  /** `Nats-Msg-Id`: the event id, so a re-publish within the duplicate window is dropped by JetStream. */
  msgID: string;
}

/** Where an event goes on the bus. */
export type EventSubjectOf = (event: RecordedEvent | BusEvent) => string;

/** `gpunet.evt.<type>.<team>.<jobId>` from the event's type and metadata (contracts' `eventSubject`). */
export const defaultEventSubject: EventSubjectOf = (event) => eventSubject(event.type, event.metadata);

/**
 * Encodes an event for the bus: subject `gpunet.evt.<type>.<team>.<jobId>` (or what `subjectOf`
 * gives), JSON body (bigints as decimal text), headers `Nats-Msg-Id` (= event id), `Gpunet-Type`,
 * `Gpunet-Job-Id` (when the event names a job), `Gpunet-Correlation-Id`, `Gpunet-Causation-Id` and
 * `Gpunet-Schema-Version` (`metadata.schemaVersion`, absent meaning 1) — the event headers of the
 * AsyncAPI document, every one always sent but the job id; and `traceparent` / `tracestate` when
 * the event's metadata carries a trace context.
 */
export function encodeEvent(event: RecordedEvent | BusEvent, subjectOf: EventSubjectOf = defaultEventSubject): EncodedEvent {
  const h = natsHeaders();
  h.set(Headers.MsgId, event.eventId);
  h.set(Headers.Type, event.type);
  if (event.metadata.jobId) h.set(Headers.JobId, event.metadata.jobId);
  h.set(Headers.CorrelationId, event.metadata.correlationId);
  h.set(HEADERS.causationId, event.metadata.causationId);
  h.set(HEADERS.schemaVersion, String(eventSchemaVersion(event)));
  // W3C trace context recorded with the event (only while tracing is on): consumers continue its trace.
  if (event.metadata.traceparent) h.set('traceparent', event.metadata.traceparent);
  if (event.metadata.tracestate) h.set('tracestate', event.metadata.tracestate);
  // A copy with the two bigints as text: much cheaper than a JSON.stringify replacer on every value.
  const wire =
    event.revision === undefined && event.position === undefined
      ? event
      : { ...event, revision: event.revision?.toString(), position: event.position?.toString() };
  return { subject: subjectOf(event), payload: JSON.stringify(wire), headers: h, msgID: event.eventId };
}

/** The schema version of an event's `data`: `metadata.schemaVersion`, absent meaning 1. */
export function eventSchemaVersion(event: { metadata: { schemaVersion?: number | undefined } }): number {
  return event.metadata.schemaVersion ?? 1;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes a bus message body into an event envelope. Throws MalformedMessageError (not UTF-8 / not
 * JSON / not an envelope, with field issues); `data` is left for the type's schema.
 */
export function decodeEvent(body: Uint8Array): BusEvent {
  let json: unknown;
  try {
    json = JSON.parse(utf8.decode(body));
  } catch (err) {
    throw new MalformedMessageError(`body is not JSON: ${(err as Error).message}`, [], { cause: err });
  }
  const parsed = envelopeSchema.safeParse(json);
  if (!parsed.success) {
    throw new MalformedMessageError('body is not an event envelope', toFieldIssues(parsed.error));
  }
  const e = parsed.data;
  const event: BusEvent = { eventId: e.eventId, type: e.type, data: e.data, metadata: e.metadata as EventMetadata };
  if (e.streamId !== undefined) event.streamId = e.streamId;
  if (e.revision !== undefined) event.revision = BigInt(e.revision);
  if (e.position !== undefined) event.position = BigInt(e.position);
  if (e.recordedAt !== undefined) event.recordedAt = e.recordedAt;
  if (e.hash !== undefined) event.hash = e.hash;
  return event;
}
