/**
 * Budgets: what a team may commit to spend per UTC month, decided before compute is held.
 *
 * One stream per team, `intake-budget-<team>`, written by intake alone and always with the
 * stream's expected revision: the budget set or cleared, every job's worst case reserved (or
 * refused), every reservation released by the job's real charge when it ends, and the soft
 * thresholds crossed. Folding that stream gives the account at any revision, so a replay of the
 * log re-derives every accept, hold and refuse (docs/decisions/0026-budget-writer-in-intake.md).
 *
 * People reach the commands through intake (HTTP `/v1/budgets`, or NATS with the same
 * `Authorization: Bearer <key>` header): role `billing` sets and clears any team's budget; every
 * role reads its own team's.
 */
import { z } from 'zod';
import { fieldError, strictObject } from './issues.js';
import { defineCommand, defineEvent, defineQuery } from './message.js';
import { Currency, DurationMs, GpuCount, JobId, Micros, TeamId, Timestamp } from './primitives.js';

// ── primitives ────────────────────────────────────────────────────────────────────────────

export const BUDGET_ON_EXCEED = ['refuse', 'hold'] as const;
export type BudgetOnExceed = (typeof BUDGET_ON_EXCEED)[number];
export const BudgetOnExceed = z
  .enum(BUDGET_ON_EXCEED, { error: fieldError('onExceed', 'must be `refuse` or `hold`', 'write e.g. `--on-exceed hold`') })
  .describe('What a submit that would take the team past its budget gets: `refuse` (an error naming the figures; the default) or `hold` (accepted, waits in the queue with reason `BudgetExceeded` until the budget allows it).');

/** The soft thresholds when none are given, in percent of the monthly amount. */
export const DEFAULT_BUDGET_THRESHOLDS = [50, 80, 100] as const;

const thresholdError = fieldError('thresholdsPercent', 'must be 1–10 distinct whole percentages from 1 to 1000', 'write e.g. `[50, 80, 100]`');
export const BudgetThresholds = z
  .array(z.int({ error: thresholdError }).min(1, { error: thresholdError }).max(1000, { error: thresholdError }), { error: thresholdError })
  .min(1, { error: thresholdError })
  .max(10, { error: thresholdError })
  .refine((t) => new Set(t).size === t.length, { error: thresholdError })
  .describe('Soft thresholds in percent of the monthly amount: crossing one (spent + reserved) records `BudgetThresholdCrossed` once per month.');

const monthlyError = fieldError('monthlyMicros', 'must be a whole number of micro-units ≥ 0', 'write e.g. `5000000000` for 5000.00 (the CLI takes `--monthly 5000.00`)');
const MonthlyMicros = z.int({ error: monthlyError }).min(0, { error: monthlyError }).max(Number.MAX_SAFE_INTEGER, { error: monthlyError });

/** Who did it: the acting API key's id and team. */
const BudgetActor = z.object({ keyId: z.string().min(1).describe('Id of the acting API key (never the key itself).'), team: TeamId }).describe('The API key that made the change (its id and team), never the key itself.');

// ── events ────────────────────────────────────────────────────────────────────────────────

export const BudgetSet = z.object({
  team: TeamId,
  monthlyMicros: Micros.describe('What the team may commit per UTC month (spent + reserved), in micro-units of `currency`.'),
  currency: Currency.describe('The price list\'s currency the amount is in.'),
  onExceed: BudgetOnExceed,
  thresholdsPercent: z.array(z.int().min(1).max(1000)).describe('Soft thresholds, ascending, in percent.'),
  setBy: BudgetActor,
  setAt: Timestamp,
});
export type BudgetSet = z.output<typeof BudgetSet>;

export const BudgetCleared = z.object({ team: TeamId, clearedBy: BudgetActor, clearedAt: Timestamp });
export type BudgetCleared = z.output<typeof BudgetCleared>;

