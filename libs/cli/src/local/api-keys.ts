/** The API key file intake reads (`GPUNET_API_KEYS_FILE`) for a local network: one key for the local team. */
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';

/** The team `gpunet up` creates. */
export const LOCAL_TEAM = 'local';

/** A fresh random API key (64 hex characters). */
export function newApiKey(): string {
  return randomBytes(32).toString('hex');
}

/**
 * The key file's text. It holds the key's sha256 only: the key itself lives in state.json
 * (mode 0600), so reading the key file does not hand out the key.
 */
export function apiKeysYaml(apiKey: string, team = LOCAL_TEAM, others: readonly { team: string; apiKey: string }[] = []): string {
  const line = (k: string, t: string) => `- { id: ${t}, sha256: ${createHash('sha256').update(k, 'utf8').digest('hex')}, team: ${t}, role: producer }`;
  return [
    '# Written by `gpunet up`: the local team\'s API key, as its sha256 (the key is in state.json).',
    '# Add keys as `- { id: ..., sha256: <hex of the key>, team: ..., role: producer }`; `gpunet up` rewrites this file.',
    line(apiKey, team),
    ...others.map((o) => line(o.apiKey, o.team)),
    '',
  ].join('\n');
}

export async function writeApiKeysFile(path: string, apiKey: string, team = LOCAL_TEAM, others: readonly { team: string; apiKey: string }[] = []): Promise<void> {
  await writeFile(path, apiKeysYaml(apiKey, team, others), { mode: 0o600 });
}
