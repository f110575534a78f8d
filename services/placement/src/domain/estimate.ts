/**
 * Estimates before submitting: where a job that is not submitted would land in the current plan.
 * Pure: the state is only read, `now` is an argument.
 *
 * The hypothetical job joins the back of the queue (submitted now, after every known job) with the
 * priority its team and size give it, and {@link plan} runs over it and every placeable job. The
 * reservation depth is raised to reach it: the live plan predicts no start for jobs beyond its
 * depth, an estimate must, so every blocked job ahead of it is assumed to hold its reservation — a
 * conservative answer, never an optimistic one. Jobs ranked below it cannot change its fate (the
 * plan treats jobs in rank order), and at most one more reservation (its own) is computed.
 */
import { plan, placeableJobs, DEFAULT_RESERVATION_DEPTH, type PlanOptions, type PlannedJob } from './plan.js';
import { byPriority, DEFAULT_PRIORITY_WEIGHTS } from './priority.js';
import { registeredNodes, type GpuRequest, type JobRecord, type PlacementState } from './state.js';

/** What to estimate: a job's request and the team that would submit it. */
export interface EstimateRequest extends GpuRequest {
  team: string;
}

/** Why a job that could run would wait (absent: it would start now). */
export type EstimateWait = NonNullable<PlannedJob['reason']>;

/**
 * The estimate. `runnable: false` when no registered node can ever hold the job (`NoNodes`: none
 * is registered; `NoNodeFits`: the nodes together do not have that many GPUs of one model, of the requested model)
 * or when its start cannot be predicted (`Unpredictable`: behind work whose end is unknown;
 * `QuotaExceeded`: its team is at its GPU quota for the model, `quotas.ts`).
 */
export type Estimate =
  | {
      runnable: true;
      /** Epoch ms it is expected to start (`now` when it would start at once). */
      expectedStart: number;
      /** `expectedStart + timeLimitMs`: the latest it would end. */
      expectedEnd: number;
      /** Why it would wait; undefined when it would start now. */
      reason?: EstimateWait;
      /** The GPU model it would run on (the requested one, or the one the plan found). */
      gpuModel: string;
      /** Nodes it would run on: 1, or more for a job larger than any node (whole nodes). */
      nodes: number;
      /** 1-based rank by priority among the placeable jobs with it. */
      rank: number;
      /** Its priority as it would be now. */
      priority: number;
    }
  | { runnable: false; reason: 'NoNodes' | 'NoNodeFits' | 'Unpredictable' | 'QuotaExceeded' };

/** Job id of the hypothetical job inside the plan (never a real id: job ids start with `job_`). */
export const ESTIMATE_JOB_ID = '(estimate)';

/**
 * Can the registered nodes ever hold `request`: that many GPUs of one model (of its model if
 * asked), on one node or, for a job larger than any node, over whole nodes of that model?
 */
export function anyNodeFits(state: PlacementState, request: GpuRequest): boolean {
  const perModel = new Map<string, number>();
  for (const node of registeredNodes(state)) {
    for (const g of node.gpus) if (request.gpuModel === undefined || g.model === request.gpuModel) perModel.set(g.model, (perModel.get(g.model) ?? 0) + 1);
  }
  for (const n of perModel.values()) if (n >= request.gpus) return true;
  return false;
}

/**
 * Where `request` would land if `request.team` submitted it at `now` (epoch ms or Date), with the
 * plan's `options` (same defaults as {@link plan}).
 */
export function estimate(state: PlacementState, request: EstimateRequest, now: number | Date, options: PlanOptions = {}): Estimate {
  const t = typeof now === 'number' ? now : now.getTime();
  if (registeredNodes(state).length === 0) return { runnable: false, reason: 'NoNodes' };
  if (!anyNodeFits(state, request)) return { runnable: false, reason: 'NoNodeFits' };

  const queued = placeableJobs(state, t);
  // After every job it is ranked with (a job's JobSubmitted is at or below the state's position;
  // a state built by hand may not say so). Not every job ever known: an estimate, which every
  // submit with a deadline asks for, would cost more with every job run.
  let last = state.position;
  for (const j of queued) if (j.submitPosition > last) last = j.submitPosition;
  const hypothetical: JobRecord = {
    jobId: ESTIMATE_JOB_ID,
    team: request.team,
    submitPosition: last + 1n,
    submittedAt: new Date(t).toISOString(),
    request: { gpus: request.gpus, timeLimitMs: request.timeLimitMs, ...(request.gpuModel !== undefined ? { gpuModel: request.gpuModel } : {}) },
    phase: 'queued',
    staged: true,
    cancelRequested: false,
    attempts: [],
  };
  const candidates = [...queued, hypothetical];
  // Its rank decides the depth that reaches it; the plan ranks the same candidates the same way.
  const rank = byPriority(candidates, state, t, options.weights ?? DEFAULT_PRIORITY_WEIGHTS).findIndex((r) => r.job === hypothetical) + 1;
  const depth = Math.max(options.reservationDepth ?? DEFAULT_RESERVATION_DEPTH, rank);
  // Every blocked job ahead holds its reservation at once (no waiting period): the conservative date.
  const entry = plan(state, t, { ...options, reservationDepth: depth, reservationAfterMs: 0, reserveByLimits: false }, candidates).jobs.find((j) => j.job === hypothetical)!;
  if (entry.reason === 'QuotaExceeded') return { runnable: false, reason: 'QuotaExceeded' };
  if (entry.expectedStart === undefined) return { runnable: false, reason: 'Unpredictable' };
  return {
    runnable: true,
    expectedStart: entry.expectedStart,
    expectedEnd: entry.expectedStart + request.timeLimitMs,
    ...(entry.reason !== undefined ? { reason: entry.reason } : {}),
    // A start is either a gang now or a reservation.
    gpuModel: entry.start?.[0]?.gpuModel ?? entry.reservation!.gpuModel,
    nodes: entry.start?.length ?? entry.reservation!.parts.length,
    rank: entry.rank,
    priority: entry.priority,
  };
}
