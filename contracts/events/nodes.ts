/**
 * Events of the node inventory: agents register their GPUs and send heartbeats; placement
 * declares a node lost when the heartbeats stop; the operator cordons, drains and uncordons a
 * node, and placement records when a draining node has no work left (decision 0031).
 */
import { z } from 'zod';
import { defineEvent } from '../message.js';
import { AttemptId, DurationMs, GpuIndex, GpuModel, JobId, NodeId, Sha256, TeamId, Timestamp } from '../primitives.js';

/** Container runtimes an agent can run `kind: container` work with. */
export const CONTAINER_RUNTIMES = ['docker', 'podman'] as const;
export type ContainerRuntime = (typeof CONTAINER_RUNTIMES)[number];

export const NodeGpu = z
  .object({
    index: GpuIndex,
    uuid: z
      .string()
      .regex(/^GPU-[0-9a-fA-F-]{8,64}$/)
      .optional()
      .describe('The GPU\'s UUID as `nvidia-smi` reports it (`GPU-…`): stable where the index is not; absent for declared slots.'),
    model: GpuModel,
    memoryMiB: z.int().min(0).optional().describe('GPU memory in MiB, when known.'),
  })
  .describe('One GPU (or declared slot) of a node.');
export type NodeGpu = z.output<typeof NodeGpu>;

export const NodeRegistered = z.object({
  nodeId: NodeId,
  hostname: z.string().optional().describe('Host name of the machine, for people.'),
  gpus: z.array(NodeGpu).min(1).describe('Every GPU the agent offers.'),
  simulated: z.boolean().describe('True when the GPUs are slots declared with `--gpus` rather than found by `nvidia-smi`.'),
  networkIsolation: z.boolean().describe('Whether the agent can give a job its own network namespace (jobs with `network: false` are isolated there).'),
  agentVersion: z.string().optional().describe('Version of the agent software.'),
  containerRuntimes: z
    .array(z.enum(CONTAINER_RUNTIMES))
    .optional()
    .describe('Container runtimes that answer on the node (`docker`, `podman`); absent or empty: it runs scripts only.'),
  heartbeatIntervalMs: DurationMs.min(1).describe('How often the agent promises a NodeHeartbeat.'),
  registeredAt: Timestamp.describe('Agent clock: when the agent started serving.'),
});
export type NodeRegistered = z.output<typeof NodeRegistered>;

export const NodeHeartbeat = z.object({
  nodeId: NodeId,
  freeGpuIndices: z.array(GpuIndex).describe('GPUs not held by any attempt.'),
  runningAttempts: z
    .array(z.object({ jobId: JobId, attemptId: AttemptId }))
    .describe('Attempts the agent holds GPUs for.'),
  cachedBlobs: z.array(Sha256).optional().describe('Blobs in the node\'s local cache, so placement can prefer nodes that hold a job\'s data.'),
  cachedData: z
    .array(z.object({ team: TeamId, sha256: Sha256 }))
    .max(100_000)
    .optional()
    .describe('Blobs in the node\'s input cache by team (the cache is per team): placement prefers a node holding a job\'s inputs for that job\'s team only.'),
  sequence: z.int().min(0).describe('Increases by one per heartbeat of this agent run, so gaps are visible.'),
  sentAt: Timestamp.describe('Agent clock: when the heartbeat was sent.'),
});
export type NodeHeartbeat = z.output<typeof NodeHeartbeat>;

export const NODE_LOSS_REASONS = ['heartbeat_timeout', 'agent_restarted', 'deregistered'] as const;
export const NodeLost = z.object({
  nodeId: NodeId,
  reason: z
    .enum(NODE_LOSS_REASONS)
    .describe('`heartbeat_timeout`: no heartbeat in time; `agent_restarted`: the agent came back without its runs; `deregistered`: taken out of service.'),
  lastSeenAt: Timestamp.describe('Time of the last heartbeat (agent clock).'),
  detectedAt: Timestamp.describe('When placement declared the node lost (placement clock).'),
  affectedAttempts: z
    .array(z.object({ jobId: JobId, attemptId: AttemptId }))
    .describe('Attempts that were running there; each ends `node_lost` and is not billed by default.'),
});
export type NodeLost = z.output<typeof NodeLost>;

