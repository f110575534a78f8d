/**
 * What a replay achieved, in the figures the scheduling literature uses. Times are integer ms;
 * averages of integers are rounded once at the end (sums stay exact integers); ratios are
 * rounded to 4 decimals for display only.
 */
import type { JobRun, ReplayResult } from './replay.js';

/** τ of the bounded slowdown: runs shorter than this count as this long (10 s). */
export const BOUNDED_SLOWDOWN_TAU_MS = 10_000;

export interface SimulationMetrics {
  /** Jobs that ran. */
  jobs: number;
  /** Jobs the core rejected (no node could ever hold them). */
  rejected: number;
  averageWaitMs: number;
  /** Mean of max(1, (wait + run) / max(run, τ)), τ = 10 s; 4 decimals. */
  averageBoundedSlowdown: number;
  /** GPU-time used / (GPUs × span from the first submission to the last end); 4 decimals, 0–1. */
  utilization: number;
  /**
   * The same up to the last start (GPU-time inside [first submission, last start]): the
   * literature's figure, free of the tail where the last long jobs drain an emptying machine.
   */
  utilizationToLastStart: number;
  /** p95 (nearest rank) of the waits of the smaller half of jobs by GPUs × run time. */
  p95WaitSmallHalfMs: number;
  /** Longest wait among the largest 10 % of jobs by GPUs × run time. */
  maxWaitLargest10PctMs: number;
  /** From the first submission to the last end. */
  spanMs: number;
}

const round4 = (x: number): number => Math.round(x * 10_000) / 10_000;
const wait = (r: JobRun): number => r.startMs - r.submitMs;

/** The metrics of one replay. With no job run, every figure is 0. */
export function computeMetrics(result: ReplayResult): SimulationMetrics {
  const runs = result.runs;
  const n = runs.length;
  if (n === 0) return { jobs: 0, rejected: result.rejected.length, averageWaitMs: 0, averageBoundedSlowdown: 0, utilization: 0, utilizationToLastStart: 0, p95WaitSmallHalfMs: 0, maxWaitLargest10PctMs: 0, spanMs: 0 };

  let waitSum = 0;
  let slowdownSum = 0;
  let gpuMs = 0;
  let first = Infinity;
  let last = -Infinity;
  let lastStart = -Infinity;
  for (const r of runs) {
    lastStart = Math.max(lastStart, r.startMs);
    const w = wait(r);
    waitSum += w;
    slowdownSum += Math.max(1, (w + r.runMs) / Math.max(r.runMs, BOUNDED_SLOWDOWN_TAU_MS));
    gpuMs += r.gpus * r.runMs;
    first = Math.min(first, r.submitMs);
    last = Math.max(last, r.endMs);
  }
  const spanMs = last - first;
  let gpuMsToLastStart = 0;
  for (const r of runs) gpuMsToLastStart += r.gpus * Math.max(0, Math.min(r.endMs, lastStart) - Math.max(r.startMs, first));
  const toLastStart = lastStart - first;

  // Size = GPUs × run time; ties by submit time then id, so the split is deterministic.
  const bySize = [...runs].sort((a, b) => a.gpus * a.runMs - b.gpus * b.runMs || a.submitMs - b.submitMs || (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  const smallHalf = bySize.slice(0, Math.ceil(n / 2));
  const largest = bySize.slice(n - Math.ceil(n / 10));

  return {
    jobs: n,
    rejected: result.rejected.length,
    averageWaitMs: Math.round(waitSum / n),
    averageBoundedSlowdown: round4(slowdownSum / n),
    utilization: spanMs === 0 ? 0 : round4(gpuMs / (result.totalGpus * spanMs)),
    utilizationToLastStart: toLastStart <= 0 ? 0 : round4(gpuMsToLastStart / (result.totalGpus * toLastStart)),
    p95WaitSmallHalfMs: percentile(smallHalf.map(wait), 95),
    maxWaitLargest10PctMs: Math.max(...largest.map(wait)),
    spanMs,
  };
}

/** Nearest-rank percentile (the smallest value with at least p % of values ≤ it); 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}
