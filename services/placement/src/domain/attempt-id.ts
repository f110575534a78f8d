/**
 * Attempt ids: `<jobId>-a<n>`, readable and derived from the job, so the same attempt of the same
 * job always has the same id (a replayed decision cannot invent a second one).
 */

/** Longest id the contracts accept. */
const MAX_ID_LENGTH = 64;

/** The id of attempt `attempt` (≥ 1) of `jobId`; job ids too long for the suffix are shortened with a hash of the whole id. */
export function attemptIdFor(jobId: string, attempt: number): string {
  const suffix = `-a${attempt}`;
  if (jobId.length + suffix.length <= MAX_ID_LENGTH) return jobId + suffix;
  const hash = `-${fnv1a32(jobId)}`;
  return jobId.slice(0, MAX_ID_LENGTH - suffix.length - hash.length) + hash + suffix;
}

/** FNV-1a, 32 bits, as 8 hex digits: enough to tell apart job ids that share a 50-character prefix. */
function fnv1a32(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}
