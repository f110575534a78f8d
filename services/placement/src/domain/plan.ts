/**
 * The plan: backfill with reservations over a per-GPU timeline. Pure: the state is only read,
 * `now` is an argument, the same inputs give the same plan.
 *
 * 1. Placeable jobs are ranked by multifactor priority ({@link byPriority}).
 * 2. Every GPU of every registered node gets a timeline: busy until the expected end of the
 *    attempt holding it (`(heldAt ?? placedAt) + timeLimitMs`; an attempt whose job is unknown
 *    never ends, as far as the plan can tell), then possibly reserved for a waiting job.
 * 3. Each job in rank order either starts now (free GPUs of one node, of its model, whose
 *    reservations, if any, begin no earlier than the job's own end `now + timeLimitMs`), or — if
 *    it is among the first `reservationDepth` jobs that cannot start — gets a reservation: the
 *    earliest time some node has enough GPUs of its model free of running work and of earlier
 *    reservations. A lower job therefore never delays a reservation: it either ends before the
 *    reservation's start or uses GPUs the reservation does not need.
 *
 * Gangs stay whole: every GPU of a job on one node, of one model (see `capacity.ts`).
 */
import type { Gang } from './capacity.js';
import type { PendingReason } from './queue-view.js';
import { byPriority, DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights } from './priority.js';
import { registeredNodes, type JobRecord, type PlacementState } from './state.js';

/** Options of {@link plan} and of the {@link backfill} policy. */
export interface PlanOptions {
  /** Priority weights. Default {@link DEFAULT_PRIORITY_WEIGHTS}. */
  weights?: PriorityWeights;
  /** How many of the highest-priority jobs that cannot start now get a reservation. Default 8. */
  reservationDepth?: number;
  /**
   * Backfill: lower jobs may start where they delay no reservation. Default true. Off: strict
   * priority order, nothing starts once a higher job has to wait.
   */
  backfill?: boolean;
}

/** Default of {@link PlanOptions.reservationDepth}. */
export const DEFAULT_RESERVATION_DEPTH = 8;

/** GPUs held for a waiting job from `start` to `end` (epoch ms). */
export interface Reservation {
  nodeId: string;
  gpuModel: string;
  gpuIndices: number[];
  start: number;
  end: number;
}

/** One placeable job in the plan. */
export interface PlannedJob {
  job: JobRecord;
  priority: number;
  /** 1-based rank by priority among the placeable jobs. */
  rank: number;
  /** Where it starts now, if it does. */
  start?: Gang;
  /** Its reservation, when it cannot start now and is among the first `reservationDepth` such. */
  reservation?: Reservation;
  /** Epoch ms it is expected to start: `now` when it starts, its reservation's start, else undefined (unknown). */
  expectedStart?: number;
  /** Why it waits (undefined when it starts now). */
  reason?: Extract<PendingReason, 'Resources' | 'Priority' | 'Reservation'>;
}

/** The plan of one pass. */
export interface Plan {
  now: number;
  /** Placeable jobs in priority order. */
  jobs: PlannedJob[];
  /** The jobs that start now, in priority order (a subset of `jobs`). */
  starts: { job: JobRecord; gang: Gang }[];
}

interface GpuLine {
  index: number;
  model: string;
  /** Busy (running or started in this plan) until then; ≤ now: free now. */
  freeAt: number;
  /** Start of the earliest reservation on it (Infinity: none). Work started now must end by then. */
  reservedFrom: number;
  /** End of the latest reservation on it (−Infinity: none). Later reservations begin after it. */
  reservedUntil: number;
}

interface NodeLine {
  nodeId: string;
  /** Ascending index. */
  gpus: GpuLine[];
  /** GPUs with freeAt ≤ now. */
  freeNow: number;
}

/** The placeable jobs of `state` (staged or requeued, not cancelled) in queue order. */
export function placeableJobs(state: PlacementState): JobRecord[] {
  return state.queue.filter((j) => !j.cancelRequested && (j.phase === 'queued' || j.phase === 'lost'));
}

/**
 * The plan for `candidates` (default: every placeable job of `state`) at `now` (epoch ms or Date):
 * who starts now and on which GPUs, who holds which reservation, and why the others wait.
 */