/** Who did an operator action on a node, for the record: set by the operator's CLI or by intake from the operator's API key. */
const OperatorName = z.string().min(1).max(200).describe('The operator who did it: `operator <user>` (`gpunet nodes …` with the operator identity on NATS) or `operator key <team>/<keyId>` (through intake\'s HTTP API with a key of role operator).');
const AdminReason = z.string().min(1).max(500).describe('Why, in the operator\'s words (shown by `gpunet nodes list`).');
const RunningAttempts = z
  .array(z.object({ jobId: JobId, attemptId: AttemptId }))
  .describe('Attempts holding GPUs on the node when it was recorded: they keep running.');

export const NodeCordoned = z.object({
  nodeId: NodeId,
  by: OperatorName,
  reason: AdminReason,
  at: Timestamp.describe('Placement clock: when it was recorded; from then on nothing new is placed on the node.'),
  runningAttempts: RunningAttempts,
});
export type NodeCordoned = z.output<typeof NodeCordoned>;

export const NodeDrainRequested = z.object({
  nodeId: NodeId,
  by: OperatorName,
  reason: AdminReason,
  at: Timestamp.describe('Placement clock: when it was recorded; from then on nothing new is placed on the node.'),
  runningAttempts: RunningAttempts.describe('Attempts holding GPUs on the node when the drain was asked: the node is drained once every one has released its GPUs.'),
});
export type NodeDrainRequested = z.output<typeof NodeDrainRequested>;

export const NodeDrained = z.object({
  nodeId: NodeId,
  requestedAt: Timestamp.describe('The `at` of the NodeDrainRequested this completes.'),
  at: Timestamp.describe('Placement clock: when placement saw the node hold nothing any more (its last attempt released its GPUs, or the node was lost).'),
  afterLoss: z.boolean().describe('True when the node was lost while draining: its attempts ended `node_lost` (requeued, not billed) rather than on their own.'),
});
export type NodeDrained = z.output<typeof NodeDrained>;

export const NodeUncordoned = z.object({
  nodeId: NodeId,
  by: OperatorName,
  reason: AdminReason.optional(),
  at: Timestamp.describe('Placement clock: from then on the node takes new work again (while it is alive).'),
  previous: z.enum(['cordoned', 'draining', 'drained']).describe('What the operator took back.'),
});
export type NodeUncordoned = z.output<typeof NodeUncordoned>;

export const nodeEvents = [
  defineEvent({
    name: 'NodeRegistered',
    version: 1,
    producers: ['execution'],
    description: 'An agent offers its GPUs (or declared slots) to the network.',
    schema: NodeRegistered,
  }),
  defineEvent({
    name: 'NodeHeartbeat',
    version: 1,
    producers: ['execution'],
    description: 'An agent is alive; carries its free GPUs, running attempts and cached blobs. Consumers may keep only the latest.',
    schema: NodeHeartbeat,
  }),
  defineEvent({
    name: 'NodeLost',
    version: 1,
    producers: ['placement'],
    description: 'A node stopped answering; its running attempts are lost (a platform fault, not billed by default).',
    schema: NodeLost,
  }),
  defineEvent({
    name: 'NodeCordoned',
    version: 1,
    producers: ['placement'],
    description: 'The operator cordoned a node: nothing new is placed on it; what runs there keeps running.',
    schema: NodeCordoned,
  }),
  defineEvent({
    name: 'NodeDrainRequested',
    version: 1,
    producers: ['placement'],
    description: 'The operator asked to drain a node: nothing new is placed on it, what runs there finishes, then placement records NodeDrained.',
    schema: NodeDrainRequested,
  }),
  defineEvent({
    name: 'NodeDrained',
    version: 1,
    producers: ['placement'],
    description: 'A draining node holds no attempt any more: it may be taken down without losing work.',
    schema: NodeDrained,
  }),
  defineEvent({
    name: 'NodeUncordoned',
    version: 1,
    producers: ['placement'],
    description: 'The operator took back a cordon or drain: the node takes new work again.',
    schema: NodeUncordoned,
  }),
] as const;
