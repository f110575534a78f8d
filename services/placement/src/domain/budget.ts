/**
 * Budgets as placement sees them: each team's budget account (`contracts/budget-rule.ts`, folded
 * from intake's `BudgetSet`, `BudgetCleared`, `BudgetReserved`, `BudgetReleased`) and the check
 * before placing. Intake decided and reserved every job's worst case at submit; the budget may
 * have been lowered since, or the job was accepted under `hold`, so a job is placed only when its
 * reservation still fits behind the work that holds compute and the reservations before it.
 * A job that ran already (requeued after a lost or retried attempt) is never stopped by a budget.
 */
import { emptyBudgetAccount, evolveBudget, reservationFits as reservationFitsIn } from '#contracts';
import type { JobRecord, PlacementState } from './state.js';

/** Folds one budget event of `team`'s account into the state. */
export function evolveBudgets(state: PlacementState, event: { type: string; data: { team: string } }): void {
  const team = event.data.team;
  state.budgets.set(team, evolveBudget(state.budgets.get(team) ?? emptyBudgetAccount(team), event));
}

/** Whether `job` may be placed at `now` as far as its team's budget goes (false: it waits, reason `BudgetExceeded`). */
export function budgetAllows(state: PlacementState, job: JobRecord, now: number | Date): boolean {
  if (job.attempts.length > 0) return true;
  const account = state.budgets.get(job.team);
  if (!account?.budget) return true;
  const at = typeof now === 'number' ? new Date(now) : now;
  return reservationFitsIn(account, job.jobId, at, (id) => {
    const other = state.jobs.get(id);
    return other !== undefined && other.attempts.length > 0 && other.phase !== 'ended';
  });
}