export function plan(state: PlacementState, now: number | Date, options: PlanOptions = {}, candidates: readonly JobRecord[] = placeableJobs(state)): Plan {
  const t = typeof now === 'number' ? now : now.getTime();
  const depth = options.reservationDepth ?? DEFAULT_RESERVATION_DEPTH;
  const doBackfill = options.backfill ?? true;
  const lines = timeline(state, t);
  let maxFreeNow = 0;
  let totalFreeNow = 0;
  for (const l of lines) {
    totalFreeNow += l.freeNow;
    maxFreeNow = Math.max(maxFreeNow, l.freeNow);
  }

  const ranked = byPriority(candidates, state, t, options.weights ?? DEFAULT_PRIORITY_WEIGHTS);
  const jobs: PlannedJob[] = [];
  const starts: Plan['starts'] = [];
  let reservations = 0;
  let blocked = false;

  ranked.forEach(({ job, priority }, i) => {
    const entry: PlannedJob = { job, priority, rank: i + 1 };
    jobs.push(entry);
    const { gpus, gpuModel, timeLimitMs } = job.request;
    const end = t + timeLimitMs;
    let fitsIgnoringReservations = false;
    if ((doBackfill || !blocked) && gpus <= maxFreeNow && gpus <= totalFreeNow) {
      const found = startNow(lines, gpus, gpuModel, t, end);
      fitsIgnoringReservations = found.fitsIgnoringReservations;
      if (found.gang) {
        entry.start = found.gang;
        entry.expectedStart = t;
        starts.push({ job, gang: found.gang });
        totalFreeNow -= gpus;
        // Stays an upper bound: the node that gave GPUs may have been the fullest.
        return;
      }
    }
    blocked = true;
    if (reservations < depth) {
      const r = reserve(lines, gpus, gpuModel, t, timeLimitMs);
      if (r) {
        reservations++;
        entry.reservation = r;
        entry.expectedStart = r.start;
      }
    }
    entry.reason = fitsIgnoringReservations ? 'Reservation' : entry.reservation || reservations < depth ? 'Resources' : 'Priority';
  });
  return { now: t, jobs, starts };
}

/** Every registered node's GPU timeline at `now`. */
function timeline(state: PlacementState, now: number): NodeLine[] {
  return registeredNodes(state).map((node) => {
    const busyUntil = new Map<number, number>();
    for (const [attemptId, indices] of node.holds) {
      const live = state.live.get(attemptId);
      let end = Infinity;
      if (live?.timeLimitMs !== undefined) end = live.finished ? now + 1 : Math.max(now + 1, (live.heldAt ?? live.placedAt) + live.timeLimitMs);
      for (const i of indices) busyUntil.set(i, Math.max(busyUntil.get(i) ?? now + 1, end));
    }
    let freeNow = 0;
    const gpus = node.gpus.map((g): GpuLine => {
      const freeAt = node.busy.has(g.index) ? (busyUntil.get(g.index) ?? Infinity) : now;
      if (freeAt <= now) freeNow++;
      return { index: g.index, model: g.model, freeAt, reservedFrom: Infinity, reservedUntil: -Infinity };
    });
    return { nodeId: node.nodeId, gpus, freeNow };
  });
}

/**
 * The first node (in order) with `gpus` GPUs of one model (the requested one) free now whose
 * reservations begin no earlier than `end`; lowest indices first. Marks them busy until `end`.
 */
function startNow(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, end: number): { gang?: Gang; fitsIgnoringReservations: boolean } {
  let fitsIgnoringReservations = false;
  for (const line of lines) {
    if (line.freeNow < gpus) continue;
    // Per model: free-now GPUs, and those of them no reservation needs before `end`.
    const free = new Map<string, number>();
    const usable = new Map<string, GpuLine[]>();
    for (const g of line.gpus) {
      if (g.freeAt > now || (gpuModel !== undefined && g.model !== gpuModel)) continue;
      free.set(g.model, (free.get(g.model) ?? 0) + 1);
      if (g.reservedFrom < end) continue;
      const list = usable.get(g.model);
      if (list) list.push(g);
      else usable.set(g.model, [g]);
    }
    for (const n of free.values()) if (n >= gpus) fitsIgnoringReservations = true;
    for (const [model, list] of usable) {
      if (list.length < gpus) continue;
      const chosen = list.slice(0, gpus);
      for (const g of chosen) g.freeAt = end;
      line.freeNow -= gpus;
      return { gang: { nodeId: line.nodeId, gpuModel: model, gpuIndices: chosen.map((g) => g.index) }, fitsIgnoringReservations: true };
    }
  }
  return { fitsIgnoringReservations };
}

/** The earliest reservation of `gpus` GPUs of one model on one node; undefined when none can be predicted (only never-ending work). */
function reserve(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, timeLimitMs: number): Reservation | undefined {
  let best: { line: NodeLine; model: string; chosen: GpuLine[]; start: number } | undefined;
  for (const line of lines) {
    if (line.gpus.length < gpus) continue;
    const byModel = new Map<string, GpuLine[]>();
    for (const g of line.gpus) {
      if (gpuModel !== undefined && g.model !== gpuModel) continue;
      const list = byModel.get(g.model);
      if (list) list.push(g);
      else byModel.set(g.model, [g]);
    }
    for (const [model, list] of byModel) {
      if (list.length < gpus) continue;
      const sorted = [...list].sort((a, b) => availableAt(a, now) - availableAt(b, now) || a.index - b.index);
      const chosen = sorted.slice(0, gpus);
      const start = availableAt(chosen[gpus - 1]!, now);
      if (start < (best?.start ?? Infinity)) best = { line, model, chosen, start };
    }
  }
  if (!best) return undefined;
  const end = best.start + timeLimitMs;
  for (const g of best.chosen) {
    g.reservedFrom = Math.min(g.reservedFrom, best.start);
    g.reservedUntil = Math.max(g.reservedUntil, end);
  }
  return { nodeId: best.line.nodeId, gpuModel: best.model, gpuIndices: best.chosen.map((g) => g.index).sort((a, b) => a - b), start: best.start, end };
}

/** When a GPU is free of running work and of every reservation made so far. */
function availableAt(g: GpuLine, now: number): number {
  return Math.max(now, g.freeAt, g.reservedUntil);
}