const worstCaseShape = {
  team: TeamId,
  jobId: JobId,
  worstCaseMicros: Micros.describe('The job\'s charge at most: gpus × time limit × rate, priced by the ledger\'s rule (`gpunet.qry.ledger.Quote`).'),
  currency: Currency,
  gpus: GpuCount,
  timeLimitMs: DurationMs,
  rateMicrosPerGpuHour: Micros.describe('The rate the worst case was priced at (the highest of the list when the job names no GPU model).'),
  priceListVersion: z.int().min(1).describe('The price list version the rate comes from.'),
};

export const BudgetReserved = z.object({
  ...worstCaseShape,
  held: z.boolean().describe('True when the team\'s budget says `hold` and the job did not fit when submitted: it waits in the queue (reason `BudgetExceeded`) until the reservations before it and its own fit.'),
  reservedAt: Timestamp,
});
export type BudgetReserved = z.output<typeof BudgetReserved>;

export const BudgetRefused = z.object({
  ...worstCaseShape,
  monthlyMicros: Micros,
  spentMicros: Micros.describe('Charged this month by jobs that ended, when refused.'),
  reservedMicros: Micros.describe('Worst cases of the team\'s jobs that had not ended, when refused.'),
  refusedAt: Timestamp,
});
export type BudgetRefused = z.output<typeof BudgetRefused>;

export const BudgetReleased = z.object({
  team: TeamId,
  jobId: JobId,
  reservedMicros: Micros.describe('The worst case that was reserved.'),
  chargedMicros: Micros.describe('What the job was billed (its `JobEnded` total in the budget\'s currency): it counts as spent this month from now.'),
  releasedAt: Timestamp,
});
export type BudgetReleased = z.output<typeof BudgetReleased>;

export const BudgetThresholdCrossed = z.object({
  team: TeamId,
  jobId: JobId.optional().describe('The job whose reservation crossed it.'),
  month: z.string().regex(/^\d{4}-\d{2}$/).describe('UTC month, `YYYY-MM`.'),
  thresholdPercent: z.int().min(1).describe('The threshold crossed, in percent of the monthly amount.'),
  committedMicros: Micros.describe('Spent this month + reserved, when crossed.'),
  monthlyMicros: Micros,
  currency: Currency,
  crossedAt: Timestamp,
});
export type BudgetThresholdCrossed = z.output<typeof BudgetThresholdCrossed>;

export const budgetEvents = [
  defineEvent({ name: 'BudgetSet', version: 1, producers: ['intake'], description: 'A team\'s monthly budget was set (role `billing`): amount, currency, refuse or hold, soft thresholds, who and when.', schema: BudgetSet }),
  defineEvent({ name: 'BudgetCleared', version: 1, producers: ['intake'], description: 'A team\'s budget was removed (role `billing`): its jobs are no longer checked.', schema: BudgetCleared }),
  defineEvent({
    name: 'BudgetReserved',
    version: 1,
    producers: ['intake'],
    description: 'A submitted job\'s worst-case charge was reserved in its team\'s budget (recorded before its JobSubmitted); `held` when it waits for the budget.',
    schema: BudgetReserved,
  }),
  defineEvent({ name: 'BudgetRefused', version: 1, producers: ['intake'], description: 'A submit was refused because its worst case would take the team past its budget; the figures as decided.', schema: BudgetRefused }),
  defineEvent({ name: 'BudgetReleased', version: 1, producers: ['intake'], description: 'A job ended: its reservation is replaced by what it was billed.', schema: BudgetReleased }),
  defineEvent({
    name: 'BudgetThresholdCrossed',
    version: 1,
    producers: ['intake'],
    description: 'The team\'s committed spend this month (spent + reserved) reached a soft threshold of its budget; on the team feed of the job that crossed it.',
    schema: BudgetThresholdCrossed,
  }),
] as const;

// ── commands and queries ──────────────────────────────────────────────────────────────────

