/** The API key file intake reads (`GPUNET_API_KEYS_FILE`) for a local network: one key for the local team. */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, writeFile } from 'node:fs/promises';

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
export function apiKeysYaml(apiKey: string, team = LOCAL_TEAM): string {
  const sha256 = createHash('sha256').update(apiKey, 'utf8').digest('hex');
  return [
    '# Written by `gpunet up`: the local team\'s API key, as its sha256 (the key is in state.json).',
    '# Add keys as `- { id: ..., sha256: <hex of the key>, team: ..., role: producer }`; `gpunet up` rewrites this file.',
    `- { id: ${team}, sha256: ${sha256}, team: ${team}, role: producer }`,
    '',
  ].join('\n');
}

export async function writeApiKeysFile(path: string, apiKey: string, team = LOCAL_TEAM): Promise<void> {
  await writeFile(path, apiKeysYaml(apiKey, team), { mode: 0o600 });
  await chmod(path, 0o600); // an older file keeps its mode through writeFile
}
