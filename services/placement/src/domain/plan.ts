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
import { formatDuration } from '#contracts';
import type { Gang } from './capacity.js';
import { preferLocal } from './locality.js';
import type { PendingReason } from './queue-view.js';
import { budgetAllows } from './budget.js';
import { byPriority, DEFAULT_PRIORITY_WEIGHTS, type PriorityWeights } from './priority.js';
import { QuotaGate } from './quotas.js';
import { predictedRunOf, registeredView, submittedMsOf, type JobRecord, type LiveAttempt, type PlacementState } from './state.js';
import { isSchedulable } from './node-admin.js';

/** Options of {@link plan} and of the {@link backfill} policy. */
export interface PlanOptions {
  /** Priority weights. Default {@link DEFAULT_PRIORITY_WEIGHTS}. */
  weights?: PriorityWeights;
  /**
   * The order jobs are considered in: `priority` (default: the multifactor priority), `fcfs`
   * (submit order) or `sjf` (shortest predicted run first, submit order among equals). The last
   * two are the literature's baselines, kept for the simulator.
   */
  order?: PlanOrder;
  /** How many of the highest-ranked jobs that cannot start now get a reservation. Default {@link DEFAULT_RESERVATION_DEPTH}. */
  reservationDepth?: number;
  /**
   * Backfill: lower jobs may start where they delay no reservation. Default true. Off: strict
   * priority order, nothing starts once a higher job has to wait.
   */
  backfill?: boolean;
  /**
   * Run-time predictions (`predict.ts`) date running work's expected ends, and so reservations
   * and expected starts. Default true. Off: every job is expected to run to its time limit.
   */
  predictions?: boolean;
  /**
   * Date running work by its time limit when placing reservations, even with `predictions` on, as
   * EASY does. Default true: what `decide` uses. Reservations dated by predictions come before the
   * GPUs are sure to be free, and the window before them (which a backfilled job must fit by its
   * *limit*, for the reservation's safety) shrinks: bsld 51.5 → 39.7 on the lublin-2 windows
   * (decision 0020). Status, estimates and forecasts pass false: they show the likely start.
   */
  reserveByLimits?: boolean;
  /**
   * A waiting job holds a reservation only once it has waited this long (ms). Default
   * {@link DEFAULT_RESERVATION_AFTER_MS} (10 min); 0: at once, as EASY does.
   * Until then, the jobs ranked below it may start wherever they fit now: a burst of short work
   * is not held back to drain GPUs for a job that may well find room by itself a moment later.
   */
  reservationAfterMs?: number;
  /**
   * Only the jobs that start now are wanted (a pass of `decide`): the plan stops once no GPU is
   * left free, and skips the reasons of jobs that wait. The starts are the same either way.
   */
  startsOnly?: boolean;
  /**
   * Headroom for short work (decision 0028): jobs predicted to run at least `longRunMs` may
   * together hold at most `share` of the GPUs while short work flows; a long job that would pass
   * it waits while other long work runs: the pass gives it no start and no reservation, plans for
   * people date it by when long work leaves it room. With no long work running a long job may
   * always start, whatever its size. Default {@link DEFAULT_HEADROOM}; `false`: no limit (the
   * literature's baselines).
   */
  headroom?: Headroom | false;
}

/** See {@link PlanOptions.headroom}. */
export interface Headroom {
  /** Predicted run time (ms) from which a job is long work. */
  longRunMs: number;
  /** Share of all registered GPUs long work may hold at once, in (0, 1]. */
  share: number;
}

/** Default of {@link PlanOptions.headroom}: work predicted to run an hour or more holds at most 80 % of the GPUs (decision 0028). */
export const DEFAULT_HEADROOM: Readonly<Headroom> = Object.freeze({ longRunMs: 3_600_000, share: 0.8 });

/** See {@link PlanOptions.order}. */
export type PlanOrder = 'priority' | 'fcfs' | 'sjf';

/** Default of {@link PlanOptions.reservationAfterMs}: 10 minutes (decision 0020). */
export const DEFAULT_RESERVATION_AFTER_MS = 600_000;

/** Default of {@link PlanOptions.reservationDepth}. */
export const DEFAULT_RESERVATION_DEPTH = 1;

