/**
 * Can the current plan meet a job's deadline? Pure: compares the deadline with placement's
 * estimate of the job (its expected end: expected start plus the time limit, an upper bound).
 */
import type { EstimateReply, FieldIssue } from '#contracts';

/** What a submit does with a deadline the plan cannot meet: refuse it (default) or accept it with a warning. */
export type DeadlinePolicy = 'reject' | 'warn';

export const DEADLINE_POLICIES: readonly DeadlinePolicy[] = ['reject', 'warn'];

/**
 * The issue with `deadlineAt` given the plan's `estimate`, or undefined when the expected end is
 * no later than the deadline. A job no node can run is not a deadline issue (placement rejects it
 * as unsatisfiable), and an unpredictable start cannot be called late: both give undefined.
 */
export function deadlineIssue(deadlineAt: string, estimate: EstimateReply): FieldIssue | undefined {
  if (!estimate.runnable || estimate.expectedEnd === undefined) return undefined;
  if (Date.parse(estimate.expectedEnd) <= Date.parse(deadlineAt)) return undefined;
  return {
    path: 'request.deadline',
    message: `cannot be met by the current plan: the earliest possible finish is ${estimate.expectedEnd} (start ${estimate.expectedStart}, then the time limit), after the deadline ${deadlineAt}`,
    fix: `set a deadline at or after ${estimate.expectedEnd}, shorten timeLimit, or send \`Gpunet-Deadline-Policy: warn\` to submit anyway`,
  };
}

/** The policy named by a header value (absent: `reject`); undefined for anything else. */
export function parseDeadlinePolicy(value: string | undefined): DeadlinePolicy | undefined {
  if (value === undefined || value === '') return 'reject';
  const v = value.trim().toLowerCase();
  return (DEADLINE_POLICIES as readonly string[]).includes(v) ? (v as DeadlinePolicy) : undefined;
}
