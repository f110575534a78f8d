/**
 * From SWF jobs to GPU jobs, as the scheduling literature reads the archive's traces: processors
 * become GPUs (the larger of requested and allocated, since a job holds what it was given), the
 * requested time becomes the time limit (raised to the run time when the job ran past it: the
 * machine let it, so replaying a kill would change the workload), an unknown run time counts as
 * 10 s, the group (else the user) becomes the team, and the executable (else the user) names the
 * work, for run-time predictions (a job with neither is its own work: nothing predicts it). Jobs the trace cannot size (no processor count) are skipped and
 * counted, never guessed.
 */
import { SwfParseError, type SwfJob } from './swf.js';

/** A job of the simulated workload; times in integer ms relative to the trace's start. */
export interface SimJob {
  jobId: string;
  team: string;
  /** Names the work (the spec's `name`): `app-<executable>`, else `user-<user>`, else `job-<number>` (its own). */
  work: string;
  submitMs: number;
  gpus: number;
  /** The time limit the scheduler sees (requested time, at least the run time). */
  timeLimitMs: number;
  /** How long it actually runs. */
  runMs: number;
  /** The run time exceeded the time limit: the attempt ends `timeout` at the limit (never for SWF input, whose limits are raised to the run). */
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
  /** Lines skipped because the trace does not know the job's processors. */
  skipped: { line: number; reason: string }[];
  /** Jobs whose unknown run time was replayed as 10 s. */
  unknownRunTime: number;
  /** Jobs that ran past their requested time (their limit was raised to the run). */
  overran: number;
}

/** Run time given to a job whose trace line does not know it (as the literature does). */
export const UNKNOWN_RUN_TIME_MS = 10_000;

const secondsToMs = (s: number): number => Math.round(s * 1000);

/** Maps parsed SWF jobs to the simulated workload, in submit order (file order among equals). */
export function toWorkload(swf: readonly SwfJob[], options: WorkloadOptions = {}): Workload {
  const procsPerGpu = options.procsPerGpu ?? 1;
  if (!Number.isInteger(procsPerGpu) || procsPerGpu < 1) throw new RangeError(`procsPerGpu must be a positive integer, got ${procsPerGpu}`);
  const jobs: SimJob[] = [];
  const skipped: Workload['skipped'] = [];
  const seen = new Set<number>();
  let unknownRunTime = 0;
  let overran = 0;
  for (const j of swf) {
    if (seen.has(j.jobNumber)) throw new SwfParseError(j.line, 'jobNumber', `job number ${j.jobNumber} appears twice`);
    seen.add(j.jobNumber);
    if (j.submitTime < 0) throw new SwfParseError(j.line, 'submitTime', 'the submit time must be known (≥ 0)');
    const procs = Math.max(j.requestedProcessors, j.allocatedProcessors);
    if (procs <= 0) {
      skipped.push({ line: j.line, reason: 'processors unknown' });
      continue;
    }
    let runMs = secondsToMs(j.runTime);
    if (j.runTime < 0) {
      runMs = UNKNOWN_RUN_TIME_MS;
      unknownRunTime++;
    }
    const requestedMs = j.requestedTime > 0 ? secondsToMs(j.requestedTime) : 0;
    if (requestedMs > 0 && runMs > requestedMs) overran++;
    // A time limit of 0 is not a limit; the contracts want ≥ 1 ms.
    const timeLimitMs = Math.max(1, requestedMs, runMs);
    const team = j.groupId >= 0 ? `g${j.groupId}` : j.userId >= 0 ? `u${j.userId}` : 'unknown';
    // No executable and no user: nothing says two jobs run the same work, so each is its own (no history predicts it).
    const work = j.executable >= 0 ? `app-${j.executable}` : j.userId >= 0 ? `user-${j.userId}` : `job-${j.jobNumber}`;
    jobs.push({
      jobId: `swf-${j.jobNumber}`,
      team,
      work,
      submitMs: secondsToMs(j.submitTime),
      gpus: Math.max(1, Math.ceil(procs / procsPerGpu)),
      timeLimitMs,
      runMs,
      timedOut: false,
      line: j.line,
    });
  }
  // Stable: equal submit times keep file order.
  jobs.sort((a, b) => a.submitMs - b.submitMs);
  return { jobs, skipped, unknownRunTime, overran };
}
