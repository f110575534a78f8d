/**
 * `gpunet simulate`: replays an SWF trace through placement's scheduling core in virtual time and
 * prints the metrics. The simulator lives in services/placement (it needs the pure core, and
 * libs/ may not import a service), so this command runs its built entry point as a child process
 * and reads its one JSON document (docs/decisions/0005-simulator-placement.md).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { displayPath, formatMs, table } from '../format.js';
import { repoRoot } from '../local/environment.js';

export interface SimulateFlags {
  trace: string;
  procsPerGpu?: string;
  nodes?: string;
  gpusPerNode?: string;
  policy?: 'default' | 'fcfs' | 'sjf';
  backfill?: 'on' | 'off';
  reservationDepth?: string;
  predictions?: 'on' | 'off';
  weights?: string;
  longWorkShare?: string;
  longWorkFrom?: string;
}

/** Priority weights `--weights` may set. */
const WEIGHT_NAMES = ['age', 'ageCapMs', 'fairShare', 'size', 'sizeFullGpus', 'runTime', 'runTimeScaleMs'] as const;

/** The simulator's report as `main.js` prints it; checked, so a drift between the two fails loudly. */
const Report = z.object({
  policy: z.string(),
  backfill: z.enum(['on', 'off']),
  reservationDepth: z.number().int(),
  predictions: z.enum(['on', 'off']),
  longWorkSharePercent: z.number().int(),
  passes: z.number().int(),
  elapsedMs: z.number(),
  cluster: z.object({ nodes: z.number(), gpusPerNode: z.number(), totalGpus: z.number() }),
  procsPerGpu: z.number(),
  skipped: z.number(),
  metrics: z.object({
    jobs: z.number(),
    rejected: z.number(),
    averageWaitMs: z.number().int(),
    averageBoundedSlowdown: z.number(),
    utilization: z.number(),
    utilizationToLastStart: z.number(),
    p95WaitSmallHalfMs: z.number().int(),
    maxWaitLargest10PctMs: z.number().int(),
    spanMs: z.number().int(),
  }),
  notes: z.array(z.string()),
});
export type SimulationReportDoc = z.infer<typeof Report>;

const Reply = z.union([
  z.object({ report: Report }),
  z.object({ error: z.object({ code: z.string(), message: z.string(), issues: z.array(z.object({ path: z.string(), message: z.string(), fix: z.string().optional() })) }) }),
]);

/** The built simulator entry point. */
export function simulatorEntry(root: string): string {
  return join(root, 'dist', 'services', 'placement', 'src', 'simulator', 'main.js');
}

/** Flags to the simulator's request options; a UsageError naming the flag for a bad number. */
export function simulateOptions(flags: Omit<SimulateFlags, 'trace'>): Record<string, unknown> {
  const int = (flag: string, value: string | undefined) => {
    if (value === undefined) return undefined;
    if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`${flag} must be a positive integer, got \`${value}\``, [{ path: flag, message: 'must be a positive integer', fix: `write e.g. \`${flag} 4\`` }]);
    return Number(value);
  };
  const options: Record<string, unknown> = {
    procsPerGpu: int('--procs-per-gpu', flags.procsPerGpu),
    nodes: int('--nodes', flags.nodes),
    gpusPerNode: int('--gpus-per-node', flags.gpusPerNode),
    policy: flags.policy,
    backfill: flags.backfill === undefined ? undefined : flags.backfill === 'on',
    reservationDepth: flags.reservationDepth === undefined ? undefined : flags.reservationDepth === '0' ? 0 : int('--reservation-depth', flags.reservationDepth),
    predictions: flags.predictions === undefined ? undefined : flags.predictions === 'on',
    weights: flags.weights === undefined ? undefined : weightsOf(flags.weights),
    longWork: flags.longWorkShare === undefined && flags.longWorkFrom === undefined ? undefined : longWorkOf(flags.longWorkShare, flags.longWorkFrom, int),
  };
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
}

/** `--long-work-share` (percent, 1–100) and `--long-work-from` (ms) to the simulator's `longWork`; a UsageError naming the flag. */
function longWorkOf(share: string | undefined, from: string | undefined, int: (flag: string, value: string | undefined) => number | undefined): Record<string, number> {
  const sharePercent = int('--long-work-share', share);
  if (sharePercent !== undefined && sharePercent > 100) throw new UsageError(`--long-work-share must be a percent from 1 to 100, got \`${share}\``, [{ path: '--long-work-share', message: 'must be 1–100', fix: 'write e.g. `--long-work-share 80`, or 100 for no headroom' }]);
  const fromMs = int('--long-work-from', from);
  return { ...(sharePercent !== undefined ? { sharePercent } : {}), ...(fromMs !== undefined ? { fromMs } : {}) };
}

