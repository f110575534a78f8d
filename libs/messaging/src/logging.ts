import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

let defaultLogger: Logger | undefined;

/** The logger used when none is given: one pino instance per process, level from `GPUNET_LOG_LEVEL` (default `info`). */
export function defaultMessagingLogger(): Logger {
  defaultLogger ??= pino({ name: 'messaging', level: process.env.GPUNET_LOG_LEVEL ?? 'info' });
  return defaultLogger;
}

/** Fields bound on every log line about one message, so a job's story can be followed across services. */
export interface MessageLogFields {
  jobId?: string | undefined;
  correlationId?: string | undefined;
  eventId?: string | undefined;
  type?: string | undefined;
  subject?: string | undefined;
  streamSeq?: number | undefined;
}

/** A child logger with `jobId` and `correlationId` (and the message's identity) bound. */
export function messageLogger(parent: Logger, fields: MessageLogFields): Logger {
  return parent.child({
    jobId: fields.jobId,
    correlationId: fields.correlationId,
    eventId: fields.eventId,
    type: fields.type,
    subject: fields.subject,
    streamSeq: fields.streamSeq,
  });
}
