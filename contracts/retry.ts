/**
 * The retry policy of a job spec (`retry: { exitCodes, maxAttempts }`), as one pure rule that
 * placement (which requeues) and intake (which must not call a job failed that will run again)
 * both apply. Imports nothing.
 */

/** A job's retry policy as messages carry it. */
export interface RetryPolicy {
  readonly exitCodes: readonly number[];
  readonly maxAttempts: number;
}

/** How one ended attempt of a job went. */
export interface EndedAttempt {
  readonly outcome: string;
  readonly exitCode: number | null | undefined;
}

/** Whether an attempt's end is one the policy retries: `failed` with one of its exit codes. */
export function isRetryableEnd(policy: RetryPolicy | undefined, attempt: EndedAttempt): boolean {
  return policy !== undefined && attempt.outcome === 'failed' && attempt.exitCode != null && policy.exitCodes.includes(attempt.exitCode);
}

/**
 * Whether the job runs again after its latest attempt (the last of `attempts`, oldest first):
 * it ended in a retryable way, and fewer than `maxAttempts` of its attempts did. Attempts lost
 * with their node are requeued anyway and do not count.
 */
export function retriesAfter(policy: RetryPolicy | undefined, attempts: readonly EndedAttempt[]): boolean {
  const last = attempts[attempts.length - 1];
  if (last === undefined || !isRetryableEnd(policy, last)) return false;
  return attempts.filter((a) => isRetryableEnd(policy, a)).length < policy!.maxAttempts;
}
