/**
 * decide: what placement records after looking at its state once (one pass). Pure: the clock is
 * an argument, the state is only read.
 *
 * In order:
 * 1. withdraw every queued job whose team asked to cancel it (`JobWithdrawn`, outcome `cancelled`) —
 *    a job back in the queue after a lost or retried attempt too —, and every queued job whose
 *    deadline has passed (outcome `deadline`, see `deadlines.ts`);
 * 2. reject every never-placed job that the registered nodes could never hold, even together as
 *    whole nodes of one model (`JobRejected`, `unsatisfiable`); with no node registered yet, jobs wait instead;
 * 3. requeue every job whose attempt ended `node_lost` (`JobRequeued`); it keeps its submit position;
 * 4. place: the policy (backfill with reservations by priority, by default) puts placeable jobs on free GPUs (`JobPlaced`),
 *    never on a cordoned or draining node (`node-admin.ts`).
 * A job gets at most one of 1–3 and, after a requeue, possibly a placement in the same pass.
 */
import type { EventData, FieldIssue } from '#contracts';
import { attemptIdFor } from './attempt-id.js';
import { deadlinePassed, deadlineWithdrawn } from './deadlines.js';
import { NodeSizes, PassCapacity, type Gang } from './capacity.js';
import { backfill, defaultPolicy, type PlacementPolicy } from './policy.js';
import type { PlanOptions } from './plan.js';
import { registeredView, type JobRecord, type NodeRecord, type PlacementState } from './state.js';
import { missingRuntime } from './work-kinds.js';
import { localityReason } from './locality.js';
import { budgetAllows } from './budget.js';
import { isSchedulable } from './node-admin.js';

/** One event placement decided to append, to the job's placement stream. */
export type PlacementDecision =
  | { type: 'JobPlaced'; data: EventData<'JobPlaced'> }
  | { type: 'JobRequeued'; data: EventData<'JobRequeued'> }
  | { type: 'JobWithdrawn'; data: EventData<'JobWithdrawn'> }
  | { type: 'JobRejected'; data: EventData<'JobRejected'> }
  | { type: 'JobQuoted'; data: EventData<'JobQuoted'> };

export interface DecideOptions {
  /** Default: {@link backfill} with `plan` (or default) options. */
  policy?: PlacementPolicy;
  /** Options of the default backfill policy (ignored when `policy` is given). */
  plan?: PlanOptions;
}

/** Node sizes per registered set (it changes only with registrations and losses). */
const nodeSizes = new WeakMap<readonly NodeRecord[], NodeSizes>();

/** The decisions of one pass over `state` at `now`. */
export function decide(state: PlacementState, now: Date, options: DecideOptions = {}): PlacementDecision[] {
  const at = now.toISOString();
  const nodes = registeredView(state);
  const out: PlacementDecision[] = [];
  const candidates: JobRecord[] = [];
  let sizes = nodeSizes.get(nodes);
  if (!sizes) nodeSizes.set(nodes, (sizes = new NodeSizes(nodes)));

  for (const job of state.queue) {
    if (job.cancelRequested) {
      // Queued, or back in the queue after an attempt that would run again: it never runs (again).
      out.push(withdrawn(job, at));
      continue;
    }
    if (deadlinePassed(job, now.getTime())) {
      out.push(deadlineWithdrawn(job, at));
      continue;
    }
    if (job.attempts.length === 0 && nodes.length > 0) {
      const why = unsatisfiable(job, sizes) ?? missingRuntime(job, nodes);
      if (why) {
        out.push({ type: 'JobRejected', data: { jobId: job.jobId, team: job.team, reason: 'unsatisfiable', message: why.message, issues: [why.issue], rejectedAt: at } });
        continue;
      }
    }
    if (job.phase === 'lost') {
      const previous = job.attempts[job.attempts.length - 1]!;
      out.push({ type: 'JobRequeued', data: { jobId: job.jobId, previousAttemptId: previous.attemptId, reason: job.requeueReason ?? 'node_lost', nextAttempt: previous.attempt + 1, requeuedAt: at } });
      candidates.push(job);
      continue;
    }
    // Checked again before placing: the budget may have changed since intake reserved the job.
    if (job.phase === 'queued' && budgetAllows(state, job, now)) candidates.push(job);
  }

  if (candidates.length === 0 || nodes.length === 0) return out;
  const policy = options.policy ?? (options.plan ? backfill(options.plan) : defaultPolicy);
  // Cordoned and draining nodes (node-admin.ts) count for what the network could ever hold (a job
  // is not rejected because a node is cordoned for a while) but offer no GPU to this pass.
  const open = nodes.some((n) => !isSchedulable(n)) ? nodes.filter(isSchedulable) : nodes;
  for (const { job, gangs, borrowed } of policy(candidates, new PassCapacity(open), now, state)) {
    const attempt = (job.attempts[job.attempts.length - 1]?.attempt ?? 0) + 1;
    const [rank0] = gangs as [Gang, ...Gang[]];
    out.push({
      type: 'JobPlaced',
      data: {
        jobId: job.jobId,
        attemptId: attemptIdFor(job.jobId, attempt),
        attempt,
        nodeId: rank0.nodeId,
        gpuIndices: rank0.gpuIndices,
        gpuModel: rank0.gpuModel,
        placedAt: at,
        ...withReason(job.inputs ? localityReason(rank0.nodeId, job.team, job.inputs, state.nodes.get(rank0.nodeId)?.cachedData) : undefined),
        ...(gangs.length > 1 ? { nodes: gangs.map((g) => ({ nodeId: g.nodeId, gpuIndices: g.gpuIndices })) } : {}),
        // Only a prediction from history says more than the time limit.
        ...(job.predictedRunMs !== undefined && job.predictedRunMs < job.request.timeLimitMs ? { predictedRunMs: job.predictedRunMs } : {}),
        ...(job.quote && attempt === 1
          ? {
              quote: {
                expectedStart: new Date(job.quote.expectedStart).toISOString(),
                quotedAt: new Date(job.quote.quotedAt).toISOString(),
                ...(job.quote.expectedEnd !== undefined ? { expectedEnd: new Date(job.quote.expectedEnd).toISOString() } : {}),
              },
            }
          : {}),
        ...withDeadlineNote(job, now.getTime()),
        ...(borrowed ? { borrowed: true as const } : {}),
      },
    });
  }
  return out;
}

