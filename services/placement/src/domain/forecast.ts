/**
 * The capacity forecast (`gpunet capacity`): free GPUs per GPU model per hour ahead, from the live
 * plan. Pure: the state is only read, `now` is an argument.
 *
 * A GPU counts as free for an hour when nothing is planned on it at any moment of that hour:
 * no running attempt (busy until its expected end, as the plan assumes: its predicted end, its time limit once outlived), no job the plan starts now,
 * no reservation. So the figure is what a new job could count on for the whole hour, with the
 * queue as it stands; work that ends early only frees more.
 */
import { expectedEndOf, plan, type PlanOptions } from './plan.js';
import { registeredNodes, type PlacementState } from './state.js';
import { isSchedulable } from './node-admin.js';

/** Options of {@link forecast}. */
export interface ForecastOptions extends PlanOptions {
  /** Hours ahead, from `now`. Default 24. */
  hours?: number;
}

/** One hour of the forecast. */
export interface ForecastHour {
  /** Epoch ms the hour starts (`now + i h`). */
  start: number;
  /** GPU model → GPUs free for the whole hour. Every model of a registered node is present. */
  free: Record<string, number>;
}

const HOUR_MS = 3_600_000;

/** Free GPUs per model for each of the next `hours` hours at `now` (epoch ms or Date). */
export function forecast(state: PlacementState, now: number | Date, options: ForecastOptions = {}): { totals: Record<string, number>; hours: ForecastHour[] } {
  const t = typeof now === 'number' ? now : now.getTime();
  const hours = options.hours ?? 24;
  // Reservations as they will stand (every blocked job's at once): what a new job cannot count on.
  const p = plan(state, t, { ...options, reservationAfterMs: 0, reserveByLimits: false });
  /** `${nodeId}/${index}` → busy intervals [from, to). */
  const busy = new Map<string, [number, number][]>();
  const mark = (nodeId: string, index: number, from: number, to: number) => {
    const key = `${nodeId}/${index}`;
    const list = busy.get(key);
    if (list) list.push([from, to]);
    else busy.set(key, [[from, to]]);
  };
  const nodes = registeredNodes(state);
  for (const node of nodes) {
    // A cordoned or draining node offers nothing ahead (node-admin.ts).
    if (!isSchedulable(node)) {
      for (const g of node.gpus) mark(node.nodeId, g.index, t, Infinity);
      continue;
    }
    for (const [attemptId, indices] of node.holds) {
      const live = state.live.get(attemptId);
      // As in the plan: an attempt of an unknown job never ends; a finished one only waits for its release.
      const end = live ? expectedEndOf(live, t, options.predictions ?? true) : Infinity;
      for (const i of indices) mark(node.nodeId, i, t, end);
    }
  }
  for (const { job, gangs } of p.starts) for (const gang of gangs) for (const i of gang.gpuIndices) mark(gang.nodeId, i, t, t + job.request.timeLimitMs);
  for (const { reservation: r } of p.jobs) if (r) for (const part of r.parts) for (const i of part.gpuIndices) mark(part.nodeId, i, r.start, r.end);

  const totals: Record<string, number> = {};
  for (const node of nodes) for (const g of node.gpus) totals[g.model] = (totals[g.model] ?? 0) + 1;
  const out: ForecastHour[] = [];
  for (let h = 0; h < hours; h++) {
    const from = t + h * HOUR_MS;
    const to = from + HOUR_MS;
    const free: Record<string, number> = Object.fromEntries(Object.keys(totals).map((m) => [m, 0]));
    for (const node of nodes) {
      for (const g of node.gpus) {
        const overlaps = (busy.get(`${node.nodeId}/${g.index}`) ?? []).some(([a, b]) => a < to && b > from);
        if (!overlaps) free[g.model]!++;
      }
    }
    out.push({ start: from, free });
  }
  return { totals, hours: out };
}
