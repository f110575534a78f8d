/**
 * Cordon, drain and uncordon (decision 0031): the operator takes a node out of placement's
 * choices without touching what runs there. A cordoned or draining node is skipped by every
 * pass (`isSchedulable`: `decide` and `plan` place and reserve nothing there); a draining node is
 * recorded `NodeDrained` once no attempt holds GPUs on it any more. The node-loss rule is
 * unchanged: a cordoned or draining node that goes silent past its lease is lost like any other,
 * its attempts end `node_lost` (requeued, not billed), and a drain then completes `afterLoss`.
 *
 * Pure: the clock is an argument, the state is only read (`evolve` applies the events).
 */
import type { EventData, NodeState, NodeStatus } from '#contracts';
import { leaseOf, type NodeLossOptions } from './node-loss.js';
import type { NodeRecord, PlacementState } from './state.js';

/** What the operator asks: `gpunet nodes cordon|drain|uncordon <nodeId> --reason …`. */
export type NodeAdminCommand =
  | { action: 'cordon'; nodeId: string; by: string; reason: string }
  | { action: 'drain'; nodeId: string; by: string; reason: string }
  | { action: 'uncordon'; nodeId: string; by: string; reason?: string };

/** An event placement appends to `placement-node-<nodeId>` on the operator's word or when a drain completes. */
export type NodeAdminDecision =
  | { type: 'NodeCordoned'; data: EventData<'NodeCordoned'> }
  | { type: 'NodeDrainRequested'; data: EventData<'NodeDrainRequested'> }
  | { type: 'NodeUncordoned'; data: EventData<'NodeUncordoned'> }
  | { type: 'NodeDrained'; data: EventData<'NodeDrained'> };

/** The answer to a command: the event to record (none when the node already is so), or why it cannot be done. */
export type NodeAdminOutcome =
  | { ok: true; event?: NodeAdminDecision }
  | { ok: false; reason: 'unknown_node'; message: string; issue: { path: string; message: string; fix: string } };

/** May a pass place new work on this node? Registered (not lost) and neither cordoned nor draining. */
export function isSchedulable(node: Pick<NodeRecord, 'registered' | 'admin'>): boolean {
  return node.registered && node.admin === undefined;
}

/** The attempts holding GPUs on a node now. */
function runningOn(state: PlacementState, node: NodeRecord): { jobId: string; attemptId: string }[] {
  return [...node.holds.keys()].map((attemptId) => ({ jobId: state.live.get(attemptId)?.jobId ?? jobOfAttempt(attemptId), attemptId }));
}

/** An attempt id is `<jobId>-a<n>` (`attempt-id.ts`): the job when placement no longer knows the attempt. */
function jobOfAttempt(attemptId: string): string {
  const i = attemptId.lastIndexOf('-a');
  return i > 0 ? attemptId.slice(0, i) : attemptId;
}

/**
 * What to record for the operator's command at `now`. A node placement has never heard of is
 * refused (the command names a node id: a typo must not cordon nothing silently); asking for what
 * is already so records nothing. A drain asked of a cordoned node turns the cordon into a drain; a
 * cordon asked of a draining node leaves the drain as it is.
 */
export function decideNodeAdmin(state: PlacementState, command: NodeAdminCommand, now: Date): NodeAdminOutcome {
  const node = state.nodes.get(command.nodeId);
  if (!node || (!node.registered && node.registeredAt === undefined && node.lostAt === undefined)) {
    const known = [...state.nodes.values()].filter((n) => n.registered || n.lostAt !== undefined).map((n) => n.nodeId);
    return {
      ok: false,
      reason: 'unknown_node',
      message: `no node ${command.nodeId} is known to placement${known.length > 0 ? ` (known: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''})` : ''}`,
      issue: { path: 'nodeId', message: `node ${command.nodeId} has never registered with placement`, fix: 'check the id with `gpunet nodes list`' },
    };
  }
  const at = now.toISOString();
  switch (command.action) {
    case 'cordon':
      if (node.admin) return { ok: true };
      return { ok: true, event: { type: 'NodeCordoned', data: { nodeId: node.nodeId, by: command.by, reason: command.reason, at, runningAttempts: runningOn(state, node) } } };
    case 'drain':
      if (node.admin?.kind === 'draining') return { ok: true };
      return { ok: true, event: { type: 'NodeDrainRequested', data: { nodeId: node.nodeId, by: command.by, reason: command.reason, at, runningAttempts: runningOn(state, node) } } };
    case 'uncordon':
      if (!node.admin) return { ok: true };
      return {
        ok: true,
        event: {
          type: 'NodeUncordoned',
          data: { nodeId: node.nodeId, by: command.by, ...(command.reason !== undefined ? { reason: command.reason } : {}), at, previous: adminState(node.admin) },
        },
      };
  }
}

