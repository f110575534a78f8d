/**
 * The NATS permissions of a gpunet network as data: `deploy/nats-permissions.yaml` holds one
 * template per identity kind; {@link renderPermissions} fills one in for an identity. Pure: no
 * I/O (the file is read by {@link loadPermissionTemplates}).
 */
import { Commands, Events, Queries, SERVICE_NAMES, type ServiceName } from '#contracts';
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import { z } from 'zod';

/** A permission template or a rendered one is wrong: the message names the field and the fix. */
export class PermissionsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermissionsError';
  }
}

const Rules = z
  .object({
    publish: z.array(z.string().min(1)).default([]),
    subscribe: z.array(z.string().min(1)).default([]),
  })
  .strict();

const Kind = Rules.extend({
  allow_responses: z.boolean().default(false),
  each_team: Rules.optional(),
  each_node: Rules.optional(),
}).strict();

const ServiceExtra = Rules.extend({
  each_team: Rules.optional(),
  each_node: Rules.optional(),
  /** Durables the service runs beside the one named after it: every rule naming `{durable}` is rendered for each too. */
  durables: z.array(z.string().regex(/^[A-Za-z0-9_-]+$/, 'a durable name is letters, digits, _ and -')).default([]),
}).strict();

export const PermissionTemplates = z
  .object({
    common: Rules.default({ publish: [], subscribe: [] }),
    kinds: z
      .object({
        service: Kind,
        services: z.record(z.string(), ServiceExtra).default({}),
        node: Kind,
        team: Kind,
        operator: Kind,
        /** Optional: a network without it has no door for joining machines (decision 0022). */
        joiner: Kind.optional(),
      })
      .strict(),
  })
  .strict();
export type PermissionTemplates = z.output<typeof PermissionTemplates>;

/** Who connects: kind and id (`service`/`ledger`, `node`/`node-1`, `team`/`ml`, `operator`). */
export interface IdentityRef {
  kind: 'service' | 'node' | 'team' | 'operator' | 'joiner';
  /** Service name, node id or team id; none for the operator. */
  id?: string;
}

/** One identity's rendered permissions, as nats-server takes them. */
export interface RenderedPermissions {
  publish: string[];
  subscribe: string[];
  allowResponses: boolean;
}

/** The identity's name: `svc-<service>`, `node-<nodeId>`, `team-<team>`, `operator` (as in libs/identity). */
export function identityNameOf(ref: IdentityRef): string {
  switch (ref.kind) {
    case 'service':
      return `svc-${ref.id}`;
    case 'node':
      return `node-${ref.id}`;
    case 'team':
      return `team-${ref.id}`;
    case 'operator':
      return ref.id ? `operator-${ref.id}` : 'operator';
    case 'joiner':
      return 'joiner';
  }
}

