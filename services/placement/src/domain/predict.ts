/**
 * Run-time predictions from history (Tsafrir, Etsion & Feitelson, "Backfilling using
 * system-generated predictions rather than user runtime estimates", TPDS 2007): users' time
 * limits are poor estimates (most jobs use a fraction of theirs), while the average of the last
 * two runs of the same user's similar jobs predicts far better. Pure.
 *
 * Here "similar" is the same team, the same work (the spec's `name`, else the script path, the
 * image, or a hash of the inline script) and the same request (GPUs, time limit); failing that,
 * the same team and work with any request. The prediction is the mean of the last two run times
 * (held → finished, agent clock) of ended attempts that ran to an end of their own (completed,
 * failed, timeout), capped at the job's time limit; with no history it is the time limit.
 *
 * The prediction orders the queue and dates the plan's expectations (when running work ends,
 * when a waiting job starts); the time limit still bounds everything that must be safe: a job
 * started beside a reservation must end by it even if it runs to its limit, a reservation holds
 * GPUs for the job's limit, and the agent kills at the limit. A running job that outlives its
 * prediction is expected to run to its limit from that moment on (see `plan.ts`).
 */
import type { JobSpec } from '#contracts';
import type { GpuRequest, PlacementState } from './state.js';

/** How many recent runs per key are kept (the prediction averages them). */
export const PREDICTION_SAMPLES = 2;

/** Outcomes whose run time says how long the work takes (not a lost node, not a cancel). */
const TELLING = new Set(['completed', 'failed', 'timeout']);

/** Is an attempt that ended with `outcome` a sample of its work's run time? */
export const isTellingOutcome = (outcome: string): boolean => TELLING.has(outcome);

/** What identifies a job's work for predictions: its name, else what it runs. */
export function workKeyOf(spec: Pick<JobSpec, 'work'> & { name?: string | undefined }): string {
  if (spec.name !== undefined) return `name:${spec.name}`;
  const w = spec.work;
  if (w.kind === 'container') return `image:${w.image}`;
  if ('path' in w.script && w.script.path !== undefined) return `path:${w.script.path}`;
  return `inline:${fnv1a('inline' in w.script ? (w.script.inline ?? '') : '')}`;
}

/** The history keys of a job, most specific first. */
export function historyKeys(team: string, workKey: string, request: Pick<GpuRequest, 'gpus' | 'timeLimitMs'>): [string, string] {
  const work = `${team}\u0000${workKey}`;
  return [`${work}\u0000${request.gpus}\u0000${request.timeLimitMs}`, work];
}

/** A prediction and what it rests on. */
export interface Prediction {
  /** Predicted run time, ms: ≥ 1, ≤ the time limit. */
  runMs: number;
  /** `similar`: same team, work and request; `work`: same team and work; `limit`: no history. */
  basis: 'similar' | 'work' | 'limit';
  /** Runs averaged (0 for `limit`). */
  samples: number;
}

/** The prediction for a job of `team` running `workKey` with `request`, from `state`'s history. */
export function predictRun(state: Pick<PlacementState, 'runHistory'>, team: string, workKey: string, request: Pick<GpuRequest, 'gpus' | 'timeLimitMs'>): Prediction {
  const [similar, work] = historyKeys(team, workKey, request);
  for (const [key, basis] of [
    [similar, 'similar'],
    [work, 'work'],
  ] as const) {
    const runs = state.runHistory.get(key);
    if (!runs || runs.length === 0) continue;
    const mean = Math.round(runs.reduce((a, b) => a + b, 0) / runs.length);
    return { runMs: Math.max(1, Math.min(request.timeLimitMs, mean)), basis, samples: runs.length };
  }
  return { runMs: request.timeLimitMs, basis: 'limit', samples: 0 };
}

/** Adds one run (ms) of a job to the history of each of its keys, keeping the last {@link PREDICTION_SAMPLES}. */
export function recordRun(state: Pick<PlacementState, 'runHistory'>, team: string, workKey: string, request: Pick<GpuRequest, 'gpus' | 'timeLimitMs'>, runMs: number): void {
  if (!Number.isFinite(runMs) || runMs < 0) return;
  for (const key of historyKeys(team, workKey, request)) {
    const runs = state.runHistory.get(key);
    if (!runs) state.runHistory.set(key, [runMs]);
    else {
      runs.push(runMs);
      if (runs.length > PREDICTION_SAMPLES) runs.shift();
    }
  }
}

/** 32-bit FNV-1a of a string, hex: a short stable key for inline scripts (not a security hash). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