const withReason = (reason: string | undefined) => (reason === undefined ? {} : { reason });

/** The facts of a deadline the job may miss from here: it starts now, and its time limit reaches past the deadline. */
function withDeadlineNote(job: JobRecord, now: number): { deadlineNote?: string } {
  if (job.deadlineAt === undefined || now + job.request.timeLimitMs <= job.deadlineAt) return {};
  const iso = (ms: number) => new Date(ms).toISOString();
  const quoted = job.quote ? `; quoted to start at ${iso(job.quote.expectedStart)} (${iso(job.quote.quotedAt)}), it starts ${Math.round((now - job.quote.expectedStart) / 1000)} s later` : '';
  const predicted = job.predictedRunMs !== undefined && now + job.predictedRunMs <= job.deadlineAt ? `; predicted to end at ${iso(now + job.predictedRunMs)}, in time` : '';
  return { deadlineNote: `starts at ${iso(now)}: running to its time limit it would end at ${iso(now + job.request.timeLimitMs)}, after its deadline ${iso(job.deadlineAt)}${quoted}${predicted}` };
}

function withdrawn(job: JobRecord, at: string): PlacementDecision {
  const last = job.attempts[job.attempts.length - 1];
  const message = last === undefined
    ? 'Cancelled while queued; it never held compute.'
    : `Cancelled after attempt ${last.attempt} ended ${last.outcome ?? 'without an outcome'}; it is not run again.`;
  return { type: 'JobWithdrawn', data: { jobId: job.jobId, team: job.team, outcome: 'cancelled', message, withdrawnAt: at } };
}

/** Why no registered node can ever hold the job, or undefined when one can. */
function unsatisfiable(job: JobRecord, sizes: NodeSizes): { message: string; issue: FieldIssue } | undefined {
  const { gpus, gpuModel } = job.request;
  const largest = sizes.largest(gpuModel);
  // Larger than any node: whole nodes of one model together, if there are enough of them.
  if (largest && sizes.total(gpuModel) >= gpus) return undefined;
  if (!largest) {
    const models = sizes.models;
    return {
      message: `no node offers GPUs of model ${gpuModel}; the network has ${models.join(', ')}`,
      issue: { path: 'request.gpuModel', message: `no node offers GPU model ${gpuModel}`, fix: `ask for one of ${models.join(', ')}, or leave gpuModel out` },
    };
  }
  const what = gpuModel === undefined ? `${gpus} GPUs of one model` : `${gpus} GPUs of model ${gpuModel}`;
  const most = sizes.total(gpuModel);
  return {
    message: `the job asks for ${what}, but all nodes together have ${gpuModel === undefined ? 'at most ' : ''}${most} (largest node: ${largest.nodeId}, ${largest.gpus} × ${largest.gpuModel})`,
    issue: { path: 'request.gpus', message: `more GPUs of one model than all nodes together have (${most})`, fix: `ask for at most ${most} GPUs` },
  };
}
