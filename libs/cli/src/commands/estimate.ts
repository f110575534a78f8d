/**
 * `gpunet estimate job.yaml`: where the job would land if submitted now — expected start and end,
 * the GPU model, and the charge of its whole time limit — without submitting it. Local inputs are
 * not uploaded (neither the plan nor the price depends on them). The estimate is recorded: it
 * prints its id and the submit that holds the job to it (`gpunet submit job.yaml --estimate <id>`).
 */
import type { EstimateJobReply } from '#contracts';
import { parseJobFileText } from '#sdk';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatMicros, formatWait } from '../format.js';
import { renderBudgetFigures } from './budget.js';
import { applyOverrides, type SubmitFlags } from '../spec-from-flags.js';

export type EstimateOptions = Pick<SubmitFlags, 'gpus' | 'gpuModel' | 'timeLimit' | 'deadline'>;

/** Why a job cannot run, for people. */
const NOT_RUNNABLE: Record<string, string> = {
  NoNodes: 'no node is registered',
  NoNodeFits: 'the network does not have that many GPUs of one model (of the requested model), even over several nodes',
  Unpredictable: 'it would wait behind work whose end is unknown',
  QuotaExceeded: 'your team is at its GPU quota for the model (see `gpunet quota show`)',
};

/** Why it would wait, for people. */
const WAITS: Record<string, string> = {
  StartsNow: 'GPUs are free now',
  Resources: 'it waits for running work to end',
  Reservation: 'it waits: it would run into a reservation of a higher-priority job',
  Priority: 'it waits behind higher-priority jobs',
};

/** The estimate as people read it; pure, so it is tested without a network. */
export function renderEstimate(e: EstimateJobReply): string {
  if (!e.runnable) return [`cannot run: ${NOT_RUNNABLE[e.reason] ?? e.reason} (${e.reason})`, ...(e.budget ? [renderBudgetFigures(e.budget)] : [])].join('\n');
  const start = Date.parse(e.expectedStart!);
  const wait = Math.max(0, start - Date.parse(e.at));
  const lines = [
    `starts:   ${wait === 0 ? 'now' : `in ${formatWait(wait)}`} (${e.expectedStart}) — ${WAITS[e.reason] ?? e.reason}`,
    `ends by:  ${e.expectedEnd}`,
    `GPUs:     ${e.gpuModel}${e.nodes !== undefined && e.nodes > 1 ? ` over ${e.nodes} whole nodes (the job is larger than any node)` : ''}`,
  ];
  if (e.charge) {
    lines.push(`charge:   at most ${formatMicros(e.charge.amountMicros)} ${e.charge.currency} (${formatMicros(e.charge.rateMicrosPerGpuHour)} per GPU-hour, price list v${e.charge.priceListVersion})`);
  }
  if (e.budget) lines.push(renderBudgetFigures(e.budget));
  if (e.deadlineAt) lines.push(`deadline: ${e.deadlineAt} — ${Date.parse(e.expectedEnd!) <= Date.parse(e.deadlineAt) ? 'met' : 'NOT met by the current plan'}`);
  return lines.join('\n');
}

/** A shell word as typed: quoted only when it has to be. */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=+@%-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

/**
 * The submit that holds the job to an estimate: the same file and request flags as the
 * estimate (the request must be the one estimated), and `--estimate <id>`. Pure.
 */
export function submitOnEstimate(file: string, opts: EstimateOptions, estimateId: string): string {
  const flags: string[] = [];
  if (opts.gpus !== undefined) flags.push('--gpus', opts.gpus);
  if (opts.gpuModel !== undefined) flags.push('--gpu-model', opts.gpuModel);
  if (opts.timeLimit !== undefined) flags.push('--time-limit', opts.timeLimit);
  if (opts.deadline !== undefined) flags.push('--deadline', opts.deadline);
  return ['gpunet', 'submit', file, ...flags, '--estimate', estimateId].map(shellWord).join(' ');
}

export async function estimate(ctx: CommandContext, operands: string[], opts: EstimateOptions): Promise<ExitCode> {
  if (operands.length !== 1) {
    throw new UsageError(operands.length === 0 ? 'nothing to estimate' : `one job file at a time, got ${operands.length} operands`, [
      { path: 'job.yaml', message: 'expected exactly one job file', fix: 'write `gpunet estimate job.yaml`' },
    ]);
  }
  const file = resolve(ctx.io.cwd, operands[0]!);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, [{ path: 'job.yaml', message: `cannot read ${file}`, fix: 'check the path' }], { cause: err });
  }
  const spec = applyOverrides(parseJobFileText(text, operands[0]), opts);
  const client = await ctx.client();
  const reply = await client.estimate(spec);
  ctx.out.doc(reply);
  ctx.out.line(renderEstimate(reply));
  if (reply.estimateId !== undefined) {
    ctx.out.line(`estimate: ${reply.estimateId} — hold the job to it: ${submitOnEstimate(operands[0]!, opts, reply.estimateId)}`);
  }
  return EXIT.ok;
}