/**
 * Draining nodes that hold nothing any more, in registration order: each gets its NodeDrained.
 * A node lost while draining holds nothing either (the loss freed it): its drain completes too,
 * marked `afterLoss`.
 */
export function detectDrained(state: PlacementState, now: Date): NodeAdminDecision[] {
  // Run after every event: only the (rare) drained nodes are sorted.
  const done: NodeRecord[] = [];
  for (const node of state.nodes.values()) {
    const admin = node.admin;
    if (admin?.kind === 'draining' && admin.drainedAt === undefined && node.holds.size === 0) done.push(node);
  }
  return done
    .sort((a, b) => a.order - b.order)
    .map((node) => ({ type: 'NodeDrained' as const, data: { nodeId: node.nodeId, requestedAt: node.admin!.at, at: now.toISOString(), afterLoss: !node.registered && node.lostAt !== undefined } }));
}

function adminState(admin: NonNullable<NodeRecord['admin']>): 'cordoned' | 'draining' | 'drained' {
  return admin.kind === 'cordoned' ? 'cordoned' : admin.drainedAt !== undefined ? 'drained' : 'draining';
}

/**
 * A node's state for operators at `now`: lost while it has not registered again, unless a drain
 * had completed (then it left as planned: `offline`); else the operator's cordon or drain; else
 * `ready` while heartbeats come within its lease, `offline` when it is silent (not yet declared lost).
 */
export function nodeStateOf(node: NodeRecord, now: number, options: NodeLossOptions = {}): NodeState {
  if (!node.registered) return node.admin?.drainedAt !== undefined && !node.admin.afterLoss ? 'offline' : node.lostAt !== undefined ? 'lost' : 'offline';
  if (node.admin) return adminState(node.admin);
  const seen = Math.max(node.lastHeartbeatAt ?? -Infinity, node.registrationSeenAt ?? -Infinity);
  return seen !== -Infinity && now - seen > leaseOf(node, options) ? 'offline' : 'ready';
}

/** One node as `gpunet nodes list` shows it, at `now` (epoch ms). */
export function nodeStatus(state: PlacementState, node: NodeRecord, now: number, options: NodeLossOptions = {}): NodeStatus {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    nodeId: node.nodeId,
    state: nodeStateOf(node, now, options),
    ...(node.hostname !== undefined ? { hostname: node.hostname } : {}),
    gpus: node.gpus.length,
    gpusHeld: node.busy.size,
    gpuModels: [...new Set(node.gpus.map((g) => g.model))],
    runningAttempts: runningOn(state, node).length,
    ...(node.lastHeartbeatAt !== undefined ? { lastHeartbeatAt: iso(node.lastHeartbeatAt), heartbeatAgeMs: Math.max(0, now - node.lastHeartbeatAt) } : {}),
    ...(node.registered || node.heartbeatIntervalMs !== undefined ? { leaseMs: leaseOf(node, options) } : {}),
    ...(node.registeredAt !== undefined ? { registeredAt: node.registeredAt } : {}),
    ...(!node.registered && node.lostAt !== undefined ? { lostAt: node.lostAt } : {}),
    ...(node.admin
      ? { admin: { state: adminState(node.admin), by: node.admin.by, reason: node.admin.reason, at: node.admin.at, ...(node.admin.drainedAt !== undefined ? { drainedAt: node.admin.drainedAt } : {}) } }
      : {}),
  };
}

/** Every node placement knows, registration order. */
export function nodeStatuses(state: PlacementState, now: number, options: NodeLossOptions = {}): NodeStatus[] {
  return [...state.nodes.values()]
    .filter((n) => n.registered || n.registeredAt !== undefined || n.lostAt !== undefined)
    .sort((a, b) => a.order - b.order)
    .map((n) => nodeStatus(state, n, now, options));
}
