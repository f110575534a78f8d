/**
 * The node's GPUs and who holds them: what the agent registers, what its heartbeats say, and
 * the defensive check that no GPU is ever given to two attempts here. Pure.
 */
import type { ContainerRuntime, NodeGpu, NodeHeartbeat, NodeRegistered } from '#contracts';

/** A GPU found by `nvidia-smi` (see the run engine's `detectGpus`). */
export interface FoundGpu {
  readonly index: number;
  readonly uuid?: string;
  readonly name: string;
  readonly memoryMiB: number | null;
}

/** The GPUs the agent offers, and whether they are declared slots rather than real devices. */
export interface NodeGpus {
  readonly gpus: readonly NodeGpu[];
  readonly simulated: boolean;
}

/**
 * The GPUs to offer: the ones `nvidia-smi` found when there are any (the declared count and model
 * are then ignored: the hardware is the truth), else `declaredCount` slots of `declaredModel`,
 * indices 0..n-1.
 */
export function nodeGpus(found: readonly FoundGpu[], declaredCount: number, declaredModel: string): NodeGpus {
  if (found.length > 0) {
    return {
      simulated: false,
      gpus: [...found]
        .sort((a, b) => a.index - b.index)
        .map((g) => ({ index: g.index, ...(g.uuid !== undefined && { uuid: g.uuid }), model: g.name, ...(g.memoryMiB !== null && { memoryMiB: g.memoryMiB }) })),
    };
  }
  return { simulated: true, gpus: Array.from({ length: declaredCount }, (_, index) => ({ index, model: declaredModel })) };
}

/** Which attempt holds which GPU index on this node. */
export type GpuHolders = ReadonlyMap<number, { readonly jobId: string; readonly attemptId: string }>;

/** Why a placement cannot be honoured on this node; empty when it can. */
export function placementConflicts(
  node: NodeGpus,
  holders: GpuHolders,
  placement: { readonly attemptId: string; readonly gpuIndices: readonly number[]; readonly gpuModel: string },
): string[] {
  const problems: string[] = [];
  const byIndex = new Map(node.gpus.map((g) => [g.index, g]));
  for (const index of placement.gpuIndices) {
    const gpu = byIndex.get(index);
    if (gpu === undefined) {
      problems.push(`GPU ${index} does not exist on this node (it has ${node.gpus.map((g) => g.index).join(', ')})`);
      continue;
    }
    if (gpu.model !== placement.gpuModel) problems.push(`GPU ${index} is a ${gpu.model}, not a ${placement.gpuModel}`);
    const holder = holders.get(index);
    if (holder !== undefined && holder.attemptId !== placement.attemptId) {
      problems.push(`GPU ${index} is held by attempt ${holder.attemptId} of job ${holder.jobId}`);
    }
  }
  return problems;
}

/** The `NodeRegistered` data for this agent run. */
export function registration(args: {
  nodeId: string;
  node: NodeGpus;
  hostname?: string;
  agentVersion?: string;
  networkIsolation: boolean;
  /** Container runtimes whose daemon answers; none: scripts only. */
  containerRuntimes?: readonly ContainerRuntime[];
  heartbeatIntervalMs: number;
  at: string;
}): NodeRegistered {
  return {
    nodeId: args.nodeId,
    ...(args.hostname !== undefined && { hostname: args.hostname }),
    gpus: args.node.gpus.map((g) => ({ ...g })),
    simulated: args.node.simulated,
    networkIsolation: args.networkIsolation,
    ...(args.agentVersion !== undefined && { agentVersion: args.agentVersion }),
    ...(args.containerRuntimes !== undefined && { containerRuntimes: [...args.containerRuntimes] }),
    heartbeatIntervalMs: args.heartbeatIntervalMs,
    registeredAt: args.at,
  };
}

/**
 * One heartbeat: free GPUs are those no attempt holds; running attempts are listed once each,
 * in a stable order so consecutive heartbeats compare easily.
 */
export function heartbeat(args: { nodeId: string; node: NodeGpus; holders: GpuHolders; sequence: number; at: string; cachedBlobs?: readonly string[] }): NodeHeartbeat {
  const attempts = new Map<string, { jobId: string; attemptId: string }>();
  for (const h of args.holders.values()) attempts.set(h.attemptId, { jobId: h.jobId, attemptId: h.attemptId });
  return {
    nodeId: args.nodeId,
    freeGpuIndices: args.node.gpus.map((g) => g.index).filter((i) => !args.holders.has(i)),
    runningAttempts: [...attempts.values()].sort((a, b) => (a.attemptId < b.attemptId ? -1 : a.attemptId > b.attemptId ? 1 : 0)),
    ...(args.cachedBlobs !== undefined && { cachedBlobs: [...args.cachedBlobs] }),
    sequence: args.sequence,
    sentAt: args.at,
  };
}
