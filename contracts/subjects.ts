/**
 * NATS names: streams, subjects, services and headers. Every subject is built here; nothing
 * else spells one out.
 *
 * - events:    `gpunet.evt.<EventType>`           JetStream stream `GPUNET_EVENTS` (`gpunet.evt.>`)
 * - commands:  `gpunet.cmd.<CommandName>`         NATS request/reply, answered by intake
 * - queries:   `gpunet.qry.<service>.<QueryName>` NATS request/reply, answered by that service
 * - dead letters: `gpunet.dlq.<consumer>`         JetStream stream `GPUNET_DLQ` (`gpunet.dlq.>`)
 * - heartbeats: `gpunet.hb.<nodeId>`               core NATS
 * - job logs:  `gpunet.logs.<team>.<jobId>`       JetStream stream `GPUNET_LOGS`
 *
 * Who may publish or subscribe each is in `deploy/nats-permissions.yaml` (nats-server enforces it).
 */

/** Root token of every gpunet subject. */
export const SUBJECT_ROOT = 'gpunet';

/** Subject prefixes (without the trailing dot). */
export const SUBJECT_PREFIX = {
  event: `${SUBJECT_ROOT}.evt`,
  command: `${SUBJECT_ROOT}.cmd`,
  query: `${SUBJECT_ROOT}.qry`,
  deadLetter: `${SUBJECT_ROOT}.dlq`,
  heartbeat: `${SUBJECT_ROOT}.hb`,
  logs: `${SUBJECT_ROOT}.logs`,
} as const;

/** The JetStream streams, with the subjects each one captures. Retention and limits live in `deploy/`. */
export const STREAMS = {
  events: { name: 'GPUNET_EVENTS', subjects: [`${SUBJECT_PREFIX.event}.>`] },
  deadLetters: { name: 'GPUNET_DLQ', subjects: [`${SUBJECT_PREFIX.deadLetter}.>`] },
  /** Job log lines, `gpunet.logs.<team>.<jobId>`; limited by age and size in `deploy/`. */
  logs: { name: 'GPUNET_LOGS', subjects: [`${SUBJECT_PREFIX.logs}.>`] },
} as const;

/** Name of the event stream. */
export const EVENTS_STREAM = STREAMS.events.name;
/** Name of the dead-letter stream. */
export const DLQ_STREAM = STREAMS.deadLetters.name;
/** Name of the job-log stream. */
export const LOGS_STREAM = STREAMS.logs.name;

/** The services of a gpunet network; queries are addressed to one of them. */
export const SERVICE_NAMES = ['intake', 'placement', 'execution', 'storage', 'ledger'] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

/** NATS message headers gpunet sets. Values are strings on the wire. */
export const HEADERS = {
  /** JetStream de-duplication id: the event id, so re-publishing an event is harmless. */
  msgId: 'Nats-Msg-Id',
  /** Message name, e.g. `JobFinished`. */
  type: 'Gpunet-Type',
  /** The job the message concerns, when there is one. */
  jobId: 'Gpunet-Job-Id',
  /** Ties together every message caused by one request. */
  correlationId: 'Gpunet-Correlation-Id',
  /** The message that directly caused this one. */
  causationId: 'Gpunet-Causation-Id',
  /** Schema version of the payload (decimal), see the registry. */
  schemaVersion: 'Gpunet-Schema-Version',
  /** `Bearer <team API key>` on commands and team-scoped queries sent to intake. */
  authorization: 'Authorization',
  /** Makes a `SubmitJob` safe to retry; same meaning as the HTTP header. */
  idempotencyKey: 'Idempotency-Key',
  /**
   * On a submit with a deadline: `reject` (default) refuses a deadline the current plan cannot
   * meet (400 naming `request.deadline`); `warn` accepts the job with a warning in the reply.
   * Same meaning as the HTTP header.
   */
  deadlinePolicy: 'Gpunet-Deadline-Policy',
} as const;
export type HeaderName = (typeof HEADERS)[keyof typeof HEADERS];

/** Thrown when a name cannot be one token of a NATS subject. */
export class InvalidSubjectTokenError extends Error {
  constructor(readonly token: string) {
    super(`not a valid NATS subject token: ${JSON.stringify(token)} (use letters, digits, _ and -)`);
    this.name = 'InvalidSubjectTokenError';
  }
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

function token(name: string): string {
  if (!TOKEN.test(name)) throw new InvalidSubjectTokenError(name);
  return name;
}

/** `gpunet.evt.<type>`, e.g. `gpunet.evt.JobFinished`. */
export function eventSubject<const T extends string>(type: T): `gpunet.evt.${T}` {
  return `${SUBJECT_PREFIX.event}.${token(type) as T}`;
}

/** `gpunet.cmd.<name>`, e.g. `gpunet.cmd.SubmitJob`. */
export function commandSubject<const N extends string>(name: N): `gpunet.cmd.${N}` {
  return `${SUBJECT_PREFIX.command}.${token(name) as N}`;
}

/** `gpunet.qry.<service>.<name>`, e.g. `gpunet.qry.intake.GetJob`. */
export function querySubject<const S extends ServiceName, const N extends string>(service: S, name: N): `gpunet.qry.${S}.${N}` {
  return `${SUBJECT_PREFIX.query}.${token(service) as S}.${token(name) as N}`;
}

/** `gpunet.dlq.<consumer>`: where a consumer's poison messages go. */
export function deadLetterSubject<const C extends string>(consumer: C): `gpunet.dlq.${C}` {
  return `${SUBJECT_PREFIX.deadLetter}.${token(consumer) as C}`;
}

/** `gpunet.hb.<nodeId>`: an agent's heartbeats, core NATS only (not stored: liveness, not history). */
export function heartbeatSubject<const N extends string>(nodeId: N): `gpunet.hb.${N}` {
  return `${SUBJECT_PREFIX.heartbeat}.${token(nodeId) as N}`;
}

/**
 * `gpunet.logs.<team>.<jobId>`: log lines of a job's runs, in JetStream stream `GPUNET_LOGS`. The
 * team is in the subject so that NATS permissions can let a team read `gpunet.logs.<team>.>` only.
 */
export function logSubject<const T extends string, const J extends string>(team: T, jobId: J): `gpunet.logs.${T}.${J}` {
  return `${SUBJECT_PREFIX.logs}.${token(team) as T}.${token(jobId) as J}`;
}