/** Every option of the core's default plan, spelled out (what `decide` uses with no options). */
export const DEFAULT_PLAN_OPTIONS: Readonly<PlanOptions> = Object.freeze({
  order: 'priority',
  weights: DEFAULT_PRIORITY_WEIGHTS,
  reservationDepth: DEFAULT_RESERVATION_DEPTH,
  reservationAfterMs: DEFAULT_RESERVATION_AFTER_MS,
  backfill: true,
  predictions: true,
  reserveByLimits: true,
  headroom: DEFAULT_HEADROOM,
});

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
  reason?: Extract<PendingReason, 'Resources' | 'Priority' | 'Reservation' | 'DeadlineUnreachable' | 'QuotaExceeded'>;
  /** The figures behind `QuotaExceeded`. */
  reasonDetail?: string;
  /** It starts past its team's concurrent GPU quota, on idle GPUs (`quotas.ts`). */
  borrowed?: boolean;
}

/** The plan of one pass. */
export interface Plan {
  now: number;
  /** Placeable jobs in priority order (with `startsOnly`, those considered before the GPUs ran out). */
  jobs: PlannedJob[];
  /** The jobs that start now, in priority order (a subset of `jobs`), each with its gangs (rank order); `borrowed` past its team's quota. */
  starts: { job: JobRecord; gangs: Gang[]; borrowed?: boolean }[];
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

/** The placeable jobs of `state` (staged or requeued, not cancelled) in queue order; given `now`, not those their team's budget holds back. */
export function placeableJobs(state: PlacementState, now?: number | Date): JobRecord[] {
  return state.queue.filter((j) => !j.cancelRequested && (j.phase === 'queued' || j.phase === 'lost') && (now === undefined || budgetAllows(state, j, now)));
}

/**
 * When a running attempt is expected to end, as the plan sees it at `now`: at its predicted end
 * while that is ahead (with `predictions`), else at its time limit; a finished attempt waits only
 * for its release (now + 1); an attempt of an unknown job never ends, as far as the plan can tell.
 * So a job that outlives its prediction moves the plan to its limit at the next pass.
 */
export function expectedEndOf(live: LiveAttempt, now: number, predictions = true): number {
  if (live.timeLimitMs === undefined) return Infinity;
  if (live.finished) return now + 1;
  const start = live.heldAt ?? live.placedAt;
  if (predictions && live.predictedRunMs !== undefined && start + live.predictedRunMs > now) return start + live.predictedRunMs;
  return Math.max(now + 1, start + live.timeLimitMs);
}

/**
 * Has a running attempt outlived its prediction after `since` and by `now` (epoch ms)? Then the
 * plan's picture changed without an event (its end moved to its time limit): time for a pass.
 */
export function predictionsOutlived(state: PlacementState, since: number, now: number): boolean {
  for (const live of state.live.values()) {
    if (live.finished || live.predictedRunMs === undefined || live.timeLimitMs === undefined || live.predictedRunMs >= live.timeLimitMs) continue;
    const at = (live.heldAt ?? live.placedAt) + live.predictedRunMs;
    if (at > since && at <= now) return true;
  }
  return false;
}

/**
 * The plan for `candidates` (default: every placeable job of `state`) at `now` (epoch ms or Date):
 * who starts now and on which GPUs, who holds which reservation, and why the others wait.
 */
export function plan(state: PlacementState, now: number | Date, options: PlanOptions = {}, candidates: readonly JobRecord[] = placeableJobs(state, now)): Plan {
  const t = typeof now === 'number' ? now : now.getTime();
  const depth = options.reservationDepth ?? DEFAULT_RESERVATION_DEPTH;
  const doBackfill = options.backfill ?? true;
  const startsOnly = options.startsOnly ?? false;
  const lines = timeline(state, t, (options.predictions ?? true) && !(options.reserveByLimits ?? true));
  const view = registeredView(state);
  let largest = sizesOf.get(view);
  if (!largest) sizesOf.set(view, (largest = largestPerModel(lines)));
  // The nodes container work may use, and their sizes: the same for every container job of the pass.
  let containerLines: NodeLine[] | undefined;
  let containerSizes: ReturnType<typeof largestPerModel> | undefined;
  let maxFreeNow = 0;
  let totalFreeNow = 0;
  for (const l of lines) {
    totalFreeNow += l.freeNow;
    maxFreeNow = Math.max(maxFreeNow, l.freeNow);
  }
  const free = new FreeIndex(lines, t);
  /** Nodes holding some reservation, in timeline order: the only ones a job ending before a reservation may prefer. */
  const reserved: NodeLine[] = [];
  const order = new Map(lines.map((l, i) => [l, i]));

  const jobs: PlannedJob[] = [];
  const starts: Plan['starts'] = [];
  if (startsOnly && totalFreeNow === 0) return { now: t, jobs, starts };
  const ranked = rankJobs(candidates, state, t, options);
  const reserveAfter = options.reservationAfterMs ?? DEFAULT_RESERVATION_AFTER_MS;
  // Quotas (quotas.ts): none set, no gate, and the plan is exactly what it was without them.
  const gate = QuotaGate.needed(state) ? new QuotaGate(state, t, candidates) : undefined;
  /** Every model on the registered nodes, for jobs that take any model (computed once per pass). */
  let allModels: string[] | undefined;
  /** `team\0gpus` → model → may a job of that team and size take it now (cleared at every start). */
  const allowed = new Map<string, Map<string, boolean>>();
  let reservations = 0;
  let blocked = false;
  const long = longWork(state, t, lines, candidates, options);

  for (let i = 0; i < ranked.length; i++) {
    // Nothing more can start: the rest would only get reservations and reasons nobody asked for.
    if (startsOnly && (totalFreeNow === 0 || (!doBackfill && blocked))) break;
    const { job, priority } = ranked[i]!;
    const entry: PlannedJob = { job, priority, rank: i + 1 };
    jobs.push(entry);
    const { gpus, gpuModel, timeLimitMs } = job.request;
    // Safety: a job started now must end before the reservations it passes even if it runs to its limit.
    const end = t + timeLimitMs;
    // A team at its quota waits whatever is free; it holds no reservation and blocks nobody.
    let allow: ((model: string) => boolean) | undefined;
    if (gate && state.quotas.has(job.team)) {
      if (gpuModel !== undefined) {
        const c = gate.check(job, gpuModel);
        if (!c.ok) {
          entry.reason = 'QuotaExceeded';
          entry.reasonDetail = c.detail;
          continue;
        }
      } else {
        // Which models a team may take for a job of this size: the same for all its jobs of that size until the next start.
        const k = `${job.team}\u0000${gpus}`;
        let checks = allowed.get(k);
        if (!checks) allowed.set(k, (checks = new Map()));
        const cached = checks;
        allow = (model) => {
          let ok = cached.get(model);
          if (ok === undefined) cached.set(model, (ok = gate.check(job, model).ok));
          return ok;
        };
        const models = (allModels ??= modelsOf(lines, undefined));
        if (models.length > 0 && !models.some(allow)) {
          entry.reason = 'QuotaExceeded';
          entry.reasonDetail = models.map((m) => (gate.check(job, m) as { detail: string }).detail).join('; ');
          continue;
        }
      }
    }
    // Container work goes only where a container runtime is (a node without one would refuse it).
    const eligible = job.needsContainer ? (containerLines ??= lines.filter((l) => (state.nodes.get(l.nodeId)?.containerRuntimes?.length ?? 0) > 0)) : lines;
    const sizes = eligible === lines ? largest : (containerSizes ??= largestPerModel(eligible));
    const multi = gpus > (gpuModel === undefined ? sizes.any : (sizes.byModel.get(gpuModel) ?? 0));
    let fitsIgnoringReservations = false;
    const isLong = long !== undefined && ((options.predictions ?? true) ? predictedRunOf(job) : timeLimitMs) >= long.fromMs;
    // Held back for short work: no start, and in the pass no reservation (it would idle GPUs the
    // headroom keeps anyway). Plans for people (status, estimates) still date it by a reservation:
    // a conservative date, where a start shown as "unknown" would refuse every estimate of long work.
    const heldBack = isLong && long.held > 0 && long.held + gpus > long.limit;
    if (heldBack && startsOnly) continue;
    if (!heldBack && (doBackfill || !blocked) && (multi || gpus <= maxFreeNow) && gpus <= totalFreeNow) {
      // Fewer free GPUs than it needs are clear of reservations until its end: it cannot start (the scan below would only find the reason).
      const hopeless = reservations > 0 && free.usableAtMost(end) < gpus;
      if (!hopeless || !startsOnly) {
        const tight = reservations > 0;
        // Among nodes that fit, those already holding the job's inputs first (locality.ts).
        const found = multi
          ? startWhole(eligible, gpus, gpuModel, t, end, tight, allow)
          : startNow(job.inputs ? preferLocal(eligible, job.team, job.inputs, (id) => state.nodes.get(id)?.cachedData) : eligible, gpus, gpuModel, t, end, tight ? reserved.filter((l) => eligible === lines || eligible.includes(l)) : undefined, allow);
        fitsIgnoringReservations = found.fitsIgnoringReservations;
        if (found.gangs) {
          entry.start = found.gangs;
          entry.expectedStart = t;
          if (isLong) long.held += gpus;
          const borrowed = gate ? (gate.check(job, found.gangs[0]!.gpuModel) as { borrowed: boolean }).borrowed : false;
          if (gate) {
            gate.started(job, found.gangs[0]!.gpuModel, borrowed);
            allowed.clear();
          }
          if (borrowed) entry.borrowed = true;
          starts.push(borrowed ? { job, gangs: found.gangs, borrowed } : { job, gangs: found.gangs });
          totalFreeNow -= gpus;
          // Stays an upper bound: the node that gave GPUs may have been the fullest.
          continue;
        }
      }
    }
    blocked = true;
    if (reservations < depth && t - submittedMsOf(job) >= reserveAfter) {
      const r = multi ? reserveWhole(eligible, gpus, gpuModel, t, timeLimitMs, allow) : reserve(eligible, gpus, gpuModel, t, timeLimitMs, allow);
      if (r) {
        reservations++;
        free.invalidate();
        for (const part of r.parts) {
          const line = lines.find((l) => l.nodeId === part.nodeId);
          if (line && !reserved.includes(line)) reserved.push(line);
        }
        reserved.sort((a, b) => order.get(a)! - order.get(b)!);
        entry.reservation = r;
        entry.expectedStart = r.start;
      }
    }
    if (startsOnly) continue;
    entry.reason = heldBack ? 'Resources' : fitsIgnoringReservations ? 'Reservation' : entry.reservation || reservations < depth ? 'Resources' : 'Priority';
    if (heldBack) {
      entry.reasonDetail = `headroom for short work: jobs predicted to run ${formatDuration(long!.fromMs)} or more hold ${long!.held} of ${long!.total} GPUs, and at most ${long!.limit} may go to them`;
      // Not before long work leaves it room.
      const room = long!.roomAt(gpus);
      if (entry.expectedStart !== undefined && entry.expectedStart < room) {
        if (entry.reservation) entry.reservation = { ...entry.reservation, start: room, end: entry.reservation.end + (room - entry.expectedStart) };
        entry.expectedStart = room;
      }
    }
    // Waiting is pointless when the plan's own start already lands past the deadline.
    if (job.deadlineAt !== undefined && entry.expectedStart !== undefined && entry.expectedStart + timeLimitMs > job.deadlineAt) entry.reason = 'DeadlineUnreachable';
  }
  return { now: t, jobs, starts };
}

/**
 * The pass's long-work count for {@link PlanOptions.headroom}: GPUs held now by running work
 * predicted (else limited) to run at least `fromMs`, and how many long work may hold at most.
 */
function longWork(state: PlacementState, now: number, lines: readonly NodeLine[], candidates: readonly JobRecord[], options: PlanOptions): LongWork | undefined {
  const headroom = options.headroom === undefined ? DEFAULT_HEADROOM : options.headroom;
  if (!headroom || headroom.share >= 1) return undefined;
  const runOf = (job: JobRecord) => ((options.predictions ?? true) ? predictedRunOf(job) : job.request.timeLimitMs);
  // Only while short work flows: one waits now, or one was submitted within the last day.
  const since = now - SHORT_WORK_WINDOW_MS;
  if (!candidates.some((j) => runOf(j) < headroom.longRunMs) && !state.recentSubmits.some((r) => r.atMs >= since && r.runMs < headroom.longRunMs)) return undefined;
  let total = 0;
  for (const l of lines) total += l.gpus.length;
  let held = 0;
  const running: LiveAttempt[] = [];
  for (const live of state.live.values()) {
    if (live.finished) continue;
    const run = (options.predictions ?? true) ? (live.predictedRunMs ?? live.timeLimitMs) : live.timeLimitMs;
    // Work of unknown length is long: it may hold its GPUs for any time.
    if (run !== undefined && run < headroom.longRunMs) continue;
    held += live.gpus;
    running.push(live);
  }
  const limit = Math.floor(headroom.share * total);
  let ends: { at: number; gpus: number }[] | undefined;
  return {
    fromMs: headroom.longRunMs,
    held,
    limit,
    total,
    // When the running long work, ending as expected, leaves room for `gpus` more (or none runs).
    // Only plans for people ask, so the ends are dated then, once.
    roomAt(gpus) {
      ends ??= running.map((live) => ({ at: expectedEndOf(live, now, options.predictions ?? true), gpus: live.gpus })).sort((a, b) => a.at - b.at);
      let left = held;
      for (const e of ends) {
        left -= e.gpus;
        if (left === 0 || left + gpus <= limit) return e.at;
      }
      return now;
    },
  };
}

/** The pass's long work (see {@link longWork}). */
interface LongWork {
  fromMs: number;
  held: number;
  limit: number;
  total: number;
  roomAt(gpus: number): number;
}

/** How recently short work must have been submitted for {@link PlanOptions.headroom} to hold: a day. */
export const SHORT_WORK_WINDOW_MS = 24 * 3_600_000;

/** Node sizes per registered set (they change only with registrations and losses). */
const sizesOf = new WeakMap<readonly unknown[], ReturnType<typeof largestPerModel>>();

/** The candidates in the order the plan considers them, each with its priority (0 for the baselines' orders). */
function rankJobs(candidates: readonly JobRecord[], state: PlacementState, now: number, options: PlanOptions): { job: JobRecord; priority: number }[] {
  const order = options.order ?? 'priority';
  if (order === 'priority') return byPriority(candidates, state, now, options.weights ?? DEFAULT_PRIORITY_WEIGHTS);
  const ranked = candidates.map((job) => ({ job, priority: 0 }));
  const bySubmit = (a: JobRecord, b: JobRecord) => (a.submitPosition < b.submitPosition ? -1 : a.submitPosition > b.submitPosition ? 1 : 0);
  if (order === 'fcfs') ranked.sort((a, b) => bySubmit(a.job, b.job));
  else {
    const pred = (j: JobRecord) => ((options.predictions ?? true) ? predictedRunOf(j) : j.request.timeLimitMs);
    ranked.sort((a, b) => pred(a.job) - pred(b.job) || bySubmit(a.job, b.job));
  }
  return ranked;
}

/**
 * How many free-now GPUs could still be clear of reservations until a given end: counted from
 * the reservations as they stood when last rebuilt. Starts only take GPUs away, so the count is
 * an upper bound, which is all a quick "cannot start" needs.
 */
class FreeIndex {
  private sorted: number[] | undefined;
  constructor(
    private readonly lines: readonly NodeLine[],
    private readonly now: number,
  ) {}

