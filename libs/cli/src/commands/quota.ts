/**
 * `gpunet quota set` and `gpunet quota show`: GPU quotas per team and GPU model (decision 0027) —
 * concurrent GPUs, GPU-hours per calendar month (UTC), borrowing of idle GPUs. Setting needs an
 * API key with role `billing`; every key shows its own team's.
 */
import type { QuotasReply, QuotaUsage, SetQuota } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';

const HOUR_MS = 3_600_000;

/** GPU-ms as GPU-hours with one decimal (display only; the figure itself stays integer ms). */
const hours = (ms: number) => (Math.floor(ms / (HOUR_MS / 10)) / 10).toFixed(1);

/** One row per team and model: quota, in use, borrowed, GPU-hours used/limit this month, jobs held back. Pure. */
export function renderQuotas(month: string, rows: readonly QuotaUsage[]): string {
  if (rows.length === 0) return 'no GPU quota is set';
  return table(
    ['TEAM', 'GPU MODEL', 'QUOTA', 'IN USE', 'BORROWED', `GPU-HOURS ${month}`, 'BORROW', 'WAITING'],
    rows.map((r) => [r.team, r.gpuModel, r.gpus === null ? 'no limit' : String(r.gpus), String(r.inUse), String(r.borrowed), `${hours(r.heldMs)}/${r.gpuHours === null ? 'no limit' : r.gpuHours}`, r.borrow ? 'on' : 'off', String(r.waiting)]),
    ['l', 'l', 'r', 'r', 'r', 'r', 'l', 'r'],
  );
}

/** A whole number from 0, or `none` for no limit. */
function limit(value: string | undefined, flag: string, example: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === 'none') return null;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new UsageError(`${flag} must be a whole number from 0, or none for no limit; got ${value}`, [{ path: flag, message: 'must be a whole number ≥ 0 or none', fix: `write e.g. \`${flag} ${example}\`` }]);
  return n;
}

export interface QuotaSetFlags {
  team?: string;
  model?: string;
  gpus?: string;
  gpuHours?: string;
  borrow?: string;
}

/** Parses `gpunet quota set` flags into the request. Pure. */
export function quotaRequest(opts: QuotaSetFlags): SetQuota {
  if (!opts.team) throw new UsageError('--team is required', [{ path: '--team', message: 'is missing', fix: 'write e.g. `--team team-ml`' }]);
  if (!opts.model) throw new UsageError('--model is required', [{ path: '--model', message: 'is missing', fix: 'write e.g. `--model H100`' }]);
  if (opts.borrow !== undefined && opts.borrow !== 'on' && opts.borrow !== 'off') {
    throw new UsageError(`--borrow must be on or off; got ${opts.borrow}`, [{ path: '--borrow', message: 'must be on or off', fix: 'write `--borrow on` to let the team use idle GPUs past its quota' }]);
  }
  const gpus = limit(opts.gpus, '--gpus', '16');
  const gpuHours = limit(opts.gpuHours, '--gpu-hours', '2000');
  return { team: opts.team, gpuModel: opts.model, ...(gpus !== undefined ? { gpus } : {}), ...(gpuHours !== undefined ? { gpuHours } : {}), ...(opts.borrow !== undefined ? { borrow: opts.borrow === 'on' } : {}) };
}

export async function quotaSet(ctx: CommandContext, opts: QuotaSetFlags): Promise<ExitCode> {
  const request = quotaRequest(opts);
  const reply = await (await ctx.client()).setQuota(request);
  ctx.out.doc(reply);
  ctx.out.line(renderQuotas(reply.setAt?.slice(0, 7) ?? 'this month', [reply]));
  return EXIT.ok;
}

export async function quotaShow(ctx: CommandContext, opts: { team?: string }): Promise<ExitCode> {
  const reply: QuotasReply = await (await ctx.client()).quotas(opts.team !== undefined ? { team: opts.team } : {});
  ctx.out.doc(reply);
  ctx.out.line(renderQuotas(reply.month, reply.quotas));
  return EXIT.ok;
}
