import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { FieldIssue } from '#errors';
import { Headers } from '../conventions.js';
import type { DeadLetterReason } from './outcome.js';

/**
 * The body of a message on the dead-letter stream (`gpunet.dlq.<consumer>`). Same shape as
 * `DeadLetter` in contracts, plus the event's identity when the body could be decoded.
 */
export interface DeadLetter {
  consumer: string;
  stream: string;
  subject: string;
  /** Sequence of the original in its stream, decimal text. */
  streamSequence: string;
  /** Deliveries before giving up. */
  deliveries: number;
  /** `schema_invalid`: payload failed its schema, was not an event or had a schema version not accepted (at once); `max_deliveries`: retries ran out; `terminal_error`: retrying cannot help. */
  reason: 'schema_invalid' | 'max_deliveries' | 'terminal_error';
  error: { name?: string; code?: string; message: string; issues?: FieldIssue[] };
  /** Every header of the original message. */
  headers: Record<string, string[]>;
  payloadBase64: string;
  /** ISO-8601. */
  deadAt: string;
  eventId?: string;
  type?: string;
  jobId?: string;
  correlationId?: string;
}

const SCHEMA_CODES = new Set(['validation_failed', 'malformed_message', 'unsupported_schema_version']);

/** Builds the dead letter of `msg`. */
export function deadLetterOf(
  msg: JsMsg,
  consumer: string,
  why: DeadLetterReason,
  known: { eventId?: string | undefined; type?: string | undefined; jobId?: string | undefined; correlationId?: string | undefined },
  now: Date,
): DeadLetter {
  const headers: Record<string, string[]> = {};
  if (msg.headers) for (const [k, v] of msg.headers) headers[k] = v;
  const error: DeadLetter['error'] = { code: why.code, message: why.message.slice(0, 2000) };
  if (why.name) error.name = why.name;
  if (why.issues) error.issues = [...why.issues];
  const letter: DeadLetter = {
    consumer,
    stream: msg.info.stream,
    subject: msg.subject,
    streamSequence: String(msg.seq),
    deliveries: why.deliveryCount,
    reason: why.exhausted ? 'max_deliveries' : SCHEMA_CODES.has(why.code) ? 'schema_invalid' : 'terminal_error',
    error,
    headers,
    payloadBase64: Buffer.from(msg.data).toString('base64'),
    deadAt: now.toISOString(),
  };
  if (known.eventId) letter.eventId = known.eventId;
  if (known.type) letter.type = known.type;
  if (known.jobId) letter.jobId = known.jobId;
  if (known.correlationId) letter.correlationId = known.correlationId;
  return letter;
}

/**
 * Publishes a dead letter and waits for its PubAck. Its message id is derived from the original's
 * stream and sequence, so dead-lettering the same message again (after a crash before the
 * original was terminated) stores it once.
 */
export async function publishDeadLetter(js: JetStreamClient, subject: string, letter: DeadLetter): Promise<void> {
  const h = natsHeaders();
  h.set(Headers.DeadLetterReason, letter.reason);
  if (letter.type) h.set(Headers.Type, letter.type);
  if (letter.jobId) h.set(Headers.JobId, letter.jobId);
  if (letter.correlationId) h.set(Headers.CorrelationId, letter.correlationId);
  await js.publish(subject, JSON.stringify(letter), {
    headers: h,
    msgID: `dlq:${letter.consumer}:${letter.stream}:${letter.streamSequence}`,
  });
}