/** Parses the templates' YAML text; errors name the field. */
export function parsePermissionTemplates(text: string, source = 'nats-permissions.yaml'): PermissionTemplates {
  let data: unknown;
  try {
    data = YAML.parse(text);
  } catch (err) {
    throw new PermissionsError(`${source} is not YAML: ${(err as Error).message}`, { cause: err });
  }
  const parsed = PermissionTemplates.safeParse(data);
  if (!parsed.success) {
    throw new PermissionsError(`${source} is not a permissions file: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}

/** Reads and parses `deploy/nats-permissions.yaml` (or another templates file). */
export async function loadPermissionTemplates(path: string): Promise<PermissionTemplates> {
  return parsePermissionTemplates(await readFile(path, 'utf8'), path);
}

const ID = /^[A-Za-z0-9_-]+$/;

function serviceOf(name: string, where: string): ServiceName {
  if (!(SERVICE_NAMES as readonly string[]).includes(name)) throw new PermissionsError(`${where}: no service \`${name}\` (one of ${SERVICE_NAMES.join(', ')})`);
  return name as ServiceName;
}

/** `@events-of:<service>` and friends → the subjects contracts/ gives them. Anything else passes through. */
function expandMacro(subject: string, where: string): string[] {
  const m = /^@(events|commands|queries)-of:(.+)$/.exec(subject);
  if (!m) {
    if (subject.startsWith('@')) throw new PermissionsError(`${where}: unknown macro \`${subject}\` (use @events-of:, @commands-of: or @queries-of: a service)`);
    return [subject];
  }
  const [, what, target] = m;
  // A service that writes no events of its own (e.g. the recorder, which writes execution's) expands to nothing.
  if (what === 'events') return target === 'recorder' ? [] : Object.values(Events).filter((e) => (e.producers as readonly string[]).includes(serviceOf(target!, where))).map((e) => e.subject);
  if (what === 'commands') return Object.values(Commands).filter((c) => c.handler === serviceOf(target!, where)).map((c) => c.subject);
  return Object.values(Queries).filter((q) => q.service === serviceOf(target!, where)).map((q) => q.subject);
}

/** Replaces `{key}` by its value; a placeholder with no value is an error naming it. */
function fill(subject: string, values: Record<string, string>, where: string): string {
  const out = subject.replace(/\{([a-z_]+)\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined) throw new PermissionsError(`${where}: placeholder {${key}} in \`${subject}\` has no value for this identity (it has ${Object.keys(values).map((k) => `{${k}}`).join(', ')})`);
    return value;
  });
  if (/[{}]/.test(out)) throw new PermissionsError(`${where}: \`${subject}\` has a malformed placeholder (write {name}, {service}, {node}, {team}, {durable} or {standing})`);
  return out;
}

/** A durable GPUNET_EVENTS keeps its messages for (decision 0038): `{standing}` is rendered once per durable. */
export interface StandingDurable {
  durable: string;
  filter: string;
}

/**
 * The durables deploy/topology.yaml's GPUNET_EVENTS keeps its messages for on a network of
 * `eventPartitions` partitions: storage's two (each filtered to the one event type it handles,
 * decision 0054), placement's and the ledger's, one per partition when split.
 */
export function standingDurables(eventPartitions = 1): StandingDurable[] {
  const ledger =
    eventPartitions > 1
      ? Array.from({ length: eventPartitions }, (_, i) => ({ durable: `ledger-p${i}`, filter: `gpunet.evt.*.*.*.${i}` }))
      : [{ durable: 'ledger', filter: 'gpunet.evt.>' }];
  return [
    { durable: 'storage-released', filter: 'gpunet.evt.ComputeReleased.>' },
    { durable: 'storage', filter: 'gpunet.evt.JobSubmitted.>' },
    { durable: 'placement', filter: 'gpunet.evt.>' },
    ...ledger,
  ];
}

function expand(list: readonly string[], values: Record<string, string>, where: string, standing: readonly StandingDurable[] = []): string[] {
  return list.flatMap((s) =>
    s.includes('{standing')
      ? standing.flatMap((d) => expandMacro(fill(s, { ...values, standing: d.durable }, where), where))
      : expandMacro(fill(s, values, where), where),
  );
}

/**
 * The permissions of one identity: the common rules, its kind's template, a service's own
 * extras, the `each_team` rules once per team in `teams` and the `each_node` rules once per node
 * in `nodes` (`{node}` filled; for the control plane's rights on each node's own bucket). Deny by
 * default: only what is listed is allowed. With `eventPartitions` N > 1 (the topology's, decision
 * 0030) a service may also publish its events with their partition token and use the durables of
 * its partitions. Throws {@link PermissionsError} for an unfilled
 * placeholder or an unknown macro.
 */
