/**
 * One call from SWF text to a report: parse, map to GPU jobs, size the cluster, replay through
 * placement's core, measure. Pure (the caller reads the file).
 */
import { computeMetrics, type SimulationMetrics } from './metrics.js';
import type { PolicyName } from './policies.js';
import { replay } from './replay.js';
import { parseSwf } from './swf.js';
import { toWorkload } from './workload.js';

export interface SimulateOptions {
  /** Processors per GPU (default 1). */
  procsPerGpu?: number;
  /** Nodes of the cluster; default: the header's `MaxProcs` mapped to GPUs, divided by `gpusPerNode`, rounded up. */
  nodes?: number;
  /** GPUs per node (default 8). */
  gpusPerNode?: number;
  /** Default `default`. */
  policy?: PolicyName;
  /** The core's backfill switch, for the `default` policy; with `fcfs` or `sjf` it is noted and ignored. Default: the core's default (on). */
  backfill?: boolean;
}

/** The result: what ran on which cluster under which policy, the metrics, and notes for people. */
export interface SimulationReport {
  policy: PolicyName;
  /** `n/a` for policies without backfill (fcfs, sjf). */
  backfill: 'on' | 'off' | 'default' | 'n/a';
  cluster: { nodes: number; gpusPerNode: number; totalGpus: number };
  procsPerGpu: number;
  /** Job lines skipped because the trace does not know their run time or processors. */
  skipped: number;
  metrics: SimulationMetrics;
  notes: string[];
}

/** Thrown when the cluster size is neither given nor derivable from the trace header. */
export class ClusterSizeUnknownError extends RangeError {
  constructor() {
    super('the trace header has no MaxProcs: give the cluster size with --nodes');
    this.name = 'ClusterSizeUnknownError';
  }
}

/** Runs the whole simulation over SWF text. */
export function simulate(swfText: string, options: SimulateOptions = {}): SimulationReport {
  const trace = parseSwf(swfText);
  const procsPerGpu = options.procsPerGpu ?? 1;
  const gpusPerNode = options.gpusPerNode ?? 8;
  const workload = toWorkload(trace.jobs, { procsPerGpu });
  const nodes = options.nodes ?? nodesFromHeader(trace.header, procsPerGpu, gpusPerNode);
  const policy = options.policy ?? 'default';
  const result = replay(workload.jobs, { cluster: { nodes, gpusPerNode }, policy, ...(options.backfill !== undefined && policy === 'default' ? { backfill: options.backfill } : {}) });
  const notes: string[] = [];
  if (options.backfill !== undefined && policy !== 'default') {
    notes.push(`--backfill ${options.backfill ? 'on' : 'off'} ignored: backfill is a switch of the core's default policy, ${policy} has none`);
  }
  if (workload.skipped.length > 0) notes.push(`${workload.skipped.length} job line(s) skipped: run time or processors unknown (first: line ${workload.skipped[0]!.line})`);
  if (result.rejected.length > 0) notes.push(`${result.rejected.length} job(s) rejected by the core (first: ${result.rejected[0]!.jobId}: ${result.rejected[0]!.message})`);
  return {
    policy,
    backfill: policy !== 'default' ? 'n/a' : options.backfill === undefined ? 'default' : options.backfill ? 'on' : 'off',
    cluster: { nodes, gpusPerNode, totalGpus: result.totalGpus },
    procsPerGpu,
    skipped: workload.skipped.length,
    metrics: computeMetrics(result),
    notes,
  };
}

/** Nodes from the header's `MaxProcs` (processors of the traced machine) mapped to GPUs. */
function nodesFromHeader(header: Record<string, string>, procsPerGpu: number, gpusPerNode: number): number {
  const maxProcs = Number(header['MaxProcs']);
  if (!Number.isInteger(maxProcs) || maxProcs < 1) throw new ClusterSizeUnknownError();
  return Math.max(1, Math.ceil(Math.ceil(maxProcs / procsPerGpu) / gpusPerNode));
}
