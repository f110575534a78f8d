/**
 * NATS names: streams, subjects, services and headers. Every subject is built here; nothing
 * else spells one out.
 *
 * - events:    `gpunet.evt.<EventType>.<team>.<jobId>`  JetStream stream `GPUNET_EVENTS` (`gpunet.evt.>`);
 *   `_` stands for the team or job of an event that has none (ids never start with `_`)
 * - commands:  `gpunet.cmd.<CommandName>`         NATS request/reply, answered by intake
 * - queries:   `gpunet.qry.<service>.<QueryName>` NATS request/reply, answered by that service
 * - dead letters: `gpunet.dlq.<consumer>`         JetStream stream `GPUNET_DLQ` (`gpunet.dlq.>`)
 * - heartbeats: `gpunet.hb.<nodeId>`               core NATS
 * - job logs:  `gpunet.logs.<team>.<jobId>.<nodeId>` JetStream stream `GPUNET_LOGS`
 * - team feed: `gpunet.feed.<team>.<jobId>`       core NATS, from intake: "the team's feed moved" (read it with `ReadFeed`)
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
  feed: `${SUBJECT_ROOT}.feed`,
} as const;

/** The JetStream streams, with the subjects each one captures. Retention and limits live in `deploy/`. */
export const STREAMS = {
  events: { name: 'GPUNET_EVENTS', subjects: [`${SUBJECT_PREFIX.event}.>`] },
  deadLetters: { name: 'GPUNET_DLQ', subjects: [`${SUBJECT_PREFIX.deadLetter}.>`] },
  /** Job log lines, `gpunet.logs.<team>.<jobId>.<nodeId>`; limited by age and size in `deploy/`. */
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

/**
 * The token that stands for the team or the job of an event that has none (a price list, a node
 * lost). Ids start with a letter or digit, so it is never a real team or job.
 */
export const NO_SCOPE = '_';

/** The team and job an event concerns (its metadata's `team` and `jobId`), when it has them. */
export interface EventScope {
  team?: string | undefined;
  jobId?: string | undefined;
}

/**
 * `gpunet.evt.<type>.<team>.<jobId>`, e.g. `gpunet.evt.JobFinished.team-ml.job_01jz8k4m2n`; `_` for
 * a team or job the event does not have (`gpunet.evt.PriceListPublished._._`). The type comes
 * first so that one writer's publish rights and one type's filter are one pattern each
 * ({@link eventTypeSubjects}); team and job follow so that a team's or a job's events are one
 * filter too ({@link teamEventSubjects}, {@link jobEventSubjects}), and so NATS subject mappings
 * can partition consumers by team or job.
 */
export function eventSubject<const T extends string>(type: T, scope: EventScope = {}): `gpunet.evt.${T}.${string}.${string}` {
  return `${SUBJECT_PREFIX.event}.${token(type) as T}.${scopeToken(scope.team)}.${scopeToken(scope.jobId)}`;
}

/**
 * The partition of an event when the network's events are split into `partitions` (decision
 * 0030): FNV-1a (32 bit) of its job id's UTF-8 bytes modulo `partitions`, so every event of one
 * job is in one partition; 0 for an event of no job (a price list, a node lost). Always 0 with
 * one partition.
 */
export function eventPartition(jobId: string | undefined, partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) throw new RangeError(`partitions must be a whole number ≥ 1, got ${partitions}`);
  if (partitions === 1 || jobId === undefined || jobId === '') return 0;
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(jobId)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/**
 * Where an event is published on a network of `partitions` event partitions: {@link eventSubject}
 * with one partition (unchanged), else that subject with the event's {@link eventPartition} as a
 * last token — `gpunet.evt.JobFinished.team-ml.job_01jz8k4m2n.3` — so one consumer's filter
 * ({@link partitionEventSubjects}) is one partition on nats-server 2.9.
 */
export function partitionedEventSubject(type: string, scope: EventScope, partitions: number): string {
  const subject = eventSubject(type, scope);
  return partitions === 1 ? subject : `${subject}.${eventPartition(scope.jobId, partitions)}`;
}

/** `gpunet.evt.*.*.*.<partition>`: every event of one partition (a partitioned consumer's filter). */
export function partitionEventSubjects(partition: number): string {
  return `${SUBJECT_PREFIX.event}.*.*.*.${partition}`;
}

/** `gpunet.evt.<type>.*.*`: every event of one type (a filter or a permission). */
export function eventTypeSubjects<const T extends string>(type: T): `gpunet.evt.${T}.*.*` {
  return `${SUBJECT_PREFIX.event}.${token(type) as T}.*.*`;
}

/** `gpunet.evt.*.<team>.*`: every event of one team. */
export function teamEventSubjects<const T extends string>(team: T): `gpunet.evt.*.${T}.*` {
  return `${SUBJECT_PREFIX.event}.*.${token(team) as T}.*`;
}

/** `gpunet.evt.*.<team>.<jobId>`: every event of one job. */
export function jobEventSubjects<const T extends string, const J extends string>(team: T, jobId: J): `gpunet.evt.*.${T}.${J}` {
  return `${SUBJECT_PREFIX.event}.*.${token(team) as T}.${token(jobId) as J}`;
}

/** The parts of an event subject (with its partition when it has one), or undefined when `subject` is not one. */
export function parseEventSubject(subject: string): { type: string; team?: string; jobId?: string; partition?: number } | undefined {
  const parts = subject.split('.');
  if (parts.length !== 5 && !(parts.length === 6 && /^(0|[1-9][0-9]{0,5})$/.test(parts[5]!))) return undefined;
  if (`${parts[0]}.${parts[1]}` !== SUBJECT_PREFIX.event || !parts.slice(2, 5).every((p) => TOKEN.test(p))) return undefined;
  const [, , type, team, jobId, partition] = parts as [string, string, string, string, string, string | undefined];
  return { type, ...(team !== NO_SCOPE ? { team } : {}), ...(jobId !== NO_SCOPE ? { jobId } : {}), ...(partition !== undefined ? { partition: Number(partition) } : {}) };
}

function scopeToken(id: string | undefined): string {
  if (id === undefined || id === '') return NO_SCOPE;
  if (id === NO_SCOPE) throw new InvalidSubjectTokenError(id);
  return token(id);
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
 * `gpunet.feed.<team>.<jobId>`: intake's word that the team's feed holds a new entry of that job
 * (core NATS, not stored: the entries themselves are read with `gpunet.qry.intake.ReadFeed` from
 * the store's positions). A team may subscribe to `gpunet.feed.<team>.>` only.
 */
export function feedSubject<const T extends string, const J extends string>(team: T, jobId: J): `gpunet.feed.${T}.${J}` {
  return `${SUBJECT_PREFIX.feed}.${token(team) as T}.${token(jobId) as J}`;
}

/** `gpunet.feed.<team>.>`: every notification of one team's feed. */
export function teamFeedSubjects<const T extends string>(team: T): `gpunet.feed.${T}.>` {
  return `${SUBJECT_PREFIX.feed}.${token(team) as T}.>`;
}

/**
 * `gpunet.logs.<team>.<jobId>.<nodeId>`: log lines of a job's runs on one node, in JetStream
 * stream `GPUNET_LOGS`. The team is in the subject so that NATS permissions can let a team read
 * `gpunet.logs.<team>.>` only; the node so that a node may publish only `gpunet.logs.*.*.<nodeId>`
 * and a reader can keep only the lines of nodes the job was placed on.
 */
export function logSubject<const T extends string, const J extends string, const N extends string>(team: T, jobId: J, nodeId: N): `gpunet.logs.${T}.${J}.${N}` {
  return `${SUBJECT_PREFIX.logs}.${token(team) as T}.${token(jobId) as J}.${token(nodeId) as N}`;
}

/** `gpunet.logs.<team>.<jobId>.*`: a job's log lines from every node. */
export function jobLogSubjects<const T extends string, const J extends string>(team: T, jobId: J): `gpunet.logs.${T}.${J}.*` {
  return `${SUBJECT_PREFIX.logs}.${token(team) as T}.${token(jobId) as J}.*`;
}

/** The node id of a log subject (its last token), or undefined. */
export function nodeOfLogSubject(subject: string): string | undefined {
  const parts = subject.split('.');
  return parts.length === 5 && `${parts[0]}.${parts[1]}` === SUBJECT_PREFIX.logs ? parts[4] : undefined;
}
