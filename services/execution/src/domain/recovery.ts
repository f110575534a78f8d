/**
 * What a starting agent finds left over from its previous run: every attempt placed on this node
 * that was not released. Pure: the caller reads the store.
 */
import { foldAttempt, recoveryStep, type AttemptState, type Placement, type RecordedAttemptEvent } from './attempt.js';

/** What the store holds about this node's attempts. */
export interface RecoveryInput {
  /** `JobPlaced` data for this node (any order; a repeated attempt id counts once). */
  readonly placements: readonly Placement[];
  /** Recorded events of each attempt stream of this node, by attempt id, in stream order. */
  readonly attempts: ReadonlyMap<string, readonly RecordedAttemptEvent[]>;
}

/**
 * Every attempt of this node that still needs something done (see `recoveryStep`), in a stable
 * order (attempt id). An attempt stream without a visible `JobPlaced` (placement's event not yet
 * readable, or a store that was trimmed) is rebuilt from its `ComputeHeld` or `ComputeReleased`,
 * which carry the same placement facts; one with neither is skipped, since its GPUs are unknown.
 */
export function attemptsToRecover(input: RecoveryInput): AttemptState[] {
  const placements = new Map<string, Placement>();
  for (const p of input.placements) if (!placements.has(p.attemptId)) placements.set(p.attemptId, p);
  for (const [attemptId, events] of input.attempts) {
    if (placements.has(attemptId)) continue;
    const held = events.find((e) => e.type === 'ComputeHeld');
    const released = events.find((e) => e.type === 'ComputeReleased');
    if (held?.type === 'ComputeHeld') {
      const { jobId, nodeId, gpuIndices, gpuModel } = held.data;
      placements.set(attemptId, { jobId, attemptId, nodeId, gpuIndices, gpuModel });
    } else if (released?.type === 'ComputeReleased') {
      const { jobId, nodeId, gpuIndices } = released.data;
      placements.set(attemptId, { jobId, attemptId, nodeId, gpuIndices, gpuModel: 'unknown' });
    }
  }
  return [...placements.values()]
    .map((p) => foldAttempt(p, input.attempts.get(p.attemptId) ?? []))
    .filter((s) => recoveryStep(s) !== 'none')
    .sort((a, b) => (a.placement.attemptId < b.placement.attemptId ? -1 : a.placement.attemptId > b.placement.attemptId ? 1 : 0));
}
