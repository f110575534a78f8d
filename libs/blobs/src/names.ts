/**
 * Object names in the blob bucket. A blob is stored once per team under `<team>/<sha256>`, so
 * addresses are team-scoped: a team asking for a hash only ever sees its own objects, and
 * whether another team holds the same bytes is never revealed (no cross-team skip, no probe).
 */
import { BLOB_BUCKET_PREFIX, ID_PATTERN } from '#contracts';
import { ValidationError } from '#errors';

/**
 * Prefix of the Object Store buckets: team `<team>`'s blobs live in bucket `gpunet-blobs-<team>`
 * (JetStream stream `OBJ_gpunet-blobs-<team>`), one bucket per team so that NATS permissions can
 * tell teams apart (chunk subjects carry no team).
 */
export const BLOB_BUCKET = BLOB_BUCKET_PREFIX;

/** `<prefix>-<team>`: the bucket of a team's blobs. Throws ValidationError for a team id that is not well-formed. */
export function blobBucket(team: string, prefix = BLOB_BUCKET): string {
  if (!ID_PATTERN.test(team)) throw new ValidationError(`invalid blob bucket: \`${team}\` is not a team id`, [{ path: 'team', message: `\`${team}\` is not a team id`, fix: 'use the team id from the API key' }]);
  return `${prefix}-${team}`;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** True for a lower-case hex sha256. */
export function isSha256(text: string): boolean {
  return SHA256_HEX.test(text);
}

/**
 * `<team>/<sha256>`: the object name of a team's blob. Throws ValidationError for a team id or
 * hash that is not well-formed, so no caller can address outside its team by a crafted string.
 */
export function blobName(team: string, sha256: string): string {
  const issues = [];
  if (!ID_PATTERN.test(team)) issues.push({ path: 'team', message: `\`${team}\` is not a team id`, fix: 'use the team id from the API key' });
  if (!isSha256(sha256)) issues.push({ path: 'sha256', message: `\`${sha256}\` is not a sha256`, fix: 'use 64 lower-case hex characters, e.g. from `sha256sum FILE`' });
  if (issues.length > 0) throw new ValidationError(`invalid blob address: ${issues.map((i) => i.message).join('; ')}`, issues);
  return `${team}/${sha256}`;
}

/**
 * The hex sha256 of an Object Store digest (`SHA-256=<base64url>`), or undefined when it is not
 * one. Node's base64 decoder takes both alphabets, padded or not, so digests written by other
 * NATS clients (std or url alphabet) read the same.
 */
export function digestToHex(digest: string | undefined): string | undefined {
  if (!digest || !digest.startsWith('SHA-256=')) return undefined;
  const bytes = Buffer.from(digest.slice('SHA-256='.length), 'base64');
  return bytes.length === 32 ? bytes.toString('hex') : undefined;
}
