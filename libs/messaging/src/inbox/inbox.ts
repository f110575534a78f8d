/**
 * Remembers which events a consumer has handled, so that a redelivered duplicate (an ack that got
 * lost, or the relay re-publishing after JetStream's duplicate window) is acked without being
 * handled again. Keyed by consumer name and event id (never by `Nats-Msg-Id` or stream sequence:
 * a re-publish gets a new sequence and may get a new message id).
 */
export interface Inbox {
  /** Whether `record(consumer, eventId)` has happened. */
  has(consumer: string, eventId: string): boolean | Promise<boolean>;
  /** Records that `consumer` handled `eventId`; resolves once the record is durable (for durable inboxes). */
  record(consumer: string, eventId: string): Promise<void>;
  /** Releases resources the inbox owns. */
  close(): Promise<void>;
}
