/** `gpunet capacity [--hours N]`: free GPUs per GPU model per hour ahead, from the live plan, and the GPU quotas the key may see; tables, or the reply with `--json`. */
import type { CapacityReply } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';
import { renderQuotas } from './quota.js';

/** One row per hour (its UTC start), one column per model: `free/total`. Pure. */
export function renderCapacity(c: CapacityReply): string {
  const models = c.totals.map((t) => t.gpuModel);
  if (models.length === 0) return 'no node is registered';
  const rows = c.hours.map((h) => [h.start.slice(0, 16).replace('T', ' '), ...c.totals.map((t) => `${h.free.find((f) => f.gpuModel === t.gpuModel)?.gpus ?? 0}/${t.gpus}`)]);
  return table(['hour (UTC)', ...models], rows, ['l', ...models.map(() => 'r' as const)]);
}

/** Recent quote accuracy, one line; undefined when placement gave none. Pure. */
export function renderQuotes(c: CapacityReply): string | undefined {
  const q = c.quotes;
  if (!q) return undefined;
  const s = (ms: number | undefined) => (ms === undefined ? 'n/a' : `${ms >= 0 ? '+' : ''}${(ms / 1000).toFixed(0)} s`);
  const starts = q.started === 0 ? 'no quoted job started' : `${q.started} quoted job(s) started: median start error ${s(q.medianStartErrorMs)}, p90 |error| ${s(q.p90StartErrorMs).replace('+', '')}`;
  const ended = q.ended ?? 0;
  const ends = ended === 0 ? '' : `; ${ended} with a quoted end ended: median end error ${s(q.medianEndErrorMs)}, p90 |error| ${s(q.p90EndErrorMs).replace('+', '')}`;
  const deadlines = q.deadlinesAccepted === 0 ? 'no job with a deadline ended' : `deadlines met ${q.deadlinesMet}/${q.deadlinesAccepted} (${((100 * q.deadlinesMet) / q.deadlinesAccepted).toFixed(0)} %)`;
  return `quotes since ${q.since.slice(0, 16).replace('T', ' ')} UTC: ${starts}${ends}; ${deadlines}`;
}

export async function capacity(ctx: CommandContext, opts: { hours?: string }): Promise<ExitCode> {
  const hours = opts.hours === undefined ? undefined : Number(opts.hours);
  if (hours !== undefined && (!Number.isInteger(hours) || hours < 1 || hours > 168)) {
    throw new UsageError(`--hours must be a whole number from 1 to 168, got ${opts.hours}`, [{ path: '--hours', message: 'must be 1–168', fix: 'write e.g. `--hours 24`' }]);
  }
  const client = await ctx.client();
  const reply = await client.capacity(hours !== undefined ? { hours } : {});
  ctx.out.doc(reply);
  ctx.out.line(renderCapacity(reply));
  const quotes = renderQuotes(reply);
  if (quotes !== undefined) ctx.out.line(quotes);
  if (reply.quotas && reply.quotas.list.length > 0) ctx.out.line(renderQuotas(reply.quotas.month, reply.quotas.list));
  return EXIT.ok;
}
