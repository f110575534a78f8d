/**
 * The registry: every command, event and query by name, with its kind, version, subject and
 * schemas. Services look messages up here instead of spelling names or subjects out.
 */
import { z } from 'zod';
import { auditEvents, auditQueries } from './audit.js';
import { billingCommands, billingQueries } from './billing.js';
import { budgetCommands, budgetEvents, budgetQueries } from './budgets.js';
import { commands } from './commands.js';
import { recordedEventSchema } from './envelope.js';
import { digestCommands, digestEvents } from './digests.js';
import { dataEvents } from './events/data.js';
import { estimateEvents } from './events/estimates.js';
import { jobEvents } from './events/job.js';
import { ledgerEvents } from './events/ledger.js';
import { leadershipEvents } from './events/leadership.js';
import { nodeEvents } from './events/nodes.js';
import { feedQueries } from './feed.js';
import { formatIssues, type FieldIssue } from './issues.js';
import { keyCommands, keyEvents, keyQueries } from './keys.js';
import { EVERY_SERVICE, type CommandDefinition, type EventDefinition, type MessageDefinition, type QueryDefinition } from './message.js';
import { queries } from './queries.js';
import { quotaCommands, quotaEvents, quotaQueries } from './quotas.js';
import { reportCommands, reportQueries } from './reports.js';
import { nodeAdminCommands, nodeAdminQueries } from './node-admin.js';
import { reportEvents } from './events/reports.js';

type ByName<D extends readonly { name: string }[]> = { readonly [E in D[number] as E['name']]: E };

function byName<const D extends readonly { name: string }[]>(defs: D): ByName<D> {
  const out: Record<string, D[number]> = {};
  for (const def of defs) {
    if (def.name in out) throw new RangeError(`message defined twice: ${def.name}`);
    out[def.name] = def;
  }
  return Object.freeze(out) as ByName<D>;
}

/** Every event definition by type. */
export const Events = byName([...jobEvents, ...estimateEvents, ...dataEvents, ...nodeEvents, ...ledgerEvents, ...auditEvents, ...digestEvents, ...keyEvents, ...reportEvents, ...quotaEvents, ...budgetEvents, ...leadershipEvents]);
/** Every command definition by name. */
export const Commands = byName([...commands, ...billingCommands, ...digestCommands, ...keyCommands, ...reportCommands, ...nodeAdminCommands, ...quotaCommands, ...budgetCommands]);
/** Every query definition by name. */
export const Queries = byName([...queries, ...feedQueries, ...auditQueries, ...billingQueries, ...keyQueries, ...reportQueries, ...nodeAdminQueries, ...quotaQueries, ...budgetQueries]);

export type EventType = keyof typeof Events;
export type CommandName = keyof typeof Commands;
export type QueryName = keyof typeof Queries;
export type MessageName = EventType | CommandName | QueryName;

function names<T extends object>(defs: T): { readonly [K in keyof T]: K } {
  return Object.freeze(Object.fromEntries(Object.keys(defs).map((k) => [k, k]))) as { readonly [K in keyof T]: K };
}

/** Event type names as constants: `EventTypes.JobFinished === 'JobFinished'`. */
export const EventTypes = names(Events);
/** Command names as constants. */
export const CommandNames = names(Commands);
/** Query names as constants. */
export const QueryNames = names(Queries);

/** The `data` of an event type, after parsing (defaults filled). */
export type EventData<T extends EventType> = z.output<(typeof Events)[T]['schema']>;
/** A command's request, after parsing. */
export type CommandRequest<N extends CommandName> = z.output<(typeof Commands)[N]['schema']>;
/** A command's reply data. */
export type CommandReply<N extends CommandName> = z.output<(typeof Commands)[N]['replySchema']>;
/** A query's request, after parsing. */
export type QueryRequest<N extends QueryName> = z.output<(typeof Queries)[N]['schema']>;
/** A query's reply data. */
export type QueryReply<N extends QueryName> = z.output<(typeof Queries)[N]['replySchema']>;
/** Any event as `{ type, data }`, narrowed by `type`. */
export type AnyEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];

/** Every message definition: commands, then events, then queries. */
export const MESSAGES: readonly MessageDefinition[] = Object.freeze([
  ...(Object.values(Commands) as CommandDefinition[]),
  ...(Object.values(Events) as EventDefinition[]),
  ...(Object.values(Queries) as QueryDefinition[]),
]);

const byAnyName = new Map<string, MessageDefinition>(MESSAGES.map((m) => [m.name, m]));

/** Thrown when a name is not in the registry. */
export class UnknownMessageError extends Error {
  constructor(readonly messageName: string) {
    super(`unknown message: ${JSON.stringify(messageName)}`);
    this.name = 'UnknownMessageError';
  }
}

/** The definition of a message by name, or undefined. */
export function findMessage(name: string): MessageDefinition | undefined {
  return byAnyName.get(name);
}

/** The definition of a message by name; throws {@link UnknownMessageError} when there is none. */
export function getMessage(name: string): MessageDefinition {
  const def = byAnyName.get(name);
  if (!def) throw new UnknownMessageError(name);
  return def;
}

/** Whether `name` is a known event type. */
export function isEventType(name: string): name is EventType {
  return Object.hasOwn(Events, name);
}

/** Result of validating a payload against its schema. */
export type Validation<T> = { ok: true; value: T } | { ok: false; issues: FieldIssue[] };

/** Validates an event's `data` against the schema of its type (unknown types are an issue, not a throw). */
export function validateEventData<T extends EventType>(type: T, data: unknown): Validation<EventData<T>>;
export function validateEventData(type: string, data: unknown): Validation<unknown>;
export function validateEventData(type: string, data: unknown): Validation<unknown> {
  if (!isEventType(type)) return { ok: false, issues: [{ path: 'type', message: `unknown event type ${JSON.stringify(type)}` }] };
  const parsed = (Events[type].schema as z.ZodType).safeParse(data);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, issues: formatIssues(parsed.error) };
}

/** The bus envelope schema of one event type: a recorded event whose `data` is that event. */
export function eventEnvelopeSchema<T extends EventType>(type: T) {
  const def = Events[type];
  return recordedEventSchema(z.literal(type).describe(`Always \`${type}\`.`), def.schema.describe(def.description) as (typeof Events)[T]['schema']);
}

/**
 * The schema versions a consumer of `name` accepts in `Gpunet-Schema-Version` (and an event's
 * `metadata.schemaVersion`): its current version. When a message's version is bumped, its
 * consumers accept the old one beside the new until every producer has moved (see README,
 * Versioning); list both here then. Undefined for a name the registry does not hold.
 */
export function acceptedSchemaVersions(name: string): readonly number[] | undefined {
  const def = byAnyName.get(name);
  return def ? [def.version] : undefined;
}

const requestBySubject = new Map<string, MessageDefinition>(MESSAGES.filter((m) => m.kind !== 'event').map((m) => [m.subject, m]));

/**
 * The command or query a request subject is for: `gpunet.cmd.SubmitJob` → SubmitJob,
 * `gpunet.qry.ledger.Health` → Health (a query every service answers). Undefined otherwise.
 */
export function findRequestBySubject(subject: string): CommandDefinition | QueryDefinition | undefined {
  const exact = requestBySubject.get(subject);
  if (exact) return exact as CommandDefinition | QueryDefinition;
  const parts = subject.split('.');
  if (parts.length !== 4) return undefined;
  const every = requestBySubject.get([parts[0], parts[1], EVERY_SERVICE, parts[3]].join('.'));
  return every as QueryDefinition | undefined;
}
