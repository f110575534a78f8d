/**
 * A nats-server (2.9+) configuration file for a gpunet network: where it listens, JetStream's
 * store directory, and one NKey user per identity with the permissions of its template. The
 * file names public keys only; still written 0600 (it is the network's access list).
 */
import { loadIdentityFile } from '#identity';
import { chmod, mkdir, readdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { identityNameOf, PermissionsError, renderPermissions, type IdentityRef, type PermissionTemplates, type RenderedPermissions } from './permissions.js';

/** An identity the server lets in: who it is and its NKey public key (`U…`). */
export interface NetworkIdentity extends IdentityRef {
  publicKey: string;
}

/** What {@link renderServerConfig} writes. */
export interface ServerConfigOptions {
  /** `host:port` to listen on, e.g. `127.0.0.1:4222`. */
  listen: string;
  /** JetStream's store directory. */
  storeDir: string;
  /** Every identity allowed in; everyone else is refused. */
  identities: readonly NetworkIdentity[];
  /** Every team (for the `each_team` rules); default: the teams among `identities`. */
  teams?: readonly string[];
  /** The topology's `eventPartitions` (decision 0030); default 1. */
  eventPartitions?: number;
  /** Optional HTTP monitoring port on the same host (`/connz`, `/varz`). */
  monitorPort?: number;
}

/** One user entry of `authorization.users`. */
export interface ServerUser {
  name: string;
  nkey: string;
  permissions: RenderedPermissions;
}

/** The users of the config: each identity with its rendered permissions. Throws for a duplicate key or name. */
export function serverUsers(templates: PermissionTemplates, identities: readonly NetworkIdentity[], teams?: readonly string[], options: { eventPartitions?: number } = {}): ServerUser[] {
  const allTeams = teams ?? identities.filter((i) => i.kind === 'team').map((i) => i.id!);
  // Each node's own bucket is reached by the control plane (`each_node`): every node with an identity.
  const allNodes = identities.filter((i) => i.kind === 'node').map((i) => i.id!);
  const seen = new Map<string, string>();
  return identities.map((identity) => {
    const name = identityNameOf(identity);
    if (!/^U[A-Z2-7]{55}$/.test(identity.publicKey)) throw new PermissionsError(`${name}: \`${identity.publicKey}\` is not an NKey user public key (U…)`);
    const other = seen.get(identity.publicKey) ?? seen.get(name);
    if (other) throw new PermissionsError(`${name}: its key or name is also ${other}'s; every identity needs a key of its own`);
    seen.set(identity.publicKey, name).set(name, name);
    return { name, nkey: identity.publicKey, permissions: renderPermissions(templates, identity, allTeams, allNodes, options) };
  });
}

function list(subjects: readonly string[]): string {
  // An empty allow list means "no restriction" to nats-server: say "nothing" explicitly.
  return subjects.length === 0 ? '{ deny: [">"] }' : `{ allow: [\n${subjects.map((s) => `          ${JSON.stringify(s)}`).join(',\n')}\n        ] }`;
}

/**
 * The `authorization { … }` block alone (nats-server's format): one NKey user per identity with its
 * permissions. A single server's config embeds it; each server of a cluster `include`s it from a
 * file of its own (deploy/nats/cluster.conf), so the three servers admit exactly the same identities.
 * `eventPartitions` is the topology's (decision 0030), default 1.
 */
export function renderAuthorization(templates: PermissionTemplates, identities: readonly NetworkIdentity[], teams?: readonly string[], options: { eventPartitions?: number } = {}): string {
  const users = serverUsers(templates, identities, teams, options.eventPartitions !== undefined ? { eventPartitions: options.eventPartitions } : {});
  const lines = [
    '# Written by gpunet (libs/bus-auth from deploy/nats-permissions.yaml). Every connection',
    '# authenticates with its own NKey; each may publish and subscribe only what is listed.',
    '# Refusals are logged by nats-server as "Permissions Violation" / "authentication error".',
    'authorization {',
    // Seconds a client has from accept to its CONNECT. nats-server's 2 s default is short for
    // an NKey client on a busy machine: past it the server drops the connection silently (at
    // its default log level) and the client waits out its own connect timeout.
    '  timeout: 10',
    '  users = [',
    ...users.map((u) =>
      [
        `    # ${u.name}`,
        `    { nkey: ${JSON.stringify(u.nkey)}, permissions: {`,
        `        publish: ${list(u.permissions.publish)},`,
        `        subscribe: ${list(u.permissions.subscribe)}${u.permissions.allowResponses ? ',' : ''}`,
        ...(u.permissions.allowResponses ? ['        allow_responses: true'] : []),
        '    } },',
      ].join('\n'),
    ),
    '  ]',
    '}',
    '',
  ];
  return lines.join('\n');
}

/** The configuration text of a server alone (nats-server's own format; values are JSON strings). */
export function renderServerConfig(templates: PermissionTemplates, options: ServerConfigOptions): string {
  return [
    `listen: ${JSON.stringify(options.listen)}`,
    ...(options.monitorPort ? [`http: ${JSON.stringify(`${options.listen.split(':')[0]}:${options.monitorPort}`)}`] : []),
    `jetstream { store_dir: ${JSON.stringify(options.storeDir)} }`,
    renderAuthorization(templates, options.identities, options.teams, options.eventPartitions !== undefined ? { eventPartitions: options.eventPartitions } : {}),
  ].join('\n');
}

/** The values of deploy/nats/cluster.conf's placeholders for one server of the cluster. */
export interface ClusterServerValues {
  /** Unique within the cluster, e.g. `ctl-1`. */
  serverName: string;
  /** `host:port` for clients. */
  clientListen: string;
  /** `host:port` for the other servers' routes. */
  routeListen: string;
  /** `host:port` of every server's routes, this one's included (nats-server skips itself). */
  routes: readonly string[];
  /** Shared by the cluster's servers only. */
  routePassword: string;
  storeDir: string;
  /** `host:port` of the HTTP monitoring endpoint. */
  monitorListen: string;
  /** Path of the file holding {@link renderAuthorization}'s block, relative to the config's directory (nats-server reads every include so, even one starting with `/`). */
  authorizationFile: string;
}

/**
 * Fills the placeholders (`{{name}}`) of a cluster server template (deploy/nats/cluster.conf).
 * Throws PermissionsError for a placeholder the template has and no value fills, or a route
 * password that would need quoting rules of its own.
 */
export function renderClusterConfig(template: string, values: ClusterServerValues): string {
  if (!/^[A-Za-z0-9_-]{16,}$/.test(values.routePassword)) throw new PermissionsError('the route password must be at least 16 letters, digits, _ or -');
  const routeUrl = (hostPort: string) => `nats-route://gpunet-route:${values.routePassword}@${hostPort}`;
  const fill: Record<string, string> = {
    server_name: JSON.stringify(values.serverName),
    client_listen: JSON.stringify(values.clientListen),
    route_listen: JSON.stringify(values.routeListen),
    routes: values.routes.map((r) => JSON.stringify(routeUrl(r))).join(',\n    '),
    route_password: JSON.stringify(values.routePassword),
    store_dir: JSON.stringify(values.storeDir),
    monitor_listen: JSON.stringify(values.monitorListen),
    authorization: JSON.stringify(values.authorizationFile),
  };
  // Comment lines name the placeholders too: only the configuration's own lines are filled and checked.
  return template
    .split('\n')
    .map((line) => {
      if (/^\s*#/.test(line)) return line;
      return line.replace(/\{\{([a-z_]+)\}\}/g, (_, key: string) => {
        const value = fill[key];
        if (value === undefined) throw new PermissionsError(`cluster config template: no value for {{${key}}}`);
        return value;
      });
    })
    .join('\n');
}

/** Writes `text` to `path` atomically, mode 0600, its directory 0700 when created. */
export async function writeServerConfig(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, text, { mode: 0o600 });
  await chmod(temp, 0o600);
  await rename(temp, path);
}

/** Parses an identity's name (`svc-ledger`, `node-node-1`, `team-ml`, `operator`) back into kind and id. */
export function identityRefOf(name: string): IdentityRef | undefined {
  if (name === 'operator') return { kind: 'operator' };
  if (name === 'joiner') return { kind: 'joiner' };
  const m = /^(svc|node|team|operator)-([A-Za-z0-9_-]+)$/.exec(name);
  if (!m) return undefined;
  const kind = ({ svc: 'service', node: 'node', team: 'team', operator: 'operator' } as const)[m[1] as 'svc' | 'node' | 'team' | 'operator'];
  return { kind, id: m[2]! };
}

/**
 * The identities of a key directory: every `<name>.nk` seed file (0600; see libs/identity),
 * with its public key. Files whose name is not an identity's are refused, not skipped.
 */
export async function identitiesInDir(dir: string): Promise<NetworkIdentity[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.nk')).sort();
  const out: NetworkIdentity[] = [];
  for (const file of files) {
    const ref = identityRefOf(file.slice(0, -3));
    if (!ref) throw new PermissionsError(`${join(dir, file)}: not an identity's key file (name it svc-<service>.nk, node-<nodeId>.nk, team-<team>.nk, operator.nk or joiner.nk)`);
    const { publicKey } = await loadIdentityFile(join(dir, file));
    out.push({ ...ref, publicKey });
  }
  return out;
}
