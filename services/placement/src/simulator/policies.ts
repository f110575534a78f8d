/**
 * The policies the simulator can replay, by name, each with and without EASY backfilling: every
 * one is the core's own plan (`../domain/plan.ts`) with other options, so a simulated figure is
 * what the placement service would do.
 *
 * - `default`: the core's default, exactly as the service runs it with no configuration
 *   ({@link DEFAULT_PLAN_OPTIONS}); options given on the command line override it.
 * - `fcfs`: submit order; with backfill, EASY (Lifka 1995; Mu'alem & Feitelson 2001): the first
 *   job that cannot start holds a reservation, later jobs start only where they do not delay it.
 *   Without backfill, strict FCFS: the first job that does not fit blocks the rest.
 * - `sjf`: shortest (predicted, else requested) run first; with backfill, SJF with EASY: the
 *   shortest job that cannot start holds the one reservation. Without, strict SJF order.
 */
import { DEFAULT_PLAN_OPTIONS, type PlanOptions } from '../domain/index.js';

export const POLICY_NAMES = ['default', 'fcfs', 'sjf'] as const;
export type PolicyName = (typeof POLICY_NAMES)[number];

/** The plan options of a policy, with `overrides` (command-line options) applied on top. */
export function planOptionsFor(name: PolicyName, overrides: PlanOptions = {}): PlanOptions {
  const base: PlanOptions = name === 'default' ? DEFAULT_PLAN_OPTIONS : { order: name, reservationDepth: 1, reservationAfterMs: 0, backfill: true, headroom: false };
  return { ...base, ...overrides, ...(overrides.weights ? { weights: { ...(base.weights ?? DEFAULT_PLAN_OPTIONS.weights!), ...overrides.weights } } : {}) };
}