/** `k=v,...` to priority weights; a UsageError naming the bad pair. */
function weightsOf(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const pair of text.split(',').filter((p) => p.trim() !== '')) {
    const [k, v] = pair.split('=').map((x) => x.trim());
    const fix = `write e.g. \`--weights runTime=1000,age=0\` with names among ${WEIGHT_NAMES.join(', ')}`;
    if (!k || !(WEIGHT_NAMES as readonly string[]).includes(k)) throw new UsageError(`--weights: unknown weight \`${k ?? ''}\``, [{ path: '--weights', message: `unknown weight ${k ?? ''}`, fix }]);
    if (v === undefined || !/^\d+(\.\d+)?$/.test(v)) throw new UsageError(`--weights: ${k} must be a number ≥ 0, got \`${v ?? ''}\``, [{ path: `--weights.${k}`, message: 'must be a number ≥ 0', fix }]);
    out[k] = Number(v);
  }
  return out;
}

export async function simulate(ctx: CommandContext, flags: SimulateFlags): Promise<ExitCode> {
  const options = simulateOptions(flags);
  const trace = resolve(ctx.io.cwd, flags.trace);
  const root = repoRoot();
  const entry = simulatorEntry(root);
  if (!existsSync(entry)) throw new UsageError(`the simulator is not built: ${entry} is missing`, [{ path: 'dist/', message: 'no build of the placement simulator', fix: 'run `npm run build`' }]);

  const { stdout, code } = await runNode(entry, [JSON.stringify({ trace, options })], ctx.io.cwd);
  let reply: z.infer<typeof Reply>;
  try {
    reply = Reply.parse(JSON.parse(stdout));
  } catch (err) {
    throw new Error(`the simulator (exit ${code}) did not answer with its JSON document: ${stdout.slice(0, 500)}`, { cause: err });
  }
  if ('error' in reply) {
    if (code === EXIT.usage) throw new UsageError(reply.error.message, reply.error.issues);
    throw new Error(`simulation failed: ${reply.error.message}`);
  }
  ctx.out.doc({ trace: displayPath(ctx.io.cwd, trace), ...reply.report });
  ctx.out.line(renderReport(displayPath(ctx.io.cwd, trace), reply.report));
  for (const note of reply.report.notes) ctx.out.note(`note: ${note}`);
  return EXIT.ok;
}

/** The metrics table for people. */
export function renderReport(trace: string, r: SimulationReportDoc): string {
  const m = r.metrics;
  const head = [
    `trace    ${trace}`,
    `cluster  ${r.cluster.nodes} nodes × ${r.cluster.gpusPerNode} GPUs = ${r.cluster.totalGpus} GPUs (${r.procsPerGpu} processor${r.procsPerGpu === 1 ? '' : 's'} per GPU)`,
    `policy   ${r.policy}, backfill ${r.backfill}, reservations ${r.reservationDepth}, predictions ${r.predictions}, long work ${r.longWorkSharePercent === 100 ? "unlimited" : `≤ ${r.longWorkSharePercent} % of GPUs`}`,
    '',
  ];
  const rows: [string, string][] = [
    ['jobs run', String(m.jobs)],
    ...(m.rejected > 0 ? [['jobs rejected (larger than any node)', String(m.rejected)] as [string, string]] : []),
    ...(r.skipped > 0 ? [['trace lines skipped (size unknown)', String(r.skipped)] as [string, string]] : []),
    ['average wait', formatMs(m.averageWaitMs)],
    ['average bounded slowdown (τ = 10 s)', m.averageBoundedSlowdown.toFixed(4)],
    ['utilization to the last start', `${(m.utilizationToLastStart * 100).toFixed(2)} %`],
    ['utilization to the last end', `${(m.utilization * 100).toFixed(2)} %`],
    ['p95 wait, smaller half of jobs', formatMs(m.p95WaitSmallHalfMs)],
    ['max wait, largest 10 % of jobs', formatMs(m.maxWaitLargest10PctMs)],
    ['span (first submit to last end)', formatMs(m.spanMs)],
    ['core passes (wall time)', `${r.passes} (${(r.elapsedMs / 1000).toFixed(2)} s)`],
  ];
  return `${head.join('\n')}\n${table(['METRIC', 'VALUE'], rows, ['l', 'r'])}`;
}

/** Runs `node entry ...args`, collecting stdout (stderr passes through). */
function runNode(entry: string, args: string[], cwd: string): Promise<{ stdout: string; code: number }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { cwd, stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ stdout: Buffer.concat(chunks).toString('utf8'), code: code ?? 1 }));
  });
}
