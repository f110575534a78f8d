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
 * Gangs stay whole: every GPU of a job on one node, of one model (see `capacity.ts`). A job
 * larger than every node of its model gets whole nodes of one model (the remainder on one more
 * node), all free at once: it starts only when all are free now, and its reservation is the
 * earliest time enough whole nodes are free. Never a partial hold.
 */
import type { Gang } from './capacity.js';
import { preferLocal } from './locality.js';
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

/** GPUs held for a waiting job from `start` to `end` (epoch ms): one part per node, rank order. */
export interface Reservation {
  gpuModel: string;
  parts: { nodeId: string; gpuIndices: number[] }[];
  start: number;
  end: number;
}

/** One placeable job in the plan. */
export interface PlannedJob {
  job: JobRecord;
  priority: number;
  /** 1-based rank by priority among the placeable jobs. */
  rank: number;
  /** Where it starts now, if it does: one gang per node, rank order (one for a job that fits a node). */
  start?: Gang[];
  /** Its reservation, when it cannot start now and is among the first `reservationDepth` such. */
  reservation?: Reservation;
  /** Epoch ms it is expected to start: `now` when it starts, its reservation's start, else undefined (unknown). */
  expectedStart?: number;
  /** Why it waits (undefined when it starts now). */
  reason?: Extract<PendingReason, 'Resources' | 'Priority' | 'Reservation' | 'DeadlineUnreachable'>;
}

