/**
 * The budget rule, one pure fold shared by intake (which decides and records reservations) and
 * placement (which checks again before placing), as the retry rule is (`retry.ts`). Money is
 * integer micro-units; a month is the UTC month of an event's own time, so a replay folds the
 * same account at every revision whatever the clock says.
 *
 * An account is the events of `intake-budget-<team>` folded in order:
 * - spent(month) = the `chargedMicros` of every `BudgetReleased` recorded in that month;
 * - reserved = the worst cases of every `BudgetReserved` not yet released (whatever month);
 * - a job fits when spent(now) + reserved before it + its own worst case ≤ monthly, where
 *   "before it" is every reservation that holds compute now and every earlier one in order.
 */
import type { BudgetReleased, BudgetReserved, BudgetSet, BudgetThresholdCrossed } from './budgets.js';

/** One team's budget account at a revision of its stream. */
export interface BudgetAccount {
  readonly team: string;
  /** Last revision folded; -1n when nothing is recorded. */
  readonly revision: bigint;
  readonly budget?: Omit<BudgetSet, 'team'> | undefined;
  /** Reservations not yet released, in the order they were recorded. */
  readonly reservations: ReadonlyMap<string, { readonly worstCaseMicros: number; readonly held: boolean; readonly seq: number }>;
  /** Charged per UTC month (`YYYY-MM`) by released jobs. */
  readonly spent: ReadonlyMap<string, number>;
  /** Thresholds crossed per UTC month. */
  readonly crossed: ReadonlyMap<string, readonly number[]>;
  /** Next reservation sequence number. */
  readonly nextSeq: number;
}

/** The events of a budget stream the fold reads. */
export type BudgetEvent =
  | { type: 'BudgetSet'; data: BudgetSet }
  | { type: 'BudgetCleared'; data: { team: string } }
  | { type: 'BudgetReserved'; data: BudgetReserved }
  | { type: 'BudgetRefused'; data: unknown }
  | { type: 'BudgetReleased'; data: BudgetReleased }
  | { type: 'BudgetThresholdCrossed'; data: BudgetThresholdCrossed };

/** The stream of a team's budget account; written by intake only. */
export function budgetStreamId(team: string): string {
  return `intake-budget-${team}`;
}

/** Whether a store stream id is a budget account's. */
export const BUDGET_STREAM_PREFIX = 'intake-budget-';

/** The UTC month of an ISO time or epoch ms, `YYYY-MM`. */
export function budgetMonth(at: string | number | Date): string {
  return new Date(at).toISOString().slice(0, 7);
}

export function emptyBudgetAccount(team: string): BudgetAccount {
  return { team, revision: -1n, reservations: new Map(), spent: new Map(), crossed: new Map(), nextSeq: 0 };
}

/** Folds one event of the team's budget stream at `revision`; other types change only the revision. */
export function evolveBudget(account: BudgetAccount, event: { type: string; data: unknown }, revision: bigint = account.revision + 1n): BudgetAccount {
  const e = event as BudgetEvent;
  switch (e.type) {
    case 'BudgetSet': {
      const { team: _team, ...budget } = e.data;
      return { ...account, revision, budget };
    }
    case 'BudgetCleared':
      return { ...account, revision, budget: undefined };
    case 'BudgetReserved': {
      if (account.reservations.has(e.data.jobId)) return { ...account, revision };
      const reservations = new Map(account.reservations);
      reservations.set(e.data.jobId, { worstCaseMicros: e.data.worstCaseMicros, held: e.data.held, seq: account.nextSeq });
      return { ...account, revision, reservations, nextSeq: account.nextSeq + 1 };
    }
    case 'BudgetReleased': {
      if (!account.reservations.has(e.data.jobId)) return { ...account, revision };
      const reservations = new Map(account.reservations);
      reservations.delete(e.data.jobId);
      const spent = new Map(account.spent);
      const month = budgetMonth(e.data.releasedAt);
      spent.set(month, (spent.get(month) ?? 0) + e.data.chargedMicros);
      return { ...account, revision, reservations, spent };
    }
    case 'BudgetThresholdCrossed': {
      const crossed = new Map(account.crossed);
      crossed.set(e.data.month, [...(crossed.get(e.data.month) ?? []), e.data.thresholdPercent]);
      return { ...account, revision, crossed };
    }
    default:
      return { ...account, revision };
  }
}

/** Spent this month and reserved now. */
export function budgetTotals(account: BudgetAccount, now: Date | string): { month: string; spentMicros: number; reservedMicros: number } {
  const month = budgetMonth(now);
  let reserved = 0;
  for (const r of account.reservations.values()) reserved += r.worstCaseMicros;
  return { month, spentMicros: account.spent.get(month) ?? 0, reservedMicros: reserved };
}

/** Whether `committed` fits under `monthly` (exact: both are safe integers, compared as such). */
export function withinBudget(committedMicros: number, monthlyMicros: number): boolean {
  return committedMicros <= monthlyMicros;
}

/**
 * Placement's check before placing a reserved job: it fits when spent this month + every
 * reservation of a job that holds compute now (`active`) + every earlier reservation in order +
 * its own ≤ monthly. A job without reservation (submitted before the budget existed) or of a team
 * without budget always fits. A running job is never checked: budgets never stop running work.
 */
export function reservationFits(account: BudgetAccount, jobId: string, now: Date | string, active: (jobId: string) => boolean): boolean {
  const budget = account.budget;
  const own = account.reservations.get(jobId);
  if (!budget || !own) return true;
  let committed = account.spent.get(budgetMonth(now)) ?? 0;
  for (const [id, r] of account.reservations) {
    if (id === jobId || r.seq < own.seq || active(id)) committed += r.worstCaseMicros;
  }
  return withinBudget(committed, budget.monthlyMicros);
}

/** Thresholds of the budget that `committed` reaches and were not crossed in `month` yet, ascending. */
export function thresholdsReached(account: BudgetAccount, month: string, committedMicros: number): number[] {
  const budget = account.budget;
  if (!budget) return [];
  const done = new Set(account.crossed.get(month) ?? []);
  return [...budget.thresholdsPercent]
    .sort((a, b) => a - b)
    .filter((t) => !done.has(t) && BigInt(committedMicros) * 100n >= BigInt(t) * BigInt(budget.monthlyMicros));
}
