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

/** The configuration text (nats-server's own format; values are JSON strings). */
export function renderServerConfig(templates: PermissionTemplates, options: ServerConfigOptions): string {
  const users = serverUsers(templates, options.identities, options.teams, options.eventPartitions !== undefined ? { eventPartitions: options.eventPartitions } : {});
  const lines = [
    '# Written by gpunet (libs/bus-auth from deploy/nats-permissions.yaml). Every connection',
    '# authenticates with its own NKey; each may publish and subscribe only what is listed.',
    '# Refusals are logged by nats-server as "Permissions Violation" / "authentication error".',
    `listen: ${JSON.stringify(options.listen)}`,
    ...(options.monitorPort ? [`http: ${JSON.stringify(`${options.listen.split(':')[0]}:${options.monitorPort}`)}`] : []),
    `jetstream { store_dir: ${JSON.stringify(options.storeDir)} }`,
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
    if (!ref) throw new PermissionsError(`${join(dir, file)}: not an identity's key file (name it svc-<service>.nk, node-<nodeId>.nk, team-<team>.nk or operator.nk)`);
    const { publicKey } = await loadIdentityFile(join(dir, file));
    out.push({ ...ref, publicKey });
  }
  return out;
}