export const SetBudget = strictObject(
  {
    team: TeamId.optional().describe('The team. Default: the caller\'s team.'),
    monthlyMicros: MonthlyMicros.describe('Per UTC month, in micro-units, e.g. `5000000000` for 5000.00.'),
    currency: Currency.optional().describe('Default: the currency of the price list in force.'),
    onExceed: BudgetOnExceed.default('refuse'),
    thresholdsPercent: BudgetThresholds.default([...DEFAULT_BUDGET_THRESHOLDS]),
  },
  'SetBudget',
).describe('Set a team\'s monthly budget (role `billing`).');
export type SetBudget = z.output<typeof SetBudget>;

export const ClearBudget = strictObject({ team: TeamId.optional().describe('Default: the caller\'s team.') }, 'ClearBudget').describe('Remove a team\'s budget (role `billing`).');
export type ClearBudget = z.output<typeof ClearBudget>;

export const GetBudget = strictObject({ team: TeamId.optional().describe('Default: the caller\'s team; another team\'s needs role `billing`.') }, 'GetBudget').describe('A team\'s budget and this month\'s figures.');
export type GetBudget = z.output<typeof GetBudget>;

export const BudgetView = z
  .object({
    team: TeamId,
    month: z.string().describe('The UTC month of the figures, `YYYY-MM`.'),
    budget: BudgetSet.omit({ team: true }).optional().describe('The budget in force; absent: none (jobs are not checked).'),
    spentMicros: Micros.describe('Billed this month for jobs that ended.'),
    reservedMicros: Micros.describe('Worst cases of jobs that have not ended.'),
    remainingMicros: z.int().describe('monthly − spent − reserved; negative when held jobs wait beyond the budget. Absent budget: 0.'),
    heldJobs: z.array(JobId).describe('Reserved jobs that have not run and do not fit the budget now, in order: they wait in the queue with reason `BudgetExceeded`.'),
    thresholdsCrossed: z.array(z.int()).describe('Thresholds crossed this month.'),
    revision: z.string().describe('Revision of the budget stream the figures are at (`-1`: nothing recorded).'),
  })
  .describe('A team\'s budget and where it stands this month.');
export type BudgetView = z.output<typeof BudgetView>;

/** What a submit or an estimate says of the budget. */
export const BudgetFigures = z
  .object({
    worstCaseMicros: Micros.describe('The job\'s charge at most: gpus × time limit × rate.'),
    currency: Currency,
    monthlyMicros: Micros.optional().describe('The team\'s monthly budget; absent: none.'),
    spentMicros: Micros.describe('Billed this month for jobs that ended.'),
    reservedMicros: Micros.describe('Worst cases of the team\'s other jobs that have not ended.'),
    remainingMicros: z.int().optional().describe('What remains this month after this job: monthly − spent − reserved − this job (absent without a budget).'),
    onExceed: BudgetOnExceed.optional(),
    held: z.boolean().describe('True when the job waits for the budget (reason `BudgetExceeded`).'),
  })
  .describe('The job\'s worst case and the team\'s budget this month, counting this job.');
export type BudgetFigures = z.output<typeof BudgetFigures>;

export const budgetCommands = [
  defineCommand({ name: 'SetBudget', version: 1, handler: 'intake', description: 'Set a team\'s monthly budget (role `billing`). Same as `PUT /v1/budgets/{team}`.', schema: SetBudget, replySchema: BudgetView }),
  defineCommand({ name: 'ClearBudget', version: 1, handler: 'intake', description: 'Remove a team\'s budget (role `billing`). Same as `DELETE /v1/budgets/{team}`.', schema: ClearBudget, replySchema: BudgetView }),
] as const;

export const budgetQueries = [
  defineQuery({ name: 'GetBudget', version: 1, service: 'intake', description: 'A team\'s budget and this month\'s figures (own team; `billing` any). Same as `GET /v1/budgets/{team}`.', schema: GetBudget, replySchema: BudgetView }),
] as const;