  invalidate(): void {
    this.sorted = undefined;
  }

  /** Free GPUs (at most) whose earliest reservation begins at or after `end`. */
  usableAtMost(end: number): number {
    if (!this.sorted) {
      const from: number[] = [];
      for (const l of this.lines) if (l.freeNow > 0) for (const g of l.gpus) if (g.freeAt <= this.now) from.push(g.reservedFrom);
      this.sorted = from.sort((a, b) => a - b);
    }
    const a = this.sorted;
    let lo = 0;
    let hi = a.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (a[mid]! < end) lo = mid + 1;
      else hi = mid;
    }
    return a.length - lo;
  }
}

/** Every registered node's GPU timeline at `now` (a cordoned or draining node's GPUs never free). */
function timeline(state: PlacementState, now: number, predictions: boolean): NodeLine[] {
  return registeredView(state).map((node) => {
    let busyUntil: Map<number, number> | undefined;
    if (node.holds.size > 0) {
      busyUntil = new Map();
      for (const [attemptId, indices] of node.holds) {
        const live = state.live.get(attemptId);
        const end = live ? expectedEndOf(live, now, predictions) : Infinity;
        for (const i of indices) busyUntil.set(i, Math.max(busyUntil.get(i) ?? now + 1, end));
      }
    }
    let freeNow = 0;
    // A cordoned or draining node (node-admin.ts) takes nothing new: its GPUs are never free in the plan, so no start and no reservation lands there.
    const closed = !isSchedulable(node);
    const gpus = node.gpus.map((g): GpuLine => {
      const freeAt = closed ? Infinity : node.busy.has(g.index) ? (busyUntil?.get(g.index) ?? Infinity) : now;
      if (freeAt <= now) freeNow++;
      return { index: g.index, model: g.model, freeAt, reservedFrom: Infinity, reservedUntil: -Infinity };
    });
    return { nodeId: node.nodeId, gpus, freeNow };
  });
}

