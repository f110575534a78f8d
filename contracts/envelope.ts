/**
 * What travels on NATS around the payloads:
 * - an event on `gpunet.evt.*` is a recorded event exactly as the store holds it (64-bit
 *   revision and position as decimal text), so a consumer can check its hash chain;
 * - every request/reply answer is `{ ok: true, data }` or `{ ok: false, error }`;
 * - a dead letter on `gpunet.dlq.*` carries the refused message and why it was refused.
 */
import { z } from 'zod';
import { ERROR_CODES, REPLY_ERROR_CODES } from './error-codes.js';
import { FieldIssue } from './issues.js';
import { DecimalString, EventId, HumanText, JobId, Sha256, TeamId, Timestamp, TraceId } from './primitives.js';

export const EventMetadata = z
  .object({
    correlationId: TraceId.describe('Ties together every event caused by one request.'),
    causationId: TraceId.describe('Id of the event or request that directly caused this one.'),
    jobId: JobId.optional().describe('The job the event concerns, if any (indexed for audit).'),
    team: TeamId.optional().describe('The team the event concerns, if any (indexed for audit).'),
    producer: z.string().min(1).describe('Service or client that produced the event, e.g. `intake`.'),
    occurredAt: Timestamp.describe('When the producer observed or decided the fact (producer clock).'),
    schemaVersion: z.int().min(1).optional().describe('Schema version of `data` when it was written; absent means 1.'),
    traceparent: z
      .string()
      .max(128)
      .optional()
      .describe('W3C trace context of the work that produced the event, present only while tracing is on; sent on as the `traceparent` message header (docs/observability.md).'),
    tracestate: z.string().max(512).optional().describe('W3C `tracestate` that goes with `traceparent`, when there is one.'),
  })
  .describe('Metadata every event carries; covered by the hash chain.');
export type EventMetadata = z.output<typeof EventMetadata>;

/** Builds the bus envelope for one event type, or for any event with `type` a string and `data` unknown. */
export function recordedEventSchema<T extends z.ZodType<string>, D extends z.ZodType>(type: T, data: D) {
  return z
    .object({
      streamId: z.string().min(1).describe('Event store stream the event belongs to, e.g. `job-job_01jz8k4m2n`.'),
      revision: DecimalString.describe('0-based revision within the stream, as decimal text.'),
      position: DecimalString.describe('Global position in the store, totally ordered, as decimal text.'),
      eventId: EventId,
      type,
      data,
      metadata: EventMetadata,
      recordedAt: Timestamp.describe('When the store recorded the event.'),
      hash: Sha256.describe('Hex sha256 chaining this event to the previous one of its stream (HMAC when a chain key is set).'),
    })
    .describe('A recorded event as the outbox relay publishes it; `Nats-Msg-Id` is its eventId.');
}

/** Any recorded event on the bus; validate `data` with the registry entry of `type`. */
export const RecordedEventEnvelope = recordedEventSchema(z.string().min(1).describe('Event type, e.g. `JobFinished`.'), z.unknown().describe('The event\'s payload.'));
export type RecordedEventEnvelope = z.output<typeof RecordedEventEnvelope>;

/** A recorded event as the event store hands it out (bigint revision and position). */
export interface StoredEventLike {
  streamId: string;
  revision: bigint;
  position: bigint;
  eventId: string;
  type: string;
  data: unknown;
  metadata: EventMetadata;
  recordedAt: string;
  hash: string;
}

/** The bus form of a stored event: bigints become decimal text, nothing else changes. */
export function toBusEvent(event: StoredEventLike): RecordedEventEnvelope {
  return { ...event, revision: event.revision.toString(), position: event.position.toString() };
}

/** Back from the bus form (validated first): decimal text becomes bigint again. */
export function fromBusEvent(envelope: unknown): StoredEventLike {
  const e = RecordedEventEnvelope.parse(envelope);
  return { ...e, revision: BigInt(e.revision), position: BigInt(e.position) };
}

// ── request/reply ─────────────────────────────────────────────────────────────────────────

export const ReplyError = z
  .object({
    code: z
      .string()
      .min(1)
      .describe(`Machine-readable code; new codes may be added, so treat an unknown one by \`retryable\`.\n${REPLY_ERROR_CODES.map((c) => `- \`${c}\`: ${ERROR_CODES[c]}`).join('\n')}`),
    message: z.string().describe('What went wrong, for people.'),
    retryable: z.boolean().optional().describe('Whether the same request may succeed later.'),
    issues: z.array(FieldIssue).optional().describe('For `validation_failed`: each bad field with its fix.'),
  })
  .describe('Why a request failed.');
export type ReplyError = z.output<typeof ReplyError>;

/** The reply to any command or query: `{ ok: true, data }` or `{ ok: false, error }`. */
export function replyEnvelope<D extends z.ZodType>(data: D) {
  return z
    .discriminatedUnion('ok', [
      z.object({ ok: z.literal(true).describe('The request succeeded.'), data }),
      z.object({ ok: z.literal(false).describe('The request failed.'), error: ReplyError }),
    ])
    .describe('Reply to a request: `ok: true` with data, or `ok: false` with an error.');
}
export type Reply<T> = { ok: true; data: T } | { ok: false; error: ReplyError };

/** A success reply. */
export function ok<T>(data: T): Reply<T> {
  return { ok: true, data };
}

/** A failure reply. */
export function fail(error: ReplyError): Reply<never> {
  return { ok: false, error };
}

// ── dead letters ────────────────────────────────────────────────────────────────────────────

export const DEAD_LETTER_REASONS = ['schema_invalid', 'max_deliveries', 'terminal_error'] as const;

export const DeadLetter = z
  .object({
    consumer: z.string().min(1).describe('Durable consumer that gave up on the message.'),
    stream: z.string().min(1).describe('Stream the message came from, e.g. `GPUNET_EVENTS`.'),
    subject: z.string().min(1).describe('Subject the message was published on.'),
    streamSequence: DecimalString.describe('Sequence of the message in its stream.'),
    deliveries: z.int().min(1).describe('How many times it was delivered before giving up.'),
    reason: z
      .enum(DEAD_LETTER_REASONS)
      .describe('`schema_invalid`: the payload failed its schema, or its schema version is not accepted (`error.code` `unsupported_schema_version`; dead-lettered at once); `max_deliveries`: retries ran out; `terminal_error`: the handler said retrying cannot help.'),
    error: z
      .object({
        name: z.string().optional().describe('Error class name, e.g. `ValidationError`.'),
        code: z.string().optional().describe('Error code, e.g. `validation_failed`.'),
        message: HumanText.describe('The error message.'),
        issues: z.array(FieldIssue).optional().describe('For a schema failure: each bad field.'),
      })
      .describe('The last error.'),
    headers: z.record(z.string(), z.array(z.string())).describe('Headers of the original message.'),
    payloadBase64: z.string().describe('The original payload bytes, base64.'),
    deadAt: Timestamp.describe('When the message was dead-lettered.'),
  })
  .describe('A message a consumer gave up on, with why; published on `gpunet.dlq.<consumer>`.');
export type DeadLetter = z.output<typeof DeadLetter>;
