/**
 * One call from SWF text to a report: parse, map to GPU jobs, size the cluster, replay through
 * placement's core, measure. Pure (the caller reads the file).
 */
import { DEFAULT_HEADROOM, type Headroom, type PlanOptions, type PriorityWeights } from '../domain/index.js';
import { computeMetrics, type SimulationMetrics } from './metrics.js';
import { planOptionsFor, type PolicyName } from './policies.js';
import { replay } from './replay.js';
import { parseSwf } from './swf.js';
import { toWorkload } from './workload.js';

export interface SimulateOptions {
  /** Processors per GPU (default 1). */
  procsPerGpu?: number;
  /**
   * Nodes of the cluster. Default: the trace's machine (header `MaxProcs`, else `MaxNodes`, in
   * GPUs) divided by `gpusPerNode`, rounded up.
   */
  nodes?: number;
  /** GPUs per node. Default: the machine divided by `nodes` when `nodes` is given, else 1 (one GPU per processor, the traces' own shape). */
  gpusPerNode?: number;
  /** Default `default`. */
  policy?: PolicyName;
  /** EASY backfilling on or off, for any policy. Default: the policy's (on). */
  backfill?: boolean;
  /** Reservations held by the highest-ranked waiting jobs. Default: the policy's (1 for fcfs and sjf). */
  reservationDepth?: number;
  /** Run-time predictions from history (on) or the requested times (off). Default: the policy's (on). */
  predictions?: boolean;
  /** Priority weights over the default's (only the `default` policy ranks by priority). */
  weights?: Partial<PriorityWeights>;
  /** Headroom for short work (`plan.ts`): long work's share of the GPUs, percent (100: none), and the predicted run (ms) from which work is long. Default: the policy's (the default's 80 % from 1 h; none for fcfs and sjf). */
  longWork?: { sharePercent?: number; fromMs?: number };
}

/** The result: what ran on which cluster under which policy, the metrics, and notes for people. */
export interface SimulationReport {
  policy: PolicyName;
  backfill: 'on' | 'off';
  reservationDepth: number;
  predictions: 'on' | 'off';
  /** Long work's share of the GPUs while short work flows, percent (100: no headroom). */
  longWorkSharePercent: number;
  cluster: { nodes: number; gpusPerNode: number; totalGpus: number };
  procsPerGpu: number;
  /** Job lines skipped because the trace does not know their processors. */
  skipped: number;
  metrics: SimulationMetrics;
  /** Passes of the core run, and their wall time (ms; the only figure that varies between runs). */
  passes: number;
  elapsedMs: number;
  notes: string[];
}

/** Thrown when the cluster size is neither given nor derivable from the trace header. */
export class ClusterSizeUnknownError extends RangeError {
  constructor() {
    super('the trace header has neither MaxProcs nor MaxNodes: give the cluster size with --nodes');
    this.name = 'ClusterSizeUnknownError';
  }
}

/** Runs the whole simulation over SWF text. `clock` measures the elapsed time only (default: none, 0). */
export function simulate(swfText: string, options: SimulateOptions = {}, clock: () => number = () => 0): SimulationReport {
  const trace = parseSwf(swfText);
  const procsPerGpu = options.procsPerGpu ?? 1;
  const workload = toWorkload(trace.jobs, { procsPerGpu });
  const { nodes, gpusPerNode, from } = clusterOf(trace.header, procsPerGpu, options);
  const policy = options.policy ?? 'default';
  const overrides: PlanOptions = {
    ...(options.backfill !== undefined ? { backfill: options.backfill } : {}),
    ...(options.reservationDepth !== undefined ? { reservationDepth: options.reservationDepth } : {}),
    ...(options.predictions !== undefined ? { predictions: options.predictions } : {}),
    ...(options.weights !== undefined ? { weights: options.weights as PriorityWeights } : {}),
    ...(options.longWork !== undefined ? { headroom: headroomOf(options.longWork, planOptionsFor(policy).headroom) } : {}),
  };
  const plan = planOptionsFor(policy, overrides);
  const started = clock();
  const result = replay(workload.jobs, { cluster: { nodes, gpusPerNode }, policy, plan: overrides });
  const elapsedMs = clock() - started;
  const notes: string[] = [];
  if (from) notes.push(`cluster from the header's ${from}: ${nodes} node(s) × ${gpusPerNode} GPU(s)`);
  if (options.weights !== undefined && policy !== 'default') notes.push(`weights ignored: ${policy} ranks by ${policy === 'fcfs' ? 'submit order' : 'run time'}, not by priority`);
  if (workload.skipped.length > 0) notes.push(`${workload.skipped.length} job line(s) skipped: processors unknown (first: line ${workload.skipped[0]!.line})`);
  if (workload.unknownRunTime > 0) notes.push(`${workload.unknownRunTime} job(s) with an unknown run time replayed as 10 s`);
  if (workload.overran > 0) notes.push(`${workload.overran} job(s) ran past their requested time; their limit was raised to the run time`);
  if (result.rejected.length > 0) notes.push(`${result.rejected.length} job(s) rejected by the core (first: ${result.rejected[0]!.jobId}: ${result.rejected[0]!.message})`);
  return {
    policy,
    backfill: (plan.backfill ?? true) ? 'on' : 'off',
    reservationDepth: plan.reservationDepth ?? 0,
    predictions: (plan.predictions ?? true) ? 'on' : 'off',
    longWorkSharePercent: plan.headroom === false || plan.headroom === undefined ? 100 : Math.round(plan.headroom.share * 100),
    cluster: { nodes, gpusPerNode, totalGpus: result.totalGpus },
    procsPerGpu,
    skipped: workload.skipped.length,
    metrics: computeMetrics(result),
    passes: result.passes ?? 0,
    elapsedMs,
    notes,
  };
}

/** The cluster's shape from the options and the header (`MaxProcs`, else `MaxNodes`: processors of the traced machine). */
function clusterOf(header: Record<string, string>, procsPerGpu: number, o: SimulateOptions): { nodes: number; gpusPerNode: number; from?: string } {
  if (o.nodes !== undefined && o.gpusPerNode !== undefined) return { nodes: o.nodes, gpusPerNode: o.gpusPerNode };
  const key = ['MaxProcs', 'MaxNodes'].find((k) => Number.isInteger(Number(header[k])) && Number(header[k]) >= 1);
  if (key === undefined) {
    if (o.nodes !== undefined) return { nodes: o.nodes, gpusPerNode: 1 };
    throw new ClusterSizeUnknownError();
  }
  const gpus = Math.ceil(Number(header[key]) / procsPerGpu);
  if (o.nodes !== undefined) return { nodes: o.nodes, gpusPerNode: Math.max(1, Math.ceil(gpus / o.nodes)), from: key };
  const gpusPerNode = o.gpusPerNode ?? 1;
  return { nodes: Math.max(1, Math.ceil(gpus / gpusPerNode)), gpusPerNode, from: key };
}

/** `--long-work-share` / `--long-work-from` over the policy's headroom: 100 % is none. */
function headroomOf(longWork: NonNullable<SimulateOptions['longWork']>, base: PlanOptions['headroom']): Headroom | false {
  const share = longWork.sharePercent ?? (base ? Math.round(base.share * 100) : 100);
  if (share >= 100) return false;
  return { share: share / 100, longRunMs: longWork.fromMs ?? (base ? base.longRunMs : DEFAULT_HEADROOM.longRunMs) };
}
