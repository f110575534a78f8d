/**
 * Multifactor priority, in the manner of Slurm's: each factor is a number in [0, 1], the priority
 * is their weighted sum. Higher runs first; ties go to the earlier submission.
 *
 * - **age**: time since submission over `ageCapMs`, capped at 1 (old jobs stop gaining, so a
 *   flood of old small jobs cannot bury a fresh urgent one forever);
 * - **fair share**: `2^(-U/S)` with U the team's share of all usage and S its fair share (equal
 *   shares among the teams that have usage or pending work): 1 for a team that used nothing,
 *   0.5 for one that used exactly its share, towards 0 for heavy users. Usage is GPU-ms of ended
 *   attempts decayed with the state's half-life, plus the GPU-ms running attempts have held so far;
 * - **size**: GPUs over `sizeFullGpus`, capped at 1 (large jobs gain a little, as in Slurm, to
 *   offset backfill which favours small ones).
 */
import { predictedRunOf, submittedMsOf, teamUsageAt, type JobRecord, type PlacementState } from './state.js';

/** Weights and scales of the priority factors. */
export interface PriorityWeights {
  /** Weight of the age factor. Default 1000. */
  age: number;
  /** Age at which the age factor reaches 1, ms. Default 7 days. */
  ageCapMs: number;
  /** Weight of the fair-share factor. Default 10000 (fair share dominates, as in most Slurm sites). */
  fairShare: number;
  /** Weight of the job-size factor. Default 500. */
  size: number;
  /** GPUs at which the size factor reaches 1. Default 8 (a whole common node). */
  sizeFullGpus: number;
  /** Weight of the run-time factor (shorter predicted runs first). Absent: 0. */
  runTime?: number;
  /** Predicted run time at which the run-time factor reaches 0 (log scale from 10 s). Default 7 days. */
  runTimeScaleMs?: number;
}

/** Default of {@link PriorityWeights.runTimeScaleMs}: 7 days. */
export const DEFAULT_RUN_TIME_SCALE_MS = 7 * 24 * 3_600_000;

/** The documented defaults of {@link PriorityWeights}. */
export const DEFAULT_PRIORITY_WEIGHTS: Readonly<PriorityWeights> = Object.freeze({
  age: 1000,
  ageCapMs: 30 * 24 * 3_600_000,
  fairShare: 10_000,
  size: 0,
  sizeFullGpus: 8,
  runTime: 1000,
  runTimeScaleMs: 7 * 24 * 3_600_000,
});

/** The factors of one job's priority, each in [0, 1], and the weighted sum. */
export interface PriorityBreakdown {
  age: number;
  fairShare: number;
  size: number;
  runTime: number;
  priority: number;
}

/** Predicted run time at which the run-time factor is 1: the bounded slowdown's τ (10 s). */
export const RUN_TIME_FLOOR_MS = 10_000;

/**
 * The run-time factor of a job predicted to run `runMs`: 1 up to 10 s, falling with the log of the
 * run time to 0 at `scaleMs`. Log scale: halving a run gains the same at every length, as
 * slowdown does (a job twice as short suffers a wait twice as much).
 */
export function runTimeFactor(runMs: number, scaleMs: number): number {
  if (runMs <= RUN_TIME_FLOOR_MS) return 1;
  if (runMs >= scaleMs) return 0;
  return 1 - Math.log(runMs / RUN_TIME_FLOOR_MS) / Math.log(scaleMs / RUN_TIME_FLOOR_MS);
}

/**
 * What every job's priority in one pass shares: usage per team at `now`, computed once (a pass
 * over 10,000 jobs must not re-sum usage per job).
 */
export class PriorityContext {
  private readonly usage = new Map<string, number>();
  private readonly total: number;
  private readonly teams: number;

  /** `teams`: teams with pending work (added to those with usage for the equal shares). */
  constructor(
    state: PlacementState,
    private readonly now: number,
    private readonly weights: PriorityWeights = DEFAULT_PRIORITY_WEIGHTS,
    teams: Iterable<string> = [],
  ) {
    for (const team of state.usage.keys()) this.usage.set(team, teamUsageAt(state, team, now));
    for (const live of state.live.values()) {
      if (live.team === undefined || live.finished || live.heldAt === undefined) continue;
      this.usage.set(live.team, (this.usage.get(live.team) ?? 0) + Math.max(0, now - live.heldAt) * live.gpus);
    }
    let total = 0;
    for (const u of this.usage.values()) total += u;
    this.total = total;
    const all = new Set([...this.usage.keys(), ...teams]);
    this.teams = Math.max(1, all.size);
  }

  /** The fair-share factor of `team`, in (0, 1]. */
  fairShare(team: string): number {
    if (this.total <= 0) return 1;
    const used = (this.usage.get(team) ?? 0) / this.total;
    return Math.pow(2, -used * this.teams);
  }

  /** The factors and priority of `job`. */
  breakdown(job: JobRecord): PriorityBreakdown {
    const w = this.weights;
    const age = Math.min(1, Math.max(0, this.now - submittedMsOf(job)) / w.ageCapMs);
    const fairShare = this.fairShare(job.team);
    const size = Math.min(1, job.request.gpus / w.sizeFullGpus);
    const runTime = w.runTime ? runTimeFactor(predictedRunOf(job), w.runTimeScaleMs ?? DEFAULT_RUN_TIME_SCALE_MS) : 0;
    return { age, fairShare, size, runTime, priority: w.age * age + w.fairShare * fairShare + w.size * size + (w.runTime ?? 0) * runTime };
  }

  /** The priority of `job`: higher runs first. */
  of(job: JobRecord): number {
    return this.breakdown(job).priority;
  }
}

/** The priority of `job` in `state` at `now` (epoch ms or Date); see the module comment for the factors. */
export function priorityOf(job: JobRecord, state: PlacementState, now: number | Date, weights: PriorityWeights = DEFAULT_PRIORITY_WEIGHTS): number {
  const at = typeof now === 'number' ? now : now.getTime();
  return new PriorityContext(state, at, weights, [job.team]).of(job);
}

/**
 * `jobs` in priority order (highest first; ties: earlier submission first), each with its
 * priority. Does not modify `jobs`.
 */
export function byPriority(
  jobs: readonly JobRecord[],
  state: PlacementState,
  now: number,
  weights: PriorityWeights = DEFAULT_PRIORITY_WEIGHTS,
): { job: JobRecord; priority: number }[] {
  const ctx = new PriorityContext(state, now, weights, new Set(jobs.map((j) => j.team)));
  const ranked = jobs.map((job) => ({ job, priority: ctx.of(job) }));
  ranked.sort((a, b) => b.priority - a.priority || (a.job.submitPosition < b.job.submitPosition ? -1 : a.job.submitPosition > b.job.submitPosition ? 1 : 0));
  return ranked;
}