/** Reserved-soonest first (then lowest index): what a job that ends before those reservations should take, leaving unreserved GPUs to longer work. */
const tighter = (a: GpuLine, b: GpuLine): number => a.reservedFrom - b.reservedFrom || a.index - b.index;

/**
 * `gpus` GPUs of one model (the requested one) on one node, free now, whose reservations begin no
 * earlier than `end`. Without reservations (`tight` false): the first node in order, lowest
 * indices. With them: the node and GPUs whose reservations are soonest (EASY's rule that work
 * ending before the reservation takes the reserved GPUs first, so free GPUs no reservation needs
 * stay for longer work), ties to the first node and lowest indices. Marks them busy until `end`.
 */
function startNow(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, end: number, reservedLines?: readonly NodeLine[], allow?: (model: string) => boolean): { gangs?: Gang[]; fitsIgnoringReservations: boolean } {
  let fitsIgnoringReservations = false;
  // With reservations about, the soonest-reserved GPUs that fit win; only nodes holding a
  // reservation can offer a finite score, so they are looked at first and the rest only in order.
  if (reservedLines && reservedLines.length > 0) {
    let best: { line: NodeLine; model: string; chosen: GpuLine[]; score: number } | undefined;
    for (const line of reservedLines) {
      const found = usableOn(line, gpus, gpuModel, now, end, allow);
      if (found.fits) fitsIgnoringReservations = true;
      if (!found.usable) continue;
      const chosen = found.usable.sort(tighter).slice(0, gpus);
      const score = chosen[gpus - 1]!.reservedFrom;
      if (score < (best?.score ?? Infinity)) best = { line, model: found.model!, chosen, score };
    }
    if (best) return take(best.line, best.model, best.chosen, end, gpus);
  }
  for (const line of lines) {
    const found = usableOn(line, gpus, gpuModel, now, end, allow);
    if (found.fits) fitsIgnoringReservations = true;
    if (found.usable) return take(line, found.model!, found.usable.slice(0, gpus), end, gpus);
  }
  return { fitsIgnoringReservations };
}

