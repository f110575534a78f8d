/**
 * Scheduling policies: which placeable jobs get which GPUs in one pass. A policy sees the
 * candidates in queue order and the pass's free capacity; it returns placements and takes their
 * GPUs from the capacity. Priority (reordering), backfill and reservations are policies too.
 */
import type { Gang, PassCapacity } from './capacity.js';
import { plan, type PlanOptions } from './plan.js';
import type { JobRecord, PlacementState } from './state.js';

/** One job placed in a pass: its gangs, one per node in rank order (one for a job that fits a node). */
export interface Allocation {
  job: JobRecord;
  gangs: Gang[];
  /** Placed past its team's concurrent GPU quota, on idle GPUs (`quotas.ts`). */
  borrowed?: boolean;
}

/**
 * A placement policy. `candidates` are placeable now, in submit order; `now` is the pass time;
 * `state` is the folded state (read only: running attempts, usage). It must take every gang it
 * returns from `capacity` (which refuses GPUs that are not free).
 */
export type PlacementPolicy = (candidates: readonly JobRecord[], capacity: PassCapacity, now: Date, state: PlacementState) => Allocation[];

/**
 * Backfill with reservations by multifactor priority (the default policy; see `plan.ts`): the
 * highest-priority jobs that cannot start hold reservations, lower ones start only where they
 * delay none.
 */
export function backfill(options: PlanOptions = {}): PlacementPolicy {
  const passOptions: PlanOptions = { ...options, startsOnly: true };
  return (candidates, capacity, now, state) => {
    if (capacity.totalFree === 0) return [];
    return plan(state, now, passOptions, candidates).starts.map(({ job, gangs, borrowed }) => {
      capacity.takeAll(gangs);
      return borrowed ? { job, gangs, borrowed } : { job, gangs };
    });
  };
}

/** The default policy: {@link backfill} with default options. */
export const defaultPolicy: PlacementPolicy = backfill();

/**
 * First fit in submit order (`fcfs`-like, no priority, no reservations, no quotas: a simulator baseline): each candidate, oldest first, goes on the first node with enough free
 * GPUs of its model; a job that does not fit now waits and later, smaller jobs may pass it
 * without limit (a large job can starve while small ones flow).
 */
export const firstFit: PlacementPolicy = (candidates, capacity) => {
  const out: Allocation[] = [];
  for (const job of candidates) {
    if (capacity.totalFree === 0) break;
    const gangs = capacity.fitGangs(job.request);
    if (!gangs) continue;
    capacity.takeAll(gangs);
    out.push({ job, gangs });
  }
  return out;
};
