/**
 * `gpunet budget set|show|clear`: a team's monthly budget, in the price list's currency. Setting
 * and clearing need an API key with role `billing`; every key reads its own team's budget. From
 * the moment a budget is set every submit reserves its worst case (gpus × time limit × rate) and
 * is refused, or held with reason `BudgetExceeded`, when that would take the team past it.
 */
import { BUDGET_ON_EXCEED, BudgetOnExceed, BudgetThresholds, Currency, TeamId, formatIssues, type BudgetFigures, type BudgetView } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatMicros } from '../format.js';

/**
 * A decimal amount of money as integer micro-units, exactly (no float): `5000`, `5000.00`,
 * `0.000001`. At most 6 decimals; never negative.
 */
export function parseAmountMicros(text: string, flag = '--monthly'): number {
  const m = /^(\d{1,15})(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (!m) {
    throw new UsageError(`${flag}: \`${text}\` is not an amount`, [{ path: flag, message: 'must be a non-negative amount with at most 6 decimals', fix: `write e.g. \`${flag} 5000.00\`` }]);
  }
  const micros = BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0'));
  if (micros > BigInt(Number.MAX_SAFE_INTEGER)) throw new UsageError(`${flag}: \`${text}\` is too large`, [{ path: flag, message: 'is above 9,007,199,254.740991', fix: 'give a smaller amount' }]);
  return Number(micros);
}

function checked<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: Parameters<typeof formatIssues>[0] } }, value: unknown, flag: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issues = formatIssues(result.error).map((i) => ({ ...i, path: flag }));
  throw new UsageError(`${flag}: ${issues.map((i) => i.message).join('; ')}`, issues);
}

export interface BudgetSetFlags {
  team?: string;
  monthly?: string;
  onExceed?: string;
  thresholds?: string;
  currency?: string;
}

/** The request `gpunet budget set` sends, from its flags; errors name the flag. Pure. */
export function budgetRequest(flags: BudgetSetFlags): { team: string; body: { monthlyMicros: number; onExceed?: 'refuse' | 'hold'; thresholdsPercent?: number[]; currency?: string } } {
  if (flags.team === undefined) throw new UsageError('--team is required', [{ path: '--team', message: 'is required', fix: 'write e.g. `--team team-ml`' }]);
  if (flags.monthly === undefined) throw new UsageError('--monthly is required', [{ path: '--monthly', message: 'is required', fix: 'write e.g. `--monthly 5000.00` (in the price list\'s currency)' }]);
  const team = checked(TeamId, flags.team, '--team');
  const body: ReturnType<typeof budgetRequest>['body'] = { monthlyMicros: parseAmountMicros(flags.monthly) };
  if (flags.onExceed !== undefined) body.onExceed = checked(BudgetOnExceed, flags.onExceed, '--on-exceed');
  if (flags.thresholds !== undefined) body.thresholdsPercent = checked(BudgetThresholds, flags.thresholds.split(',').map((t) => (/^\s*\d+\s*$/.test(t) ? Number(t) : t)), '--thresholds');
  if (flags.currency !== undefined) body.currency = checked(Currency, flags.currency, '--currency');
  return { team, body };
}

/** A budget as people read it. Pure. */
export function renderBudget(v: BudgetView): string {
  if (!v.budget) return `team ${v.team} has no budget: its jobs are not checked (a key with role billing sets one with \`gpunet budget set --team ${v.team} --monthly AMOUNT\`)`;
  const b = v.budget;
  const c = b.currency;
  const lines = [
    `team ${v.team}: ${formatMicros(b.monthlyMicros)} ${c} per month, ${b.onExceed === 'hold' ? 'holds' : 'refuses'} jobs beyond it; thresholds ${b.thresholdsPercent.join(', ')} %`,
    `  ${v.month}: spent ${formatMicros(v.spentMicros)} + reserved ${formatMicros(v.reservedMicros)} = ${formatMicros(v.spentMicros + v.reservedMicros)} ${c}; remaining ${formatMicros(v.remainingMicros)} ${c}`,
    `  set ${b.setAt} by ${b.setBy.team}/${b.setBy.keyId}`,
  ];
  if (v.thresholdsCrossed.length > 0) lines.push(`  thresholds crossed this month: ${v.thresholdsCrossed.join(', ')} %`);
  if (v.heldJobs.length > 0) lines.push(`  held (BudgetExceeded): ${v.heldJobs.join(', ')}`);
  return lines.join('\n');
}

/** The budget lines of a submit or an estimate. Pure. */
export function renderBudgetFigures(f: BudgetFigures): string {
  const c = f.currency;
  const worst = `worst case: ${formatMicros(f.worstCaseMicros)} ${c} (request × time limit × rate)`;
  if (f.monthlyMicros === undefined) return worst;
  const remaining = `budget:     ${formatMicros(f.remainingMicros ?? 0)} ${c} of ${formatMicros(f.monthlyMicros)} ${c} remain this month after it (spent ${formatMicros(f.spentMicros)}, reserved ${formatMicros(f.reservedMicros)})`;
  return [worst, remaining, ...(f.held ? ['held:       beyond the budget; it waits in the queue (BudgetExceeded) until the budget allows it'] : [])].join('\n');
}

export async function budgetSet(ctx: CommandContext, flags: BudgetSetFlags): Promise<ExitCode> {
  const { team, body } = budgetRequest(flags);
  const view = await (await ctx.client()).setBudget(team, body);
  ctx.out.doc(view);
  ctx.out.line(renderBudget(view));
  return EXIT.ok;
}

export async function budgetShow(ctx: CommandContext, flags: { team?: string }): Promise<ExitCode> {
  const view = await (await ctx.client()).budget(flags.team === undefined ? undefined : checked(TeamId, flags.team, '--team'));
  ctx.out.doc(view);
  ctx.out.line(renderBudget(view));
  return EXIT.ok;
}

export async function budgetClear(ctx: CommandContext, flags: { team?: string }): Promise<ExitCode> {
  if (flags.team === undefined) throw new UsageError('--team is required', [{ path: '--team', message: 'is required', fix: 'write e.g. `--team team-ml`' }]);
  const view = await (await ctx.client()).clearBudget(checked(TeamId, flags.team, '--team'));
  ctx.out.doc(view);
  ctx.out.line(renderBudget(view));
  return EXIT.ok;
}

export { BUDGET_ON_EXCEED };
