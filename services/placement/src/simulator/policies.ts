/**
 * The policies the simulator can replay, by name. `default` is whatever `decide` uses when given
 * no policy (the core's default), so the simulator follows the core as it grows. `fcfs` and `sjf`
 * are small policies over the core's gang fitting (`PassCapacity`), kept here because the core
 * has no use for them in production.
 */
import { firstFit, type Allocation, type PlacementPolicy } from '../domain/index.js';

export const POLICY_NAMES = ['default', 'fcfs', 'sjf'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/**
 * Strict first come, first served: jobs start in submit order and the first one that does not
 * fit blocks every later one (no job passes another). The classic baseline backfill improves on.
 */
export const strictFcfs: PlacementPolicy = (candidates, capacity) => {
  const out: Allocation[] = [];
  for (const job of candidates) {
    const gangs = capacity.fitGangs(job.request);
    if (!gangs) break;
    capacity.takeAll(gangs);
    out.push({ job, gangs });
  }
  return out;
};

/**
 * Shortest (requested) job first: candidates by time limit ascending, submit order among equals,
 * each placed first-fit where it fits; a job that does not fit does not block shorter-later ones.
 */
export const shortestFirst: PlacementPolicy = (candidates, capacity, now, state) =>
  firstFit(
    [...candidates].sort((a, b) => a.request.timeLimitMs - b.request.timeLimitMs || (a.submitPosition < b.submitPosition ? -1 : a.submitPosition > b.submitPosition ? 1 : 0)),
    capacity,
    now,
    state,
  );

/** The policy to pass to `decide` for a name; undefined means the core's default. */
export function policyFor(name: PolicyName): PlacementPolicy | undefined {
  switch (name) {
    case 'default':
      return undefined;
    case 'fcfs':
      return strictFcfs;
    case 'sjf':
      return shortestFirst;
  }
}