export function renderPermissions(
  templates: PermissionTemplates,
  identity: IdentityRef,
  teams: readonly string[],
  nodes: readonly string[] = [],
  options: { eventPartitions?: number } = {},
): RenderedPermissions {
  const partitions = options.eventPartitions ?? 1;
  const standing = standingDurables(partitions);
  const rendered = renderOnce(templates, identity, teams, nodes, undefined, standing);
  if (identity.kind !== 'service') return rendered;
  // Every rule naming its durable also for each durable it runs beside it (`durables:`), and with
  // events split into N partitions (decision 0030) for each partition's durable (`<service>-p<i>`),
  // which only a partitioned service runs.
  const others = [
    ...(templates.kinds.services[identity.id!]?.durables ?? []),
    ...(partitions > 1 ? Array.from({ length: partitions }, (_, i) => `${identity.id!}-p${i}`) : []),
  ];
  if (others.length === 0) return rendered;
  const publish = new Set(rendered.publish);
  const subscribe = new Set(rendered.subscribe);
  for (const durable of others) {
    const part = renderOnce(templates, identity, teams, nodes, durable, standing);
    for (const s of part.publish) publish.add(s);
    for (const s of part.subscribe) subscribe.add(s);
  }
  // Partitioned: every event subject it may publish also with the partition token.
  if (partitions > 1) for (const s of [...publish]) if (/^gpunet\.evt\.[^.]+\.\*\.\*$/.test(s)) publish.add(`${s}.*`);
  return { ...rendered, publish: [...publish], subscribe: [...subscribe] };
}

function renderOnce(
  templates: PermissionTemplates,
  identity: IdentityRef,
  teams: readonly string[],
  nodes: readonly string[],
  durable: string | undefined,
  standing: readonly StandingDurable[],
): RenderedPermissions {
  const name = identityNameOf(identity);
  if (identity.kind !== 'operator' && identity.kind !== 'joiner' && (!identity.id || !ID.test(identity.id))) {
    throw new PermissionsError(`identity of kind ${identity.kind} needs an id of letters, digits, _ and - (got ${JSON.stringify(identity.id)})`);
  }
  for (const team of teams) if (!ID.test(team)) throw new PermissionsError(`team \`${team}\` cannot be a subject token (use letters, digits, _ and -)`);
  for (const node of nodes) if (!ID.test(node)) throw new PermissionsError(`node \`${node}\` cannot be a subject token (use letters, digits, _ and -)`);
  const values: Record<string, string> = { name };
  if (identity.kind === 'service') Object.assign(values, { service: identity.id!, durable: durable ?? identity.id! });
  if (identity.kind === 'node') Object.assign(values, { node: identity.id!, durable: `execution-${identity.id!}` });
  if (identity.kind === 'team') Object.assign(values, { team: identity.id! });

  const kind = templates.kinds[identity.kind];
  if (!kind) throw new PermissionsError(`${name}: the permissions file has no kinds.${identity.kind} template`);
  const extra = identity.kind === 'service' ? templates.kinds.services[identity.id!] : undefined;
  const where = `kinds.${identity.kind}${extra ? ` / kinds.services.${identity.id}` : ''} (${name})`;
  const publish = [...expand(templates.common.publish, values, `common (${name})`, standing), ...expand(kind.publish, values, where, standing), ...expand(extra?.publish ?? [], values, where, standing)];
  const subscribe = [...expand(templates.common.subscribe, values, `common (${name})`, standing), ...expand(kind.subscribe, values, where, standing), ...expand(extra?.subscribe ?? [], values, where, standing)];
  for (const perTeam of [kind.each_team, extra?.each_team]) {
    if (!perTeam) continue;
    for (const team of teams) {
      publish.push(...expand(perTeam.publish, { ...values, team }, `${where} each_team ${team}`));
      subscribe.push(...expand(perTeam.subscribe, { ...values, team }, `${where} each_team ${team}`));
    }
  }
  for (const perNode of [kind.each_node, extra?.each_node]) {
    if (!perNode) continue;
    for (const node of nodes) {
      publish.push(...expand(perNode.publish, { ...values, node }, `${where} each_node ${node}`));
      subscribe.push(...expand(perNode.subscribe, { ...values, node }, `${where} each_node ${node}`));
    }
  }
  return { publish: [...new Set(publish)], subscribe: [...new Set(subscribe)], allowResponses: kind.allow_responses };
}
