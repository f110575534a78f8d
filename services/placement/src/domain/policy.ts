/**
 * Scheduling policies: which placeable jobs get which GPUs in one pass. A policy sees the
 * candidates in queue order and the pass's free capacity; it returns placements and takes their
 * GPUs from the capacity. Priority (reordering), backfill and reservations are policies too.
 */
import type { Gang, PassCapacity } from './capacity.js';
import type { JobRecord } from './state.js';

/** One job placed on one gang in a pass. */
export interface Allocation {
  job: JobRecord;
  gang: Gang;
}

/**
 * A placement policy. `candidates` are placeable now, in submit order; `now` is the pass time.
 * It must take every gang it returns from `capacity` (which refuses GPUs that are not free).
 */
export type PlacementPolicy = (candidates: readonly JobRecord[], capacity: PassCapacity, now: Date) => Allocation[];

/**
 * First fit in submit order: each candidate, oldest first, goes on the first node with enough free
 * GPUs of its model; a job that does not fit now waits and later, smaller jobs may pass it (no
 * reservations yet: a large job can wait while small ones flow).
 */
export const firstFit: PlacementPolicy = (candidates, capacity) => {
  const out: Allocation[] = [];
  for (const job of candidates) {
    if (capacity.totalFree === 0) break;
    const gang = capacity.fit(job.request);
    if (!gang) continue;
    capacity.take(gang);
    out.push({ job, gang });
  }
  return out;
};
