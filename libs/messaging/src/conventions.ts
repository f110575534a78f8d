/**
 * Bus naming conventions. `contracts/` will export the same constants; until then every option
 * that uses one of these takes it as a default, so the messaging library never imports
 * `#contracts` and works with any zod schemas handed to it.
 */

/** Stream holding every domain event (`gpunet.evt.>`). */
export const EVENTS_STREAM = 'GPUNET_EVENTS';
/** Subject prefix of events: `gpunet.evt.<EventType>`. */
export const EVENT_SUBJECT_PREFIX = 'gpunet.evt.';
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

/** `gpunet.evt.<type>` */
export function eventSubject(type: string, prefix = EVENT_SUBJECT_PREFIX): string {
  return `${prefix}${type}`;
}

/** `gpunet.dlq.<consumer>` */
export function deadLetterSubject(consumer: string, prefix = DEAD_LETTER_SUBJECT_PREFIX): string {
  return `${prefix}${consumer}`;
}
