/**
 * The bootstrap API key file intake reads (`GPUNET_API_KEYS_FILE`) for a local network: the local
 * team's producer key and the network's operator key. Every other key is issued with
 * `gpunet keys create` and lives in the event store (as its sha256).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';

/** The team `gpunet up` creates. */
export const LOCAL_TEAM = 'local';
/** Id of the operator key `gpunet up` writes. */
export const OPERATOR_KEY_ID = 'operator';

/** A fresh random API key (64 hex characters). */
export function newApiKey(): string {
  return randomBytes(32).toString('hex');
}

/** A fresh operator key, in the shape intake issues keys: `gpn_` and 32 random bytes in base64url. */
export function newAdminApiKey(): string {
  return `gpn_${randomBytes(32).toString('base64url')}`;
}

const sha256 = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/**
 * The key file's text. It holds the keys' sha256 only: the keys themselves live in state.json
 * (mode 0600), so reading the key file does not hand out a key.
 */
export function apiKeysYaml(apiKey: string, team = LOCAL_TEAM, adminApiKey?: string, others: readonly { team: string; apiKey: string }[] = []): string {
  const line = (k: string, t: string) => `- { id: ${t}, sha256: ${sha256(k)}, team: ${t}, role: producer }`;
  return [
    '# Written by `gpunet up`: the bootstrap keys, as their sha256 (the keys are in state.json).',
    '# Issue and revoke other keys with `gpunet keys create|revoke` (recorded in the event store); `gpunet up` rewrites this file.',
    line(apiKey, team),
    ...others.map((o) => line(o.apiKey, o.team)),
    ...(adminApiKey ? [`- { id: ${OPERATOR_KEY_ID}, sha256: ${sha256(adminApiKey)}, team: ${team}, role: operator }`] : []),
    '',
  ].join('\n');
}

export async function writeApiKeysFile(path: string, apiKey: string, team = LOCAL_TEAM, adminApiKey?: string, others: readonly { team: string; apiKey: string }[] = []): Promise<void> {
  await writeFile(path, apiKeysYaml(apiKey, team, adminApiKey, others), { mode: 0o600 });
  await chmod(path, 0o600); // an older file keeps its mode through writeFile
}
