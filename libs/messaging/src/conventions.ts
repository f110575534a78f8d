/**
 * Bus naming conventions the messaging library defaults to. Event subjects are built by
 * contracts' `eventSubject` (see `defaultEventSubject` in bus-event.ts); the library works with
 * any zod schemas handed to it.
 */

/** Stream holding every domain event (`gpunet.evt.>`). */
export const EVENTS_STREAM = 'GPUNET_EVENTS';
/** Subject prefix of commands: `gpunet.cmd.<Name>`. */
export const COMMAND_SUBJECT_PREFIX = 'gpunet.cmd.';
/** Subject prefix of queries: `gpunet.qry.<service>.<Query>`. */
export const QUERY_SUBJECT_PREFIX = 'gpunet.qry.';
/** Stream of dead letters (`gpunet.dlq.>`). */
export const DEAD_LETTER_STREAM = 'GPUNET_DLQ';
/** Subject prefix of dead letters: `gpunet.dlq.<consumer>`. */
export const DEAD_LETTER_SUBJECT_PREFIX = 'gpunet.dlq.';

/** Header names carried by every bus message that concerns an event. */
export const Headers = {
  /** JetStream de-duplication id; always the event id for events. */
  MsgId: 'Nats-Msg-Id',
  Type: 'Gpunet-Type',
  JobId: 'Gpunet-Job-Id',
  CorrelationId: 'Gpunet-Correlation-Id',
  /** On dead letters: the machine-readable reason code. */
  DeadLetterReason: 'Gpunet-Dead-Letter-Reason',
} as const;

/** `gpunet.dlq.<consumer>` */
export function deadLetterSubject(consumer: string, prefix = DEAD_LETTER_SUBJECT_PREFIX): string {
  return `${prefix}${consumer}`;
}
