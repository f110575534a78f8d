/**
 * Cordon, drain and uncordon an execution node, and the operator's view of every node (decision
 * 0031). Handled by placement, which owns the node inventory and records each change as an event
 * in the store (`placement-node-<nodeId>`). The command subjects accept the operator identity and
 * intake (which sends them only for a key of role `operator`), never a team or a node: nats-server
 * enforces it (deploy/nats-permissions.yaml).
 */
import { z } from 'zod';
import { defineCommand, defineQuery } from './message.js';
import { DurationMs, GpuModel, NodeId, Timestamp } from './primitives.js';

/**
 * Where a node stands, for operators (`gpunet nodes list`):
 * - `ready`: registered, alive (a heartbeat within its lease), takes new work;
 * - `cordoned`: alive, takes no new work (the operator's cordon); what runs there keeps running;
 * - `draining`: asked to drain, takes no new work, attempts still hold GPUs there;
 * - `drained`: drained, nothing runs there: it may be taken down;
 * - `lost`: placement declared it lost (no heartbeat within its lease) and it has not registered again;
 * - `offline`: known but not serving: enrolled and never registered, or silent after it was drained.
 */
export const NODE_STATES = ['ready', 'cordoned', 'draining', 'drained', 'lost', 'offline'] as const;
export type NodeState = (typeof NODE_STATES)[number];

const Reason = z
  .string({ error: 'must be text saying why, e.g. `--reason "replace GPU 3"`' })
  .trim()
  .min(1, { error: 'must say why (it is kept in the record and shown by `gpunet nodes list`): pass `--reason "…"`' })
  .max(500, { error: 'at most 500 characters' });
const By = z.string().min(1).max(200).default('operator').describe('Who does it, for the record (`operator <user>`); intake sets it from the operator\'s key.');

export const CordonNode = z
  .object({ nodeId: NodeId, reason: Reason.describe('Why, for the record.'), by: By })
  .strict()
  .describe('Place nothing new on the node; what runs there keeps running.');
export type CordonNode = z.output<typeof CordonNode>;

export const DrainNode = z
  .object({ nodeId: NodeId, reason: Reason.describe('Why, for the record.'), by: By })
  .strict()
  .describe('Place nothing new on the node and record NodeDrained once every attempt there has released its GPUs.');
export type DrainNode = z.output<typeof DrainNode>;

export const UncordonNode = z
  .object({ nodeId: NodeId, reason: Reason.optional().describe('Why, for the record.'), by: By })
  .strict()
  .describe('Take back a cordon or a drain: the node takes new work again.');
export type UncordonNode = z.output<typeof UncordonNode>;

/** One node as placement sees it. */
export const NodeStatus = z.object({
  nodeId: NodeId,
  state: z.enum(NODE_STATES).describe('ready, cordoned, draining, drained, lost or offline (see NODE_STATES).'),
  hostname: z.string().optional().describe('Host name the agent registered with.'),
  gpus: z.int().min(0).describe('GPUs (or declared slots) the node offers.'),
  gpusHeld: z.int().min(0).describe('GPUs held by attempts now.'),
  gpuModels: z.array(GpuModel).describe('The models of its GPUs.'),
  runningAttempts: z.int().min(0).describe('Attempts holding GPUs on the node (placed, not yet released).'),
  lastHeartbeatAt: Timestamp.optional().describe('Placement clock: when its last heartbeat arrived (this placement process).'),
  heartbeatAgeMs: DurationMs.optional().describe('How long ago, at `at` of the reply.'),
  leaseMs: DurationMs.optional().describe('Silence longer than this and the node is declared lost.'),
  registeredAt: Timestamp.optional(),
  lostAt: Timestamp.optional().describe('When placement declared it lost (while it has not registered again).'),
  admin: z
    .object({
      state: z.enum(['cordoned', 'draining', 'drained']).describe('Cordoned, or draining until NodeDrained, then drained.'),
      by: z.string().describe('The operator who did it.'),
      reason: z.string().describe('Why, in the operator\'s words.'),
      at: Timestamp.describe('When it was recorded (placement clock).'),
      drainedAt: Timestamp.optional().describe('When the drain completed (NodeDrained).'),
    })
    .optional()
    .describe('The operator\'s cordon or drain in force, with who, why and when.'),
});
export type NodeStatus = z.output<typeof NodeStatus>;

export const NodeAdminReply = z.object({
  node: NodeStatus.describe('The node as it now stands.'),
  changed: z.boolean().describe('False when the node already was so: nothing was recorded.'),
  event: z.string().optional().describe('The event recorded, when one was.'),
});
export type NodeAdminReply = z.output<typeof NodeAdminReply>;

export const ListNodeStates = z.object({}).strict().describe('Every node placement knows, with its state.');
export const ListNodeStatesReply = z.object({ nodes: z.array(NodeStatus).describe('Registration order.'), at: Timestamp });
export type ListNodeStatesReply = z.output<typeof ListNodeStatesReply>;

export const nodeAdminCommands = [
  defineCommand({
    name: 'CordonNode',
    version: 1,
    handler: 'placement',
    description: 'Operator: place nothing new on this node (NodeCordoned); running attempts continue.',
    schema: CordonNode,
    replySchema: NodeAdminReply,
  }),
  defineCommand({
    name: 'DrainNode',
    version: 1,
    handler: 'placement',
    description: 'Operator: place nothing new on this node and record NodeDrained once its running attempts have released their GPUs (NodeDrainRequested).',
    schema: DrainNode,
    replySchema: NodeAdminReply,
  }),
  defineCommand({
    name: 'UncordonNode',
    version: 1,
    handler: 'placement',
    description: 'Operator: take back a cordon or drain; the node takes new work again (NodeUncordoned).',
    schema: UncordonNode,
    replySchema: NodeAdminReply,
  }),
] as const;

export const nodeAdminQueries = [
  defineQuery({
    name: 'ListNodeStates',
    version: 1,
    service: 'placement',
    description: 'Operator: every node placement knows, its state (ready, cordoned, draining, drained, lost), GPUs total and held, running attempts, last heartbeat.',
    schema: ListNodeStates,
    replySchema: ListNodeStatesReply,
  }),
] as const;