/** On one node, the first model (the requested one) with `gpus` GPUs free now, and those of them no reservation needs before `end`. */
function usableOn(line: NodeLine, gpus: number, gpuModel: string | undefined, now: number, end: number, allow?: (model: string) => boolean): { fits: boolean; model?: string; usable?: GpuLine[] } {
  if (line.freeNow < gpus) return { fits: false };
  let models: { model: string; free: number; usable: GpuLine[] }[] | undefined;
  let only: { model: string; free: number; usable: GpuLine[] } | undefined;
  for (const g of line.gpus) {
    if (g.freeAt > now || (gpuModel !== undefined && g.model !== gpuModel) || (allow && !allow(g.model))) continue;
    let m = only?.model === g.model ? only : models?.find((x) => x.model === g.model);
    if (!m) {
      m = { model: g.model, free: 0, usable: [] };
      if (!only) only = m;
      else (models ??= [only]).push(m);
    }
    m.free++;
    if (g.reservedFrom >= end) m.usable.push(g);
  }
  let fits = false;
  for (const m of models ?? (only ? [only] : [])) {
    if (m.free >= gpus) fits = true;
    if (m.usable.length >= gpus) return { fits: true, model: m.model, usable: m.usable };
  }
  return { fits };
}

/** Marks `chosen` busy until `end` and makes the gang. */
function take(line: NodeLine, model: string, chosen: GpuLine[], end: number, gpus: number): { gangs: Gang[]; fitsIgnoringReservations: true } {
  for (const g of chosen) g.freeAt = end;
  line.freeNow -= gpus;
  return { gangs: [{ nodeId: line.nodeId, gpuModel: model, gpuIndices: chosen.map((g) => g.index).sort((a, b) => a - b) }], fitsIgnoringReservations: true };
}

