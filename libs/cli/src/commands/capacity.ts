/** `gpunet capacity [--hours N]`: free GPUs per GPU model per hour ahead, from the live plan; a table, or the reply with `--json`. */
import type { CapacityReply } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';

/** One row per hour (its UTC start), one column per model: `free/total`. Pure. */
export function renderCapacity(c: CapacityReply): string {
  const models = c.totals.map((t) => t.gpuModel);
  if (models.length === 0) return 'no node is registered';
  const rows = c.hours.map((h) => [h.start.slice(0, 16).replace('T', ' '), ...c.totals.map((t) => `${h.free.find((f) => f.gpuModel === t.gpuModel)?.gpus ?? 0}/${t.gpus}`)]);
  return table(['hour (UTC)', ...models], rows, ['l', ...models.map(() => 'r' as const)]);
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
  return EXIT.ok;
}
