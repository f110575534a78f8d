/**
 * Node loss: a registered node whose heartbeats stopped for longer than its lease is declared lost
 * (`NodeLost`, reason `heartbeat_timeout`) with the attempts that were running there. Applying
 * the NodeLost (evolve) ends those attempts `node_lost` and frees the node; the next `decide`
 * requeues their jobs (`JobRequeued`, reason `node_lost`). Pure: the clock is an argument.
 *
 * Liveness is measured on placement's clock (when a heartbeat arrived, not when the agent says it
 * sent it), so clock skew between machines cannot make a node look dead or alive. A node placement
 * has not heard from since it started watching (see {@link observeRegistration}) is never lost on
 * that account alone: it gets a whole lease from that moment.
 */
import type { EventData } from '#contracts';
import type { NodeRecord, PlacementState } from './state.js';

/** Heartbeat intervals a node may miss before it is lost (lease = this × its heartbeatIntervalMs). */
export const DEFAULT_LEASE_INTERVALS = 3;
/** Shortest lease, whatever the node's interval: a busy event loop must not lose a node. */
export const MIN_LEASE_MS = 5_000;

export interface NodeLossOptions {
  /** Fixed lease for every node, ms; default: {@link DEFAULT_LEASE_INTERVALS} × the node's heartbeat interval, at least {@link MIN_LEASE_MS}. */
  leaseMs?: number | undefined;
}

/** One node declared lost, to append to `placement-node-<nodeId>`. */
export interface NodeLossDecision {
  type: 'NodeLost';
  data: EventData<'NodeLost'>;
  /**
   * Names the registration that ended (node id and its registeredAt): the event id derives from
   * it, so deciding the same loss again (after a restart) writes nothing new.
   */
  registrationKey: string;
}

/** A node's lease in ms. */
export function leaseOf(node: Pick<NodeRecord, 'heartbeatIntervalMs'>, options: NodeLossOptions = {}): number {
  if (options.leaseMs !== undefined) return options.leaseMs;
  return Math.max(MIN_LEASE_MS, DEFAULT_LEASE_INTERVALS * (node.heartbeatIntervalMs ?? 0));
}

/** `placement-node-<nodeId>`: NodeLost of one node. */
export function placementNodeStreamId(nodeId: string): string {
  return `placement-node-${nodeId}`;
}

/**
 * Counts a registration placement learns of (at start, folding, or live) as a sign of life at
 * `receivedAt` (placement clock, epoch ms), so a node gets a whole lease to send its first
 * heartbeat to this placement process. Never moves an observation back.
 */
export function observeRegistration(state: PlacementState, nodeId: string, receivedAt: number): void {
  const node = state.nodes.get(nodeId);
  if (!node?.registered) return;
  if (node.registrationSeenAt === undefined || node.registrationSeenAt < receivedAt) node.registrationSeenAt = receivedAt;
}

/**
 * Registered nodes silent for longer than their lease at `now`, each with the attempts running
 * there (placed, not finished: a finished attempt's usage is already settled by its JobFinished).
 */
export function detectLostNodes(state: PlacementState, now: Date, options: NodeLossOptions = {}): NodeLossDecision[] {
  const nowMs = now.getTime();
  const lost: NodeRecord[] = [];
  for (const node of state.nodes.values()) {
    if (!node.registered) continue;
    const seen = Math.max(node.lastHeartbeatAt ?? -Infinity, node.registrationSeenAt ?? -Infinity);
    if (seen !== -Infinity && nowMs - seen > leaseOf(node, options)) lost.push(node);
  }
  if (lost.length === 0) return [];
  const affected = new Map<string, { jobId: string; attemptId: string }[]>(lost.map((n) => [n.nodeId, []]));
  for (const job of state.jobs.values()) {
    for (const a of job.attempts) {
      if (a.outcome === undefined && !a.released) for (const p of a.parts) affected.get(p.nodeId)?.push({ jobId: job.jobId, attemptId: a.attemptId });
    }
  }
  const detectedAt = now.toISOString();
  return lost
    .sort((a, b) => a.order - b.order)
    .map((node) => ({
      type: 'NodeLost' as const,
      registrationKey: `${node.nodeId}@${node.registeredAt ?? ''}`,
      data: {
        nodeId: node.nodeId,
        reason: 'heartbeat_timeout' as const,
        lastSeenAt: node.lastHeartbeatSentAt ?? node.registeredAt ?? new Date(Math.max(node.lastHeartbeatAt ?? 0, node.registrationSeenAt ?? 0)).toISOString(),
        detectedAt,
        affectedAttempts: affected.get(node.nodeId)!,
      },
    }));
}