/**
 * The earliest reservation of `gpus` GPUs of one model on one node; undefined when none can be
 * predicted (only never-ending work). On that node it holds the GPUs that become available
 * latest by its start (busy ones before free ones), so GPUs free now stay free for work beside it.
 */
function reserve(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, timeLimitMs: number, allow?: (model: string) => boolean): Reservation | undefined {
  let best: { line: NodeLine; model: string; list: GpuLine[]; start: number } | undefined;
  for (const line of lines) {
    if (line.gpus.length < gpus) continue;
    const byModel = new Map<string, GpuLine[]>();
    for (const g of line.gpus) {
      if ((gpuModel !== undefined && g.model !== gpuModel) || (allow && !allow(g.model))) continue;
      const list = byModel.get(g.model);
      if (list) list.push(g);
      else byModel.set(g.model, [g]);
    }
    for (const [model, list] of byModel) {
      if (list.length < gpus) continue;
      const times = list.map((g) => availableAt(g, now)).sort((a, b) => a - b);
      const start = times[gpus - 1]!;
      if (start < (best?.start ?? Infinity)) best = { line, model, list, start };
    }
  }
  if (!best) return undefined;
  const start = best.start;
  const chosen = best.list
    .filter((g) => availableAt(g, now) <= start)
    .sort((a, b) => availableAt(b, now) - availableAt(a, now) || a.index - b.index)
    .slice(0, gpus);
  const end = start + timeLimitMs;
  for (const g of chosen) {
    g.reservedFrom = Math.min(g.reservedFrom, start);
    g.reservedUntil = Math.max(g.reservedUntil, end);
  }
  return { gpuModel: best.model, parts: [{ nodeId: best.line.nodeId, gpuIndices: chosen.map((g) => g.index).sort((a, b) => a - b) }], start, end };
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
function modelsOf(lines: readonly NodeLine[], gpuModel: string | undefined, allow?: (model: string) => boolean): string[] {
  if (gpuModel !== undefined) return [gpuModel];
  const seen = new Set<string>();
  for (const line of lines) for (const g of line.gpus) seen.add(g.model);
  return allow ? [...seen].filter(allow) : [...seen];
}

type Picks = { line: NodeLine; chosen: GpuLine[] }[];

/**
 * `gpus` GPUs of `model` over several nodes, from the GPUs `usable` accepts: whole nodes (every GPU
 * of the model on the node usable) while the rest needs at least a whole node, then the remainder
 * on the first other node that has it. Whole nodes go in first-fit order, or by `score` ascending
 * when given (ties: first-fit order). Undefined unless all of it is there.
 */
function pickWhole(lines: readonly NodeLine[], gpus: number, model: string, usable: (g: GpuLine) => boolean, score?: (chosen: GpuLine[]) => number): Picks | undefined {
  const whole: { line: NodeLine; chosen: GpuLine[]; score: number; order: number }[] = [];
  const others: { line: NodeLine; ok: GpuLine[] }[] = [];
  let wholeGpus = 0;
  lines.forEach((line, order) => {
    let ofModel = 0;
    const ok: GpuLine[] = [];
    for (const g of line.gpus) {
      if (g.model !== model) continue;
      ofModel++;
      if (usable(g)) ok.push(g);
    }
    if (ofModel === 0) return;
    if (ok.length === ofModel) {
      whole.push({ line, chosen: ok, score: score ? score(ok) : 0, order });
      wholeGpus += ok.length;
    } else others.push({ line, ok });
  });
  if (wholeGpus + others.reduce((n, o) => Math.max(n, o.ok.length), 0) < gpus && wholeGpus < gpus) return undefined;
  if (score) whole.sort((a, b) => a.score - b.score || a.order - b.order);
  const taken: typeof whole = [];
  let left = gpus;
  for (const w of whole) {
    if (left === 0) break;
    if (left >= w.chosen.length) {
      taken.push(w);
      left -= w.chosen.length;
    } else others.push({ line: w.line, ok: w.chosen });
  }
  // Rank order: the whole nodes in first-fit order, the remainder's node last.
  if (score) taken.sort((a, b) => a.order - b.order);
  const picks: Picks = taken.map((w) => ({ line: w.line, chosen: w.chosen }));
  if (left === 0) return picks;
  const last = others.find((o) => o.ok.length >= left);
  if (!last) return undefined;
  picks.push({ line: last.line, chosen: last.ok.slice(0, left) });
  return picks;
}

/** Would {@link pickWhole} (first-fit order) find the GPUs? The same walk, without building the picks. */
function canPickWhole(lines: readonly NodeLine[], gpus: number, model: string, usable: (g: GpuLine) => boolean): boolean {
  let left = gpus;
  let mostOk = 0;
  for (const line of lines) {
    let ofModel = 0;
    let ok = 0;
    for (const g of line.gpus) {
      if (g.model !== model) continue;
      ofModel++;
      if (usable(g)) ok++;
    }
    if (ofModel === 0) continue;
    if (ok === ofModel && left >= ok) {
      left -= ok;
      if (left === 0) return true;
    } else if (ok > mostOk) mostOk = ok;
  }
  return mostOk >= left;
}

/**
 * A job larger than any node: whole nodes free now whose reservations begin no earlier than `end`
 * (with reservations about, the soonest-reserved first, as in {@link startNow}). Marks them busy until `end`.
 */
function startWhole(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, end: number, tight: boolean, allow?: (model: string) => boolean): { gangs?: Gang[]; fitsIgnoringReservations: boolean } {
  let fitsIgnoringReservations = false;
  const soonest = (chosen: GpuLine[]) => chosen.reduce((m, g) => Math.min(m, g.reservedFrom), Infinity);
  for (const model of modelsOf(lines, gpuModel, allow)) {
    const picks = pickWhole(lines, gpus, model, (g) => g.freeAt <= now && g.reservedFrom >= end, tight ? soonest : undefined);
    if (!picks) {
      if (pickWhole(lines, gpus, model, (g) => g.freeAt <= now)) fitsIgnoringReservations = true;
      continue;
    }
    for (const { line, chosen } of picks) {
      for (const g of chosen) g.freeAt = end;
      line.freeNow -= chosen.length;
    }
    return { gangs: picks.map(({ line, chosen }) => ({ nodeId: line.nodeId, gpuModel: model, gpuIndices: chosen.map((g) => g.index).sort((a, b) => a - b) })), fitsIgnoringReservations: true };
  }
  return { fitsIgnoringReservations };
}

/**
 * The earliest reservation of whole nodes for a job larger than any node: the first instant at
 * which {@link pickWhole} finds the job's GPUs free of running work and earlier reservations
 * (binary search over the instants GPUs become available; more time never makes fewer free).
 * At that instant it holds the nodes that become available latest, as {@link reserve} does.
 */
function reserveWhole(lines: NodeLine[], gpus: number, gpuModel: string | undefined, now: number, timeLimitMs: number, allow?: (model: string) => boolean): Reservation | undefined {
  let best: { model: string; start: number; picks: Picks } | undefined;
  for (const model of modelsOf(lines, gpuModel, allow)) {
    const all: number[] = [];
    for (const l of lines) for (const g of l.gpus) if (g.model === model) all.push(availableAt(g, now));
    const times = Float64Array.from(all).sort();
    let lo = 0;
    let hi = times.length - 1;
    while (hi >= 0 && !Number.isFinite(times[hi]!)) hi--;
    let found: { start: number } | undefined;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = times[mid]!;
      if (canPickWhole(lines, gpus, model, (g) => availableAt(g, now) <= at)) {
        found = { start: at };
        hi = mid - 1;
      } else lo = mid + 1;
    }
    if (found && found.start < (best?.start ?? Infinity)) {
      const at = found.start;
      const usable = (g: GpuLine) => availableAt(g, now) <= at;
      const picks = pickWhole(lines, gpus, model, usable, (chosen) => -chosen.reduce((m, g) => Math.max(m, availableAt(g, now)), -Infinity)) ?? pickWhole(lines, gpus, model, usable);
      if (picks) best = { model, start: at, picks };
    }
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
