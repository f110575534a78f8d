/**
 * What the queue looks like to people (`gpunet status`): each waiting job with its place in line
 * and why it waits, and each node with its free GPUs. Read after a pass, so a staged job still in
 * the queue is one that did not fit.
 */
import type { Plan } from './plan.js';
import { freeGpuIndices, registeredNodes, type JobRecord, type PlacementState } from './state.js';
import { budgetAllows } from './budget.js';

/** Why a job waits, as a reason code in the manner of Slurm's. */
export type PendingReason =
  /** Its inputs are not staged yet. */
  | 'Inputs'
  /** No node has enough free GPUs of its model now (with a plan: it holds a reservation, or none can be predicted). */
  | 'Resources'
  /** Higher-priority jobs wait before it and hold every reservation; it starts when a gap fits it. */
  | 'Priority'
  /** Free GPUs would fit it now, but it would run into a higher-priority job's reservation. */
  | 'Reservation'
  /** Its deadline cannot be met by the current plan. */
  | 'DeadlineUnreachable'
  /** Its team is at its GPU quota for the model (concurrent GPUs or GPU-hours this month; `quotas.ts`). */
  | 'QuotaExceeded'
  /** No node is registered. */
  | 'NoNodes'
  /** Its attempt was lost; it is being requeued. */
  | 'Requeue'
  /** A cancel was requested; it is being withdrawn. */
  | 'Cancelling'
  /** Its worst-case charge does not fit its team's budget this month (held under `hold`, or the budget was lowered); it starts when it fits. */
  | 'BudgetExceeded';

export interface PendingJobView {
  job: JobRecord;
  /** 1-based place in line (submit order). */
  position: number;
  reason: PendingReason;
  /** With a plan: its priority rank among placeable jobs, and when it is expected to start (epoch ms), if known. */
  rank?: number;
  expectedStart?: number;
  /** The figures behind the reason (`QuotaExceeded`: the quota and its use). */
  reasonDetail?: string;
}

export interface NodeView {
  nodeId: string;
  gpus: number;
  gpuModels: string[];
  freeGpuIndices: number[];
  /** Attempts holding GPUs there now. */
  holds: { attemptId: string; gpuIndices: readonly number[] }[];
  lastHeartbeatAt?: number;
}

/**
 * The waiting jobs in line, and the registered nodes in first-fit order. Given the pass's
 * {@link Plan} (`plan(state, now)`), placeable jobs carry its reason (`Resources`, `Priority`,
 * `Reservation`), rank and expected start; without one, every placeable job shows `Resources`.
 */
export function queueView(state: PlacementState, plan?: Plan): { pending: PendingJobView[]; nodes: NodeView[] } {
  const nodes = registeredNodes(state);
  const planned = new Map(plan?.jobs.map((p) => [p.job.jobId, p]));
  const pending = state.queue.map((job, i): PendingJobView => {
    const reason = reasonOf(job, nodes.length > 0);
    const base: PendingJobView = { job, position: i + 1, reason: reason === 'Resources' && plan && !budgetAllows(state, job, plan.now) ? 'BudgetExceeded' : reason };
    const p = base.reason === 'Resources' ? planned.get(job.jobId) : undefined;
    if (!p) return base;
    return { ...base, reason: p.reason ?? 'Resources', rank: p.rank, ...(p.expectedStart !== undefined ? { expectedStart: p.expectedStart } : {}), ...(p.reasonDetail !== undefined ? { reasonDetail: p.reasonDetail } : {}) };
  });
  return {
    pending,
    nodes: nodes.map((n) => ({
      nodeId: n.nodeId,
      gpus: n.gpus.length,
      gpuModels: [...new Set(n.gpus.map((g) => g.model))],
      freeGpuIndices: freeGpuIndices(n),
      holds: [...n.holds].map(([attemptId, gpuIndices]) => ({ attemptId, gpuIndices })),
      ...(n.lastHeartbeatAt !== undefined ? { lastHeartbeatAt: n.lastHeartbeatAt } : {}),
    })),
  };
}

function reasonOf(job: JobRecord, anyNode: boolean): PendingReason {
  if (job.cancelRequested) return 'Cancelling';
  if (job.phase === 'lost') return 'Requeue';
  if (job.phase === 'waiting_inputs') return 'Inputs';
  return anyNode ? 'Resources' : 'NoNodes';
}
