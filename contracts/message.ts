/**
 * What every message definition holds: name, kind, schema version, subject, schema(s), and who
 * produces or answers it. `define*` derive the subject from the name, so it cannot drift.
 *
 * Versioning: `version` starts at 1. Additive changes (a new optional field, a new event) keep
 * it; a breaking change (removing or renaming a field, tightening a rule, changing a meaning)
 * bumps it, and consumers handle both versions until every producer has moved.
 */
import type { z } from 'zod';
import { SUBJECT_PREFIX, commandSubject, eventTypeSubjects, querySubject, type ServiceName } from './subjects.js';

export type MessageKind = 'command' | 'event' | 'query';

/** Queries every service answers (e.g. `Health`) are addressed with this in place of a service name. */
export const EVERY_SERVICE = '*';

interface DefinitionBase<N extends string, S extends z.ZodType> {
  readonly name: N;
  readonly kind: MessageKind;
  /** Schema version, an integer ≥ 1; see the versioning rule above. */
  readonly version: number;
  /** NATS subject; a query answered by every service has `*` in the service position. */
  readonly subject: string;
  /** Schema of the payload: an event's `data`, a command's or query's request. */
  readonly schema: S;
  /** One or two sentences for people and for the AsyncAPI document. */
  readonly description: string;
}

export interface EventDefinition<N extends string = string, S extends z.ZodType = z.ZodType> extends DefinitionBase<N, S> {
  readonly kind: 'event';
  /** Every subject it is published on: `gpunet.evt.<name>.<team>.<jobId>` (`eventSubject` builds one). */
  readonly subject: `gpunet.evt.${N}.*.*`;
  /** Services that append this event to their own streams. */
  readonly producers: readonly ServiceName[];
}

export interface CommandDefinition<N extends string = string, S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType>
  extends DefinitionBase<N, S> {
  readonly kind: 'command';
  readonly subject: `gpunet.cmd.${N}`;
  /** Schema of the reply's `data` when `ok` is true. */
  readonly replySchema: R;
  /** The service that handles the command. */
  readonly handler: ServiceName;
}

export interface QueryDefinition<N extends string = string, S extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType>
  extends DefinitionBase<N, S> {
  readonly kind: 'query';
  /** Schema of the reply's `data` when `ok` is true. */
  readonly replySchema: R;
  /** The service that answers, or `*` when every service does. */
  readonly service: ServiceName | typeof EVERY_SERVICE;
}

export type MessageDefinition = EventDefinition | CommandDefinition | QueryDefinition;

/** Defines an event; its subjects are `gpunet.evt.<name>.<team>.<jobId>`. */
export function defineEvent<const N extends string, S extends z.ZodType>(def: {
  name: N;
  version: number;
  description: string;
  producers: readonly ServiceName[];
  schema: S;
}): EventDefinition<N, S> {
  return Object.freeze({ ...checked(def), kind: 'event', subject: eventTypeSubjects(def.name) });
}

/** Defines a command; its subject is `gpunet.cmd.<name>`. */
export function defineCommand<const N extends string, S extends z.ZodType, R extends z.ZodType>(def: {
  name: N;
  version: number;
  description: string;
  handler: ServiceName;
  schema: S;
  replySchema: R;
}): CommandDefinition<N, S, R> {
  return Object.freeze({ ...checked(def), kind: 'command', subject: commandSubject(def.name) });
}

/** Defines a query; its subject is `gpunet.qry.<service>.<name>` (`*` for every service). */
export function defineQuery<const N extends string, S extends z.ZodType, R extends z.ZodType>(def: {
  name: N;
  version: number;
  description: string;
  service: ServiceName | typeof EVERY_SERVICE;
  schema: S;
  replySchema: R;
}): QueryDefinition<N, S, R> {
  const subject = def.service === EVERY_SERVICE ? `${SUBJECT_PREFIX.query}.${EVERY_SERVICE}.${def.name}` : querySubject(def.service, def.name);
  return Object.freeze({ ...checked(def), kind: 'query', subject });
}

function checked<D extends { name: string; version: number }>(def: D): D {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(def.name)) throw new RangeError(`message name must be PascalCase: ${def.name}`);
  if (!Number.isSafeInteger(def.version) || def.version < 1) throw new RangeError(`${def.name}: version must be an integer ≥ 1`);
  return def;
}
