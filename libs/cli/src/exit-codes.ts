/**
 * What the exit status of `gpunet` means, so scripts can branch on it:
 *
 * | code | meaning |
 * |---|---|
 * | 0 | done; for `wait`/`submit --wait`: the job completed |
 * | 1 | the job ended otherwise (failed, timeout, cancelled, node_lost, deadline, rejected), a wait timed out, or the command failed |
 * | 2 | usage: bad arguments, invalid job spec, authentication or permission refused, unknown job |
 * | 3 | the network cannot be reached, or is not answering (connection refused, timeout, 502/503/504) |
 */
import { FINAL_JOB_STATES } from '#contracts';
import { ClientConfigError, GpunetApiError, GpunetUnreachableError, JobFileError } from '#sdk';
import { StateFileError, UsageError } from './errors.js';

export const EXIT = { ok: 0, failure: 1, usage: 2, unreachable: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Exit status for a job's state at the end of `wait`: 0 only for `completed`. */
export function exitCodeForState(state: string): ExitCode {
  return state === 'completed' ? EXIT.ok : EXIT.failure;
}

/** True for a state the job never leaves. */
export function isFinal(state: string): boolean {
  return (FINAL_JOB_STATES as readonly string[]).includes(state);
}

/** HTTP statuses that mean the caller must change the request, not retry it. */
const USAGE_STATUSES = new Set([400, 401, 403, 404, 405, 409, 413, 415, 422]);
/** HTTP statuses that mean the network is not answering properly. */
const UNREACHABLE_STATUSES = new Set([502, 503, 504]);

/** Exit status for an error that ended a command. */
export function exitCodeForError(err: unknown): ExitCode {
  if (err instanceof UsageError || err instanceof StateFileError || err instanceof JobFileError || err instanceof ClientConfigError) return EXIT.usage;
  if (err instanceof GpunetUnreachableError) return EXIT.unreachable;
  if (err instanceof GpunetApiError) {
    if (USAGE_STATUSES.has(err.status)) return EXIT.usage;
    if (UNREACHABLE_STATUSES.has(err.status)) return EXIT.unreachable;
  }
  // Commander's own errors (unknown option, missing argument) carry `code: 'commander.*'`.
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('commander.')) return EXIT.usage;
  return EXIT.failure;
}
