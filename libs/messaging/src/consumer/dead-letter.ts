import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { Headers } from '../conventions.js';
import type { DeadLetterReason } from './outcome.js';

/** The body of a message on the dead-letter stream: everything needed to understand and replay it. */
export interface DeadLetter {
  consumer: string;
  reason: DeadLetterReason;
  /** Where the message came from. */
  original: {
    stream: string;
    streamSequence: number;
    subject: string;
    /** Every header of the original message. */
    headers: Record<string, string[]>;
    /** The original body: as text when it is UTF-8, else base64. */
    payload: string;
    payloadEncoding: 'utf8' | 'base64';
    /** When JetStream stored the original (ISO-8601). */
    storedAt: string;
  };
  eventId?: string;
  type?: string;
  jobId?: string;
  correlationId?: string;
  /** ISO-8601. */
  deadLetteredAt: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Builds the dead letter of `msg`. */
export function deadLetterOf(
  msg: JsMsg,
  consumer: string,
  reason: DeadLetterReason,
  known: { eventId?: string | undefined; type?: string | undefined; jobId?: string | undefined; correlationId?: string | undefined },
  now: Date,
): DeadLetter {
  const headers: Record<string, string[]> = {};
  if (msg.headers) for (const [k, v] of msg.headers) headers[k] = v;
  let payload: string;
  let payloadEncoding: 'utf8' | 'base64';
  try {
    payload = utf8.decode(msg.data);
    payloadEncoding = 'utf8';
  } catch {
    payload = Buffer.from(msg.data).toString('base64');
    payloadEncoding = 'base64';
  }
  const letter: DeadLetter = {
    consumer,
    reason,
    original: { stream: msg.info.stream, streamSequence: msg.seq, subject: msg.subject, headers, payload, payloadEncoding, storedAt: msg.time.toISOString() },
    deadLetteredAt: now.toISOString(),
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
  h.set(Headers.DeadLetterReason, letter.reason.code);
  if (letter.type) h.set(Headers.Type, letter.type);
  if (letter.jobId) h.set(Headers.JobId, letter.jobId);
  if (letter.correlationId) h.set(Headers.CorrelationId, letter.correlationId);
  await js.publish(subject, JSON.stringify(letter), {
    headers: h,
    msgID: `dlq:${letter.consumer}:${letter.original.stream}:${letter.original.streamSequence}`,
  });
}
