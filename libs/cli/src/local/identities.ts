/**
 * The identities of a local network (libs/identity): one NKey seed file per process, team and
 * operator in `<data dir>/keys/` (0700, files 0600), and the nats-server config that lets each
 * in with the permissions of deploy/nats-permissions.yaml (libs/bus-auth).
 */
import { defaultClusterTemplateFile, defaultPermissionsFile, identitiesInDir, loadPermissionTemplates, renderAuthorization, renderClusterConfig, renderServerConfig, writeServerConfig, type ClusterServerValues, type NetworkIdentity } from '#bus-auth';
import { createIdentityFile, loadIdentityFile } from '#identity';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/** The seed file of identity `name` in `dir`. */
export function keyFileOf(dir: string, name: string): string {
  return join(dir, `${name}.nk`);
}

/**
 * Makes sure `dir` (0700) holds a seed file for each of `names`: an existing one is kept (and
 * checked: 0600, a user seed), a missing one created. Returns name → path.
 */
export async function ensureKeyFiles(dir: string, names: readonly string[]): Promise<Record<string, string>> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const out: Record<string, string> = {};
  for (const name of names) {
    const path = keyFileOf(dir, name);
    if (existsSync(path)) await loadIdentityFile(path);
    else await createIdentityFile(path);
    out[name] = path;
  }
  return out;
}

/**
 * Writes the nats-server config (0600) admitting every identity in `keysDir`, each with its
 * template's permissions; `teams` (default: the team identities there) fill the per-team rules;
 * `eventPartitions` is the topology's (decision 0030), default 1.
 */
export async function writeNatsConfig(path: string, options: { keysDir: string; listen: string; storeDir: string; permissionsFile?: string; eventPartitions?: number; extra?: readonly NetworkIdentity[] }): Promise<void> {
  const templates = await loadPermissionTemplates(options.permissionsFile ?? defaultPermissionsFile());
  const identities = withExtra(await identitiesInDir(options.keysDir), options.extra);
  await writeServerConfig(path, renderServerConfig(templates, { listen: options.listen, storeDir: options.storeDir, identities, ...(options.eventPartitions !== undefined ? { eventPartitions: options.eventPartitions } : {}) }));
}

/**
 * Writes the `authorization { … }` block alone (0600) admitting every identity in `keysDir`: the
 * file each server of a cluster includes (deploy/nats/cluster.conf's `{{authorization}}`).
 */
export async function writeAuthorizationFile(path: string, options: { keysDir: string; permissionsFile?: string; eventPartitions?: number; extra?: readonly NetworkIdentity[] }): Promise<void> {
  const templates = await loadPermissionTemplates(options.permissionsFile ?? defaultPermissionsFile());
  const partitions = options.eventPartitions !== undefined ? { eventPartitions: options.eventPartitions } : {};
  await writeServerConfig(path, renderAuthorization(templates, withExtra(await identitiesInDir(options.keysDir), options.extra), undefined, partitions));
}

/**
 * The key directory's identities with `extra` on top: an identity of the same name takes the
 * extra's key (an enrolled node's key is the one the recorder trusts, whatever seed lies here).
 */
function withExtra(identities: readonly NetworkIdentity[], extra: readonly NetworkIdentity[] = []): NetworkIdentity[] {
  const name = (i: NetworkIdentity) => `${i.kind}/${i.id ?? ''}`;
  const replaced = new Set(extra.map(name));
  return [...identities.filter((i) => !replaced.has(name(i))), ...extra];
}

/** Writes one cluster server's config (0600) from deploy/nats/cluster.conf (or `templateFile`). */
export async function writeClusterServerConfig(path: string, values: ClusterServerValues, templateFile = defaultClusterTemplateFile()): Promise<void> {
  await writeServerConfig(path, renderClusterConfig(await readFile(templateFile, 'utf8'), values));
}

/**
 * The password the cluster's servers authenticate their routes with: `<dir>/route.secret` (0600),
 * made once (32 random bytes, base64url) and kept, so servers restarted later still know each other.
 */
export async function routePassword(dir: string): Promise<string> {
  const path = join(dir, 'route.secret');
  if (existsSync(path)) {
    await chmod(path, 0o600);
    return (await readFile(path, 'utf8')).trim();
  }
  const secret = randomBytes(32).toString('base64url');
  await writeFile(path, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  return secret;
}

/**
 * The key file of an operator command (`nodes`, `digests sign`): `GPUNET_OPERATOR_NKEY_FILE`,
 * else the local network's operator key (state.json), else `GPUNET_NATS_NKEY_FILE`.
 */
export function operatorKeyFileOf(env: NodeJS.ProcessEnv, state: { operatorKeyFile?: string | undefined } | undefined): string | undefined {
  return env.GPUNET_OPERATOR_NKEY_FILE ?? state?.operatorKeyFile ?? env.GPUNET_NATS_NKEY_FILE;
}
