/**
 * Multi-node gangs, read the same way by every service: who the members of an attempt are, and
 * what the attempt's outcome is once its parts have ended. Pure.
 *
 * A gang's parts run on several nodes, each recording its own JobFinished. Rank 0 is the main
 * part (like the batch step of a Slurm job): when it ends, or when any part fails, the agents
 * stop the others and mark their JobFinished with `peerEnded`. The attempt's outcome is decided
 * by the parts that ended on their own: the first of them (in rank order) that did not complete,
 * else `completed`.
 */
import type { JobFinished, JobPlaced } from './events/job.js';
import type { JobOutcome } from './primitives.js';

/** One part of an attempt: a node, its GPUs, its rank (0 for a one-node attempt). */
export interface GangPart {
  nodeId: string;
  gpuIndices: readonly number[];
  rank: number;
}

/** Every part of a placement, rank order; one part for a one-node attempt. */
export function gangParts(placed: Pick<JobPlaced, 'nodeId' | 'gpuIndices' | 'nodes'>): GangPart[] {
  if (placed.nodes === undefined) return [{ nodeId: placed.nodeId, gpuIndices: placed.gpuIndices, rank: 0 }];
  return placed.nodes.map((n, rank) => ({ nodeId: n.nodeId, gpuIndices: n.gpuIndices, rank }));
}

/** The part of a placement on `nodeId`, if that node takes part. */
export function gangPartOf(placed: Pick<JobPlaced, 'nodeId' | 'gpuIndices' | 'nodes'>, nodeId: string): GangPart | undefined {
  return gangParts(placed).find((p) => p.nodeId === nodeId);
}

/** GPUs of the whole attempt, over every part. */
export function gangGpus(placed: Pick<JobPlaced, 'gpuIndices' | 'nodes'>): number {
  return placed.nodes === undefined ? placed.gpuIndices.length : placed.nodes.reduce((n, p) => n + p.gpuIndices.length, 0);
}

/** A part's end, as its JobFinished says. */
export type PartEnd = Pick<JobFinished, 'nodeId' | 'outcome' | 'peerEnded'>;

/**
 * Should the other parts of a gang be stopped now that `ended` (not rank `endedRank`'s own
 * stop for a peer) has ended? Yes when rank 0 ended, or when any part did not complete.
 */
export function stopsGang(ended: PartEnd, endedRank: number): boolean {
  if (ended.peerEnded !== undefined) return false;
  return endedRank === 0 || ended.outcome !== 'completed';
}

/**
 * The attempt's outcome once every part ended (`ends` in any order, one per part), or undefined
 * while some part is still running. A lost node decides it (`node_lost`, so the job is requeued);
 * otherwise the first part in rank order that ended on its own without completing; else `completed`.
 */
export function gangOutcome(parts: readonly GangPart[], ends: readonly PartEnd[]): { outcome: JobOutcome; decidedBy: string } | undefined {
  const byNode = new Map(ends.map((e) => [e.nodeId, e]));
  if (!parts.every((p) => byNode.has(p.nodeId))) return undefined;
  const ordered = parts.map((p) => byNode.get(p.nodeId)!);
  const lost = ordered.find((e) => e.outcome === 'node_lost' && e.peerEnded === undefined);
  if (lost) return { outcome: 'node_lost', decidedBy: lost.nodeId };
  const own = ordered.filter((e) => e.peerEnded === undefined);
  const bad = own.find((e) => e.outcome !== 'completed');
  if (bad) return { outcome: bad.outcome, decidedBy: bad.nodeId };
  // Every part ended on its own and completed (or was stopped after rank 0 completed).
  return { outcome: own.length > 0 ? 'completed' : ordered[0]!.outcome, decidedBy: (own[0] ?? ordered[0]!).nodeId };
}
