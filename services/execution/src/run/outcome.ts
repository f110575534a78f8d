/** How a run attempt ended, as recorded in `JobFinished`. */
export type RunOutcome = 'completed' | 'failed' | 'timeout' | 'cancelled';

/** Why the agent stopped the process group before its main process ended on its own. */
export type TerminationReason = 'time_limit' | 'cancel' | 'disk_limit';

/** The facts {@link classifyOutcome} decides from. */
export interface ExitFacts {
  /** Exit code of the main process, `null` when it was killed by a signal or never started. */
  readonly exitCode: number | null;
  /** Signal that ended the main process, if any. */
  readonly signal: string | null;
  /** Set when the agent began stopping the run while its main process was still running. */
  readonly terminatedBy: TerminationReason | null;
}

/**
 * Maps how a run ended to its outcome. Pure.
 *
 * A run the agent stopped is `timeout`, `cancelled` or (at its disk cap) `failed` whatever its exit status: a job that
 * catches SIGTERM, checkpoints and exits 0 still did not finish in time. Otherwise exit 0 is
 * `completed`, and anything else (nonzero code, death by a signal nobody asked for, failure
 * to start) is `failed`.
 */
export function classifyOutcome(facts: ExitFacts): RunOutcome {
  if (facts.terminatedBy === 'cancel') return 'cancelled';
  if (facts.terminatedBy === 'time_limit') return 'timeout';
  if (facts.terminatedBy === 'disk_limit') return 'failed';
  return facts.exitCode === 0 && facts.signal === null ? 'completed' : 'failed';
}
