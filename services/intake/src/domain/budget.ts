/**
 * Intake's budget decisions, pure: what a submit, a job's end or a change of budget records in
 * the team's budget stream, given the account folded from that stream (`contracts/budget-rule.ts`).
 * The caller appends the events with the revision the account was folded at, so one decision is
 * made per revision, and `replayBudget` re-derives every one from the log.
 */
import {
  budgetMonth,
  budgetTotals,
  emptyBudgetAccount,
  evolveBudget,
  thresholdsReached,
  withinBudget,
  type BudgetAccount,
  type BudgetFigures,
  type BudgetRefused,
  type BudgetReleased,
  type BudgetReserved,
  type BudgetThresholdCrossed,
} from '#contracts';

/** A job's worst-case charge as the ledger priced it. */
export interface WorstCase {
  worstCaseMicros: number;
  currency: string;
  gpus: number;
  timeLimitMs: number;
  rateMicrosPerGpuHour: number;
  priceListVersion: number;
}

export type BudgetStreamEvent =
  | { type: 'BudgetReserved'; data: BudgetReserved }
  | { type: 'BudgetRefused'; data: BudgetRefused }
  | { type: 'BudgetReleased'; data: BudgetReleased }
  | { type: 'BudgetThresholdCrossed'; data: BudgetThresholdCrossed };

/** What a submit gets from the budget. */
export type Admission =
  /** No budget: nothing is recorded, the job is not checked. */
  | { kind: 'unbudgeted' }
  /** The job is reserved already (a retried submit with the same idempotency key). */
  | { kind: 'already'; figures: BudgetFigures }
  | { kind: 'reserve'; held: boolean; events: BudgetStreamEvent[]; figures: BudgetFigures }
  | { kind: 'refuse'; events: BudgetStreamEvent[]; figures: BudgetFigures; message: string }
  /** The budget is in another currency than the price list: neither accepted nor recorded. */
  | { kind: 'currency_mismatch'; message: string };

/** Micro-units as a decimal amount, e.g. 5000000000 → `5000.00` (exact, no float). */
export function formatMicros(micros: number): string {
  const negative = micros < 0;
  const abs = BigInt(Math.abs(micros));
  const units = abs / 1_000_000n;
  const frac = (abs % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '').padEnd(2, '0');
  return `${negative ? '-' : ''}${units}.${frac}`;
}

/** The figures a submit or estimate answers with, counting `worst` as this job's. */
export function budgetFigures(account: BudgetAccount, worst: WorstCase, now: Date, held = false, counted = false): BudgetFigures {
  const { spentMicros, reservedMicros } = budgetTotals(account, now);
  const others = counted ? reservedMicros - worst.worstCaseMicros : reservedMicros;
  const budget = account.budget;
  const figures: BudgetFigures = { worstCaseMicros: worst.worstCaseMicros, currency: worst.currency, spentMicros, reservedMicros: others, held };
  if (budget) {
    figures.monthlyMicros = budget.monthlyMicros;
    figures.remainingMicros = budget.monthlyMicros - spentMicros - others - worst.worstCaseMicros;
    figures.onExceed = budget.onExceed;
  }
  return figures;
}

/**
 * The budget's answer to submitting `jobId` with `worst` at `now`: reserve its worst case when
 * spent this month + reserved + worst ≤ monthly; otherwise refuse it, or reserve it `held` when
 * the budget says `hold`. A reservation that reaches soft thresholds records them too.
 */
export function decideAdmission(account: BudgetAccount, input: { jobId: string; worst: WorstCase; now: Date }): Admission {
  const { jobId, worst, now } = input;
  const budget = account.budget;
  if (!budget) return { kind: 'unbudgeted' };
  const existing = account.reservations.get(jobId);
  if (existing) return { kind: 'already', figures: budgetFigures(account, { ...worst, worstCaseMicros: existing.worstCaseMicros }, now, existing.held, true) };
  if (worst.currency !== budget.currency) {
    return {
      kind: 'currency_mismatch',
      message: `team ${account.team}'s budget is in ${budget.currency} but the price list in force charges ${worst.currency}; a key with role billing sets it again in ${worst.currency} (\`gpunet budget set --team ${account.team} --monthly AMOUNT\`)`,
    };
  }
  const at = now.toISOString();
  const { month, spentMicros, reservedMicros } = budgetTotals(account, now);
  const committed = spentMicros + reservedMicros + worst.worstCaseMicros;
  const figures = budgetFigures(account, worst, now);
  const worstShape = { team: account.team, jobId, ...worst };
  if (!withinBudget(committed, budget.monthlyMicros) && budget.onExceed === 'refuse') {
    const refused: BudgetRefused = { ...worstShape, monthlyMicros: budget.monthlyMicros, spentMicros, reservedMicros, refusedAt: at };
    const c = worst.currency;
    const message =
      `team ${account.team}'s monthly budget of ${formatMicros(budget.monthlyMicros)} ${c} (${month}) would be exceeded: ` +
      `spent ${formatMicros(spentMicros)} + reserved ${formatMicros(reservedMicros)} + this job's worst case ${formatMicros(worst.worstCaseMicros)} ` +
      `(${worst.gpus} GPU × ${worst.timeLimitMs} ms at ${formatMicros(worst.rateMicrosPerGpuHour)} ${c}/GPU-hour) = ${formatMicros(committed)} ${c}, ` +
      `${formatMicros(committed - budget.monthlyMicros)} ${c} over. Fix: lower request.gpus or request.timeLimit, wait for running jobs to end, ` +
      `or ask a key with role billing to raise it (\`gpunet budget set --team ${account.team} --monthly AMOUNT\`) or to hold such jobs (\`--on-exceed hold\`)`;
    return { kind: 'refuse', events: [{ type: 'BudgetRefused', data: refused }], figures, message };
  }
  const held = !withinBudget(committed, budget.monthlyMicros);
  const events: BudgetStreamEvent[] = [{ type: 'BudgetReserved', data: { ...worstShape, held, reservedAt: at } }];
  for (const t of thresholdsReached(account, month, committed)) events.push({ type: 'BudgetThresholdCrossed', data: crossed(account, jobId, month, t, committed, at) });
  return { kind: 'reserve', held, events, figures: { ...figures, held } };
}

