/**
 * From SWF jobs to GPU jobs: processors become GPUs, the requested time becomes the time limit,
 * the group (else the user) becomes the team. Jobs the trace cannot describe (no run time, no
 * processor count) are skipped and counted, never guessed.
 */
import { SwfParseError, type SwfJob } from './swf.js';

/** A job of the simulated workload; times in integer ms relative to the trace's start. */
export interface SimJob {
  jobId: string;
  team: string;
  submitMs: number;
  gpus: number;
  /** The time limit the scheduler sees (requested time, else the run time). */
  timeLimitMs: number;
  /** How long it actually runs (the trace's run time, cut at the time limit like a real agent would). */
  runMs: number;
  /** The trace's run time exceeded the time limit: the attempt ends `timeout` at the limit. */
  timedOut: boolean;
  /** The SWF line it came from. */
  line: number;
}

export interface WorkloadOptions {
  /** Processors per GPU; GPUs = ceil(processors / procsPerGpu), at least 1. Default 1. */
  procsPerGpu?: number;
}

export interface Workload {
  jobs: SimJob[];
  /** Lines skipped because the trace does not know the job's run time or processors. */
  skipped: { line: number; reason: string }[];
}

const secondsToMs = (s: number): number => Math.round(s * 1000);

/** Maps parsed SWF jobs to the simulated workload, in submit order (file order among equals). */
export function toWorkload(swf: readonly SwfJob[], options: WorkloadOptions = {}): Workload {
  const procsPerGpu = options.procsPerGpu ?? 1;
  if (!Number.isInteger(procsPerGpu) || procsPerGpu < 1) throw new RangeError(`procsPerGpu must be a positive integer, got ${procsPerGpu}`);
  const jobs: SimJob[] = [];
  const skipped: Workload['skipped'] = [];
  const seen = new Set<number>();
  for (const j of swf) {
    if (seen.has(j.jobNumber)) throw new SwfParseError(j.line, 'jobNumber', `job number ${j.jobNumber} appears twice`);
    seen.add(j.jobNumber);
    if (j.submitTime < 0) throw new SwfParseError(j.line, 'submitTime', 'the submit time must be known (≥ 0)');
    const procs = j.requestedProcessors > 0 ? j.requestedProcessors : j.allocatedProcessors;
    if (j.runTime < 0) {
      skipped.push({ line: j.line, reason: 'run time unknown' });
      continue;
    }
    if (procs <= 0) {
      skipped.push({ line: j.line, reason: 'processors unknown' });
      continue;
    }
    const runMs = secondsToMs(j.runTime);
    // A time limit of 0 is not a limit; the contracts want ≥ 1 ms.
    const timeLimitMs = Math.max(1, j.requestedTime > 0 ? secondsToMs(j.requestedTime) : runMs);
    const team = j.groupId >= 0 ? `g${j.groupId}` : j.userId >= 0 ? `u${j.userId}` : 'unknown';
    jobs.push({
      jobId: `swf-${j.jobNumber}`,
      team,
      submitMs: secondsToMs(j.submitTime),
      gpus: Math.max(1, Math.ceil(procs / procsPerGpu)),
      timeLimitMs,
      runMs: Math.min(runMs, timeLimitMs),
      timedOut: runMs > timeLimitMs,
      line: j.line,
    });
  }
  // Stable: equal submit times keep file order.
  jobs.sort((a, b) => a.submitMs - b.submitMs);
  return { jobs, skipped };
}