/** The plan of one pass. */
export interface Plan {
  now: number;
  /** Placeable jobs in priority order. */
  jobs: PlannedJob[];
  /** The jobs that start now, in priority order (a subset of `jobs`), each with its gangs (rank order). */
  starts: { job: JobRecord; gangs: Gang[] }[];
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
  const largest = largestPerModel(lines);
  // The nodes container work may use, and their sizes: the same for every container job of the pass.
  let containerLines: NodeLine[] | undefined;
  let containerSizes: ReturnType<typeof largestPerModel> | undefined;
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
    // Container work goes only where a container runtime is (a node without one would refuse it).
    const eligible = job.needsContainer ? (containerLines ??= lines.filter((l) => (state.nodes.get(l.nodeId)?.containerRuntimes?.length ?? 0) > 0)) : lines;
    const sizes = eligible === lines ? largest : (containerSizes ??= largestPerModel(eligible));
    const multi = gpus > (gpuModel === undefined ? sizes.any : (sizes.byModel.get(gpuModel) ?? 0));
    let fitsIgnoringReservations = false;
    if ((doBackfill || !blocked) && (multi || gpus <= maxFreeNow) && gpus <= totalFreeNow) {
      // Among nodes that fit, those already holding the job's inputs first (locality.ts).
      const found = multi
        ? startWhole(eligible, gpus, gpuModel, t, end)
        : startNow(job.inputs ? preferLocal(eligible, job.team, job.inputs, (id) => state.nodes.get(id)?.cachedData) : eligible, gpus, gpuModel, t, end);
      fitsIgnoringReservations = found.fitsIgnoringReservations;
      if (found.gangs) {
        entry.start = found.gangs;
        entry.expectedStart = t;
        starts.push({ job, gangs: found.gangs });
        totalFreeNow -= gpus;
        // Stays an upper bound: the node that gave GPUs may have been the fullest.
        return;
      }
    }
    blocked = true;
    if (reservations < depth) {
      const r = multi ? reserveWhole(eligible, gpus, gpuModel, t, timeLimitMs) : reserve(eligible, gpus, gpuModel, t, timeLimitMs);
      if (r) {
        reservations++;
        entry.reservation = r;
        entry.expectedStart = r.start;
      }
    }
    entry.reason = fitsIgnoringReservations ? 'Reservation' : entry.reservation || reservations < depth ? 'Resources' : 'Priority';
    // Waiting is pointless when the plan's own start already lands past the deadline.
    if (job.deadlineAt !== undefined && entry.expectedStart !== undefined && entry.expectedStart + timeLimitMs > job.deadlineAt) entry.reason = 'DeadlineUnreachable';
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
function startNow(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, end: number): { gangs?: Gang[]; fitsIgnoringReservations: boolean } {
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
      return { gangs: [{ nodeId: line.nodeId, gpuModel: model, gpuIndices: chosen.map((g) => g.index) }], fitsIgnoringReservations: true };
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
  return { gpuModel: best.model, parts: [{ nodeId: best.line.nodeId, gpuIndices: best.chosen.map((g) => g.index).sort((a, b) => a - b) }], start: best.start, end };
}

/** When a GPU is free of running work and of every reservation made so far. */
function availableAt(g: GpuLine, now: number): number {
  return Math.max(now, g.freeAt, g.reservedUntil);
}

/** Most GPUs of each model on one node, and of any one model: what decides whether a job needs several nodes. */
function largestPerModel(lines: readonly NodeLine[]): { byModel: Map<string, number>; any: number } {
  const byModel = new Map<string, number>();
  let any = 0;
  for (const line of lines) {
    const counts = new Map<string, number>();
    for (const g of line.gpus) counts.set(g.model, (counts.get(g.model) ?? 0) + 1);
    for (const [model, n] of counts) {
      byModel.set(model, Math.max(byModel.get(model) ?? 0, n));
      any = Math.max(any, n);
    }
  }
  return { byModel, any };
}

/** Models in order of first appearance over the nodes (first-fit order), or just the requested one. */
function modelsOf(lines: readonly NodeLine[], gpuModel: string | undefined): string[] {
  if (gpuModel !== undefined) return [gpuModel];
  const seen = new Set<string>();
  for (const line of lines) for (const g of line.gpus) seen.add(g.model);
  return [...seen];
}

/**
 * `gpus` GPUs of `model` over several nodes, from the GPUs `usable` accepts: whole nodes (every GPU
 * of the model on the node usable) in first-fit order while the rest needs at least a whole node,
 * then the remainder on the first other node that has it. Undefined unless all of it is there.
 */
function pickWhole(lines: readonly NodeLine[], gpus: number, model: string, usable: (g: GpuLine) => boolean): { line: NodeLine; chosen: GpuLine[] }[] | undefined {
  const picks: { line: NodeLine; chosen: GpuLine[] }[] = [];
  const others: { line: NodeLine; ok: GpuLine[] }[] = [];
  let left = gpus;
  for (const line of lines) {
    const ofModel = line.gpus.filter((g) => g.model === model);
    if (ofModel.length === 0) continue;
    const ok = ofModel.filter(usable);
    if (ok.length === ofModel.length && left >= ofModel.length) {
      picks.push({ line, chosen: ok });
      left -= ok.length;
      if (left === 0) return picks;
    } else others.push({ line, ok });
  }
  const last = others.find((o) => o.ok.length >= left);
  if (!last) return undefined;
  picks.push({ line: last.line, chosen: last.ok.slice(0, left) });
  return picks;
}

/** A job larger than any node: whole nodes free now whose reservations begin no earlier than `end`. Marks them busy until `end`. */
function startWhole(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, end: number): { gangs?: Gang[]; fitsIgnoringReservations: boolean } {
  let fitsIgnoringReservations = false;
  for (const model of modelsOf(lines, gpuModel)) {
    const picks = pickWhole(lines, gpus, model, (g) => g.freeAt <= now && g.reservedFrom >= end);
    if (!picks) {
      if (pickWhole(lines, gpus, model, (g) => g.freeAt <= now)) fitsIgnoringReservations = true;
      continue;
    }
    for (const { line, chosen } of picks) {
      for (const g of chosen) g.freeAt = end;
      line.freeNow -= chosen.length;
    }
    return { gangs: picks.map(({ line, chosen }) => ({ nodeId: line.nodeId, gpuModel: model, gpuIndices: chosen.map((g) => g.index) })), fitsIgnoringReservations: true };
  }
  return { fitsIgnoringReservations };
}

/**
 * The earliest reservation of whole nodes for a job larger than any node: the first instant at
 * which {@link pickWhole} finds the job's GPUs free of running work and earlier reservations
 * (binary search over the instants GPUs become available; more time never makes fewer free).
 */
function reserveWhole(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, timeLimitMs: number): Reservation | undefined {
  let best: { model: string; start: number; picks: { line: NodeLine; chosen: GpuLine[] }[] } | undefined;
  for (const model of modelsOf(lines, gpuModel)) {
    const times = [...new Set(lines.flatMap((l) => l.gpus.filter((g) => g.model === model).map((g) => availableAt(g, now))))].filter(Number.isFinite).sort((a, b) => a - b);
    let lo = 0;
    let hi = times.length - 1;
    let found: { start: number; picks: { line: NodeLine; chosen: GpuLine[] }[] } | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = times[mid]!;
      const picks = pickWhole(lines, gpus, model, (g) => availableAt(g, now) <= at);
      if (picks) {
        found = { start: at, picks };
        hi = mid - 1;
      } else lo = mid + 1;
    }
    if (found && found.start < (best?.start ?? Infinity)) best = { model, ...found };
  }
  if (!best) return undefined;
  const end = best.start + timeLimitMs;
  for (const { chosen } of best.picks) {
    for (const g of chosen) {
      g.reservedFrom = Math.min(g.reservedFrom, best.start);
      g.reservedUntil = Math.max(g.reservedUntil, end);
    }
  }
  return {
    gpuModel: best.model,
    parts: best.picks.map(({ line, chosen }) => ({ nodeId: line.nodeId, gpuIndices: chosen.map((g) => g.index).sort((a, b) => a - b) })),
    start: best.start,
    end,
  };
}