/**
 * A job ended: its reservation is replaced by what it was billed (`chargedMicros`, in the budget's
 * currency). Nothing when it holds no reservation (no budget when submitted, or released already).
 */
export function decideRelease(account: BudgetAccount, input: { jobId: string; chargedMicros: number; now: Date }): BudgetStreamEvent[] {
  const reservation = account.reservations.get(input.jobId);
  if (!reservation) return [];
  const at = input.now.toISOString();
  const events: BudgetStreamEvent[] = [
    { type: 'BudgetReleased', data: { team: account.team, jobId: input.jobId, reservedMicros: reservation.worstCaseMicros, chargedMicros: input.chargedMicros, releasedAt: at } },
  ];
  const after = evolveBudget(account, events[0]!);
  const { month, spentMicros, reservedMicros } = budgetTotals(after, input.now);
  for (const t of thresholdsReached(after, month, spentMicros + reservedMicros)) events.push({ type: 'BudgetThresholdCrossed', data: crossed(after, input.jobId, month, t, spentMicros + reservedMicros, at) });
  return events;
}

function crossed(account: BudgetAccount, jobId: string, month: string, thresholdPercent: number, committedMicros: number, at: string): BudgetThresholdCrossed {
  return { team: account.team, jobId, month, thresholdPercent, committedMicros, monthlyMicros: account.budget!.monthlyMicros, currency: account.budget!.currency, crossedAt: at };
}

/** One decision found again by a replay that differs from the one recorded. */
export interface ReplayMismatch {
  revision: bigint;
  jobId: string;
  recorded: 'reserve' | 'hold' | 'refuse';
  derived: string;
}

/** What a replay of a budget stream found. */
export interface BudgetReplay {
  account: BudgetAccount;
  decisions: { jobId: string; decision: 'reserve' | 'hold' | 'refuse' }[];
  mismatches: ReplayMismatch[];
}

/**
 * Re-derives every admission recorded in a team's budget stream: folds it from empty and, at each
 * `BudgetReserved` or `BudgetRefused`, decides again from the account before it with the worst
 * case and time recorded. Equal decisions everywhere mean the log alone explains every accept,
 * hold and refuse, and no two decisions saw the same revision.
 */
export function replayBudget(team: string, events: readonly { type: string; data: unknown; revision: bigint }[]): BudgetReplay {
  let account = emptyBudgetAccount(team);
  const decisions: BudgetReplay['decisions'] = [];
  const mismatches: ReplayMismatch[] = [];
  for (const e of events) {
    if (e.type === 'BudgetReserved' || e.type === 'BudgetRefused') {
      const d = e.data as BudgetReserved | BudgetRefused;
      const recorded = e.type === 'BudgetRefused' ? 'refuse' : (d as BudgetReserved).held ? 'hold' : 'reserve';
      const at = e.type === 'BudgetRefused' ? (d as BudgetRefused).refusedAt : (d as BudgetReserved).reservedAt;
      const worst: WorstCase = { worstCaseMicros: d.worstCaseMicros, currency: d.currency, gpus: d.gpus, timeLimitMs: d.timeLimitMs, rateMicrosPerGpuHour: d.rateMicrosPerGpuHour, priceListVersion: d.priceListVersion };
      const again = decideAdmission(account, { jobId: d.jobId, worst, now: new Date(at) });
      const derived = again.kind === 'reserve' ? (again.held ? 'hold' : 'reserve') : again.kind;
      decisions.push({ jobId: d.jobId, decision: recorded });
      if (derived !== recorded) mismatches.push({ revision: e.revision, jobId: d.jobId, recorded, derived });
    }
    account = evolveBudget(account, e, e.revision);
  }
  return { account, decisions, mismatches };
}

export { budgetMonth };
