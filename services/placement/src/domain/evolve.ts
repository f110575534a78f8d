/**
 * evolve: applies one recorded event to placement's state. Every case is idempotent, because
 * placement applies its own decisions as soon as they are appended and then sees them again on
 * the bus, and because a redelivered message may be handled twice.
 *
 * Facts are never refused: an event that contradicts the state (a GPU placed twice, a release
 * of an unknown attempt) is recorded as well as it can be, never thrown away or thrown at.
 */
import { gangGpus, gangOutcome, gangParts, retriesAfter, type EventData, type NodeHeartbeat } from '#contracts';
import { RECENT_SUBMITS, currentAttempt, decayed, type AttemptRecord, type JobRecord, type NodeRecord, type PlacementState } from './state.js';
import { cacheKey } from './locality.js';
import { evolveBudgets } from './budget.js';
import { isTellingOutcome, predictRun, recordRun, workKeyOf } from './predict.js';
import { addHeld } from './quotas.js';
import { keepQuoteSample, quoteSampleOf } from './quotes.js';

/** The event types placement folds (and consumes from the bus). */
export const PLACEMENT_EVENT_TYPES = [
  'JobSubmitted',
  'InputsStaged',
  'StagingFailed',
  'JobCancelRequested',
  'JobRejected',
  'JobPlaced',
  'JobRequeued',
  'JobWithdrawn',
  'JobQuoted',
  'NodeRegistered',
  'ComputeHeld',
  'JobFinished',
  'ComputeReleased',
  'NodeLost',
  'NodeCordoned',
  'NodeDrainRequested',
  'NodeDrained',
  'NodeUncordoned',
  'QuotaSet',
  'BudgetSet',
  'BudgetCleared',
  'BudgetReserved',
  'BudgetReleased',
] as const;
export type PlacementEventType = (typeof PLACEMENT_EVENT_TYPES)[number];

/** A recorded event placement folds: type, data, and its global store position (the queue order). */
export type PlacementEvent = {
  [T in PlacementEventType]: { type: T; data: EventData<T>; position: bigint };
}[PlacementEventType];

/** Is this an event type placement folds? */
export function isPlacementEventType(type: string): type is PlacementEventType {
  return (PLACEMENT_EVENT_TYPES as readonly string[]).includes(type);
}

/** Applies `event` to `state` in place and returns it. */
export function evolve(state: PlacementState, event: PlacementEvent): PlacementState {
  if (event.position > state.position) state.position = event.position;
  switch (event.type) {
    case 'BudgetSet':
    case 'BudgetCleared':
    case 'BudgetReserved':
    case 'BudgetReleased':
      evolveBudgets(state, event);
      return state;
    case 'JobSubmitted': {
      const d = event.data;
      if (state.jobs.has(d.jobId)) return state;
      const request = {
        gpus: d.spec.request.gpus,
        timeLimitMs: d.spec.request.timeLimitMs,
        ...(d.spec.request.gpuModel !== undefined ? { gpuModel: d.spec.request.gpuModel } : {}),
      };
      const workKey = workKeyOf(d.spec);
      const job: JobRecord = {
        jobId: d.jobId,
        team: d.team,
        submitPosition: event.position,
        submittedAt: d.submittedAt,
        submittedMs: Date.parse(d.submittedAt),
        submittedMsOf: d.submittedAt,
        request,
        workKey,
        predictedRunMs: predictRun(state, d.team, workKey, request).runMs,
        phase: 'waiting_inputs',
        staged: false,
        cancelRequested: false,
        attempts: [],
        ...(d.deadlineAt !== undefined ? { deadlineAt: Date.parse(d.deadlineAt) } : {}),
        ...(d.quote !== undefined ? { quote: { expectedStart: Date.parse(d.quote.expectedStart), expectedEnd: Date.parse(d.quote.expectedEnd), quotedAt: Date.parse(d.quote.quotedAt) } } : {}),
        ...(d.spec.retry !== undefined ? { retry: d.spec.retry } : {}),
        ...(d.spec.data.inputs.length > 0 ? { inputs: d.spec.data.inputs.map((i) => ({ name: i.name, sha256: i.sha256, size: i.size })) } : {}),
        ...(d.spec.work.kind === 'container' ? { needsContainer: true } : {}),
      };
      state.jobs.set(job.jobId, job);
      state.recentSubmits.push({ runMs: job.predictedRunMs ?? request.timeLimitMs, atMs: Date.parse(d.submittedAt) });
      if (state.recentSubmits.length > RECENT_SUBMITS) state.recentSubmits.shift();
      enqueue(state, job);
      return state;
    }
    case 'InputsStaged': {
      const job = state.jobs.get(event.data.jobId);
      if (!job) return state;
      job.staged = true;
      if (job.phase === 'waiting_inputs') job.phase = 'queued';
      return state;
    }
    case 'StagingFailed':
      return endIfQueued(state, event.data.jobId, 'staging_failed');
    case 'JobCancelRequested': {
      const job = state.jobs.get(event.data.jobId);
      if (!job) return state;
      job.cancelRequested = true;
      // A lost attempt of a job the team wants gone is not run again: the next pass withdraws it
      // (JobWithdrawn), so its end is a recorded fact rather than a silence.
      return state;
    }
    case 'JobRejected':
      return endIfQueued(state, event.data.jobId, 'rejected');
    case 'JobWithdrawn':
      return endIfQueued(state, event.data.jobId, 'withdrawn');
    case 'JobQuoted': {
      // The first quote stands (an accepted deadline's estimate, from JobSubmitted, comes before any).
      const job = state.jobs.get(event.data.jobId);
      if (job && !job.quote && job.attempts.length === 0) job.quote = { expectedStart: Date.parse(event.data.expectedStart), quotedAt: Date.parse(event.data.quotedAt) };
      return state;
    }
    case 'JobPlaced': {
      const d = event.data;
      const job = state.jobs.get(d.jobId);
      if (job?.attempts.some((a) => a.attemptId === d.attemptId)) return state;
      if (!job && state.holders.has(d.attemptId)) return state;
      if (!state.holders.has(d.attemptId)) {
        state.live.set(d.attemptId, {
          attemptId: d.attemptId,
          jobId: d.jobId,
          gpus: gangGpus(d),
          placedAt: Date.parse(d.placedAt),
          finished: false,
          gpuModel: d.gpuModel,
          ...(d.borrowed ? { borrowed: true } : {}),
          ...(job ? { team: job.team, timeLimitMs: job.request.timeLimitMs, predictedRunMs: d.predictedRunMs ?? job.predictedRunMs } : {}),
        });
      }
      const parts = gangParts(d).map((p) => ({ nodeId: p.nodeId, gpuIndices: [...p.gpuIndices] }));
      for (const p of parts) hold(state, p.nodeId, d.attemptId, p.gpuIndices);
      if (job) {
        const quote = d.quote
          ? { expectedStart: Date.parse(d.quote.expectedStart), ...(d.quote.expectedEnd !== undefined ? { expectedEnd: Date.parse(d.quote.expectedEnd) } : {}), quotedAt: Date.parse(d.quote.quotedAt) }
          : undefined;
        job.attempts.push({ attemptId: d.attemptId, attempt: d.attempt, nodeId: d.nodeId, gpuIndices: [...d.gpuIndices], parts, ends: [], gpuModel: d.gpuModel, placedAt: d.placedAt, ...(quote ? { quote } : {}), ...(d.borrowed ? { borrowed: true } : {}) });
        if (quote && !job.quote) job.quote = quote;
        if (job.phase !== 'ended') {
          job.phase = 'placed';
          dequeue(state, job);
        }
      }
      return state;
    }
    case 'JobRequeued': {
      const job = state.jobs.get(event.data.jobId);
      if (!job || job.phase !== 'lost' || currentAttempt(job)?.attemptId !== event.data.previousAttemptId) return state;
      job.phase = 'queued';
      return state;
    }
    case 'NodeRegistered': {
      const d = event.data;
      const node = nodeRecord(state, d.nodeId);
      node.registered = true;
      node.gpus = d.gpus.map((g) => ({ index: g.index, model: g.model })).sort((a, b) => a.index - b.index);
      node.heartbeatIntervalMs = d.heartbeatIntervalMs;
      node.registeredAt = d.registeredAt;
      node.containerRuntimes = d.containerRuntimes ?? [];
      if (d.hostname !== undefined) node.hostname = d.hostname;
      state.registeredCache = undefined;
      return state;
    }
    // The operator's cordon and drain (`node-admin.ts`): only who may be placed on changes; the
    // node's holds and liveness do not. A redelivered event sets what it set before.
    case 'NodeCordoned': {
      const d = event.data;
      const node = nodeRecord(state, d.nodeId);
      if (!newerAdmin(node, event.position)) return state;
      node.admin = { kind: 'cordoned', by: d.by, reason: d.reason, at: d.at };
      return state;
    }
    case 'NodeDrainRequested': {
      const d = event.data;
      const node = nodeRecord(state, d.nodeId);
      if (!newerAdmin(node, event.position)) return state;
      node.admin = { kind: 'draining', by: d.by, reason: d.reason, at: d.at };
      return state;
    }
    case 'NodeDrained': {
      const d = event.data;
      const admin = state.nodes.get(d.nodeId)?.admin;
      if (admin?.kind === 'draining' && admin.at === d.requestedAt && admin.drainedAt === undefined) {
        admin.drainedAt = d.at;
        if (d.afterLoss) admin.afterLoss = true;
      }
      return state;
    }
    case 'NodeUncordoned': {
      const d = event.data;
      const node = nodeRecord(state, d.nodeId);
      if (newerAdmin(node, event.position)) delete node.admin;
      return state;
    }
    case 'ComputeHeld': {
      const attempt = findAttempt(state, event.data.jobId, event.data.attemptId);
      if (attempt && attempt.heldAt === undefined) attempt.heldAt = event.data.heldAt;
      const live = state.live.get(event.data.attemptId);
      if (live && live.heldAt === undefined) live.heldAt = Date.parse(event.data.heldAt);
      return state;
    }
    case 'JobFinished': {
      const d = event.data;
      const job = state.jobs.get(d.jobId);
      const attempt = findAttempt(state, d.jobId, d.attemptId);
      if (!job || !attempt || attempt.outcome !== undefined || attempt.ends.some((e) => e.nodeId === d.nodeId)) return state;
      attempt.ends.push({ nodeId: d.nodeId, outcome: d.outcome, ...(d.peerEnded !== undefined ? { peerEnded: d.peerEnded } : {}) });
      // A gang's attempt ends when its last part does; its outcome is the parts' verdict.
      const verdict = attempt.ends.length < attempt.parts.length ? undefined : gangOutcome(
        attempt.parts.map((p, rank) => ({ ...p, rank })),
        attempt.ends,
      );
      (attempt.partExitCodes ??= {})[d.nodeId] = d.exitCode;
      if (verdict) attempt.exitCode = attempt.partExitCodes[verdict.decidedBy] ?? null;
      if (verdict) finishAttempt(state, job, attempt, verdict.outcome, d.finishedAt);
      return state;
    }
    case 'NodeLost': {
      // Each running attempt there ends `node_lost` (a late JobFinished changes nothing); the node
      // is out of service with no holds, and comes back with fresh GPUs if it registers again.
      const d = event.data;
      const node = nodeRecord(state, d.nodeId);
      if (node.lostAt === d.detectedAt) return state;
      for (const a of d.affectedAttempts) {
        const job = state.jobs.get(a.jobId);
        const attempt = findAttempt(state, a.jobId, a.attemptId);
        if (job && attempt && attempt.outcome === undefined) finishAttempt(state, job, attempt, 'node_lost', d.detectedAt);
      }
      for (const attemptId of [...node.holds.keys()]) release(state, attemptId, d.nodeId);
      node.registered = false;
      node.lostAt = d.detectedAt;
      state.registeredCache = undefined;
      return state;
    }
    case 'QuotaSet': {
      const d = event.data;
      let models = state.quotas.get(d.team);
      if (!models) state.quotas.set(d.team, (models = new Map()));
      // The latest setting wins; a redelivered older one (earlier setAt) changes nothing.
      const had = models.get(d.gpuModel);
      if (!had || had.setAt <= d.setAt) models.set(d.gpuModel, { gpus: d.gpus, gpuHours: d.gpuHours, borrow: d.borrow, setAt: d.setAt });
      return state;
    }
    case 'ComputeReleased': {
      const d = event.data;
      release(state, d.attemptId, d.nodeId);
      const attempt = findAttempt(state, d.jobId, d.attemptId);
      if (attempt && !state.holders.has(d.attemptId)) attempt.released = true;
      return state;
    }
  }
}

/**
 * Forgets `jobId` if it has ended: its record leaves `jobs`, what its quotes came to is kept for
 * `quoteAccuracy`, and the count of forgotten jobs goes up (decision 0043). True when forgotten.
 *
 * Nothing placement decides reads an ended job: it is out of the queue, its attempts have their
 * outcomes, and GPUs it still holds are in `holders` and `live`, which a late ComputeReleased
 * frees without the job. What must hold for the caller: no event of the job that `evolve` would
 * apply differently without the record is still to come. A JobSubmitted or JobPlaced delivered
 * again would make a job or a hold of nothing; the fold forgets a job only once the echoes of
 * placement's own decisions about it are back, and the consumer's inbox drops what was handled.
 */
export function forgetEnded(state: PlacementState, jobId: string): boolean {
  const job = state.jobs.get(jobId);
  if (job?.phase !== 'ended') return false;
  const sample = quoteSampleOf(job);
  if (sample) keepQuoteSample(state, sample);
  state.jobs.delete(jobId);
  state.forgottenJobs++;
  return true;
}

/** Records a heartbeat's arrival (placement clock, epoch ms). Liveness only; it never changes holds. */
export function observeHeartbeat(state: PlacementState, heartbeat: NodeHeartbeat, receivedAt: number): PlacementState {
  const node = nodeRecord(state, heartbeat.nodeId);
  node.lastHeartbeatAt = receivedAt;
  node.lastHeartbeatSequence = heartbeat.sequence;
  node.lastHeartbeatSentAt = heartbeat.sentAt;
  if (heartbeat.cachedData) node.cachedData = new Set(heartbeat.cachedData.map((d) => cacheKey(d.team, d.sha256)));
  return state;
}

/** True (and remembered) when an admin event at `position` comes after the last one applied to the node. */
function newerAdmin(node: NodeRecord, position: bigint): boolean {
  if (node.adminPosition !== undefined && position <= node.adminPosition) return false;
  node.adminPosition = position;
  return true;
}

function nodeRecord(state: PlacementState, nodeId: string): NodeRecord {
  let node = state.nodes.get(nodeId);
  if (!node) {
    node = { nodeId, registered: false, order: state.nodes.size, gpus: [], holds: new Map(), busy: new Map() };
    state.nodes.set(nodeId, node);
  }
  return node;
}

function hold(state: PlacementState, nodeId: string, attemptId: string, indices: readonly number[]): void {
  const node = nodeRecord(state, nodeId);
  if (node.holds.has(attemptId)) return;
  node.holds.set(attemptId, [...indices]);
  for (const i of indices) node.busy.set(i, (node.busy.get(i) ?? 0) + 1);
  const holders = state.holders.get(attemptId);
  if (holders) holders.push(nodeId);
  else state.holders.set(attemptId, [nodeId]);
}

/**
 * Adds an ended attempt's GPU-ms (held until finished, agent clock) to its team's usage, decayed to
 * the later of the two times so the fold does not depend on arrival order. An attempt that never
 * held used nothing; a lost attempt counts too (the team did occupy the GPUs).
 */
function foldUsage(state: PlacementState, team: string, attempt: AttemptRecord): void {
  if (attempt.heldAt === undefined || attempt.finishedAt === undefined) return;
  const end = Date.parse(attempt.finishedAt);
  const gpus = attempt.parts.reduce((n, p) => n + p.gpuIndices.length, 0);
  const gpuMs = Math.max(0, end - Date.parse(attempt.heldAt)) * gpus;
  if (!Number.isFinite(gpuMs) || gpuMs === 0) return;
  const u = state.usage.get(team);
  if (!u) state.usage.set(team, { gpuMs, asOf: end });
  else if (end >= u.asOf) {
    u.gpuMs = decayed(u.gpuMs, u.asOf, end, state.usageHalfLifeMs) + gpuMs;
    u.asOf = end;
  } else u.gpuMs += decayed(gpuMs, end, u.asOf, state.usageHalfLifeMs);
}

/**
 * Adds an ended attempt's held GPU-ms (ComputeHeld until its end, integer ms) to its team's
 * monthly count for the model, which GPU-hour quotas read (`quotas.ts`).
 */
function foldHeld(state: PlacementState, team: string, attempt: AttemptRecord): void {
  if (attempt.heldAt === undefined || attempt.finishedAt === undefined) return;
  const from = Date.parse(attempt.heldAt);
  const to = Date.parse(attempt.finishedAt);
  if (!Number.isFinite(from) || !Number.isFinite(to)) return;
  addHeld(state, team, attempt.gpuModel, from, to, attempt.parts.reduce((n, p) => n + p.gpuIndices.length, 0));
}

/** Frees the attempt's GPUs on `nodeId` (one part of a gang); the attempt stops being live once no part holds GPUs. */
function release(state: PlacementState, attemptId: string, nodeId: string): void {
  const holders = state.holders.get(attemptId);
  if (holders === undefined) {
    state.live.delete(attemptId);
    return;
  }
  if (!holders.includes(nodeId)) return;
  const rest = holders.filter((n) => n !== nodeId);
  if (rest.length > 0) state.holders.set(attemptId, rest);
  else {
    state.holders.delete(attemptId);
    state.live.delete(attemptId);
  }
  const node = state.nodes.get(nodeId)!;
  const indices = node.holds.get(attemptId) ?? [];
  node.holds.delete(attemptId);
  for (const i of indices) {
    const n = (node.busy.get(i) ?? 1) - 1;
    if (n > 0) node.busy.set(i, n);
    else node.busy.delete(i);
  }
}

/** An attempt's end: its usage counts, and the job ends or, lost, goes back to the queue. */
function finishAttempt(state: PlacementState, job: JobRecord, attempt: AttemptRecord, outcome: string, finishedAt: string): void {
  attempt.outcome = outcome;
  attempt.finishedAt = finishedAt;
  foldUsage(state, job.team, attempt);
  foldHeld(state, job.team, attempt);
  // A run that ended on its own says how long this work takes: the next similar job's prediction.
  if (attempt.heldAt !== undefined && job.workKey !== undefined && isTellingOutcome(outcome)) recordRun(state, job.team, job.workKey, job.request, Date.parse(finishedAt) - Date.parse(attempt.heldAt));
  const live = state.live.get(attempt.attemptId);
  if (live) live.finished = true;
  if (job.phase !== 'placed' || currentAttempt(job) !== attempt) return;
  // An attempt lost with its node, or failed with an exit code its retry policy names (attempts
  // left), is not the job's end whatever else is known: the next pass records either JobRequeued
  // or, for a job the team cancelled, JobWithdrawn. Deciding it there, from the state as it then
  // is, makes every such end a recorded fact — the ledger's JobEnded waits for it.
  if (outcome === 'node_lost') {
    job.phase = 'lost';
    job.requeueReason = 'node_lost';
    enqueue(state, job);
  } else if (retriesAfter(job.retry, job.attempts.filter((a) => a.outcome !== undefined).map((a) => ({ outcome: a.outcome!, exitCode: a.exitCode })))) {
    job.phase = 'lost';
    job.requeueReason = 'retry';
    enqueue(state, job);
  } else {
    end(state, job, 'finished');
  }
}

function findAttempt(state: PlacementState, jobId: string, attemptId: string) {
  return state.jobs.get(jobId)?.attempts.find((a) => a.attemptId === attemptId);
}

/** Ends a job that is still in the queue; a placed job's end comes from its attempt. */
function endIfQueued(state: PlacementState, jobId: string, why: 'staging_failed' | 'rejected' | 'withdrawn'): PlacementState {
  const job = state.jobs.get(jobId);
  if (job && job.phase !== 'placed' && job.phase !== 'ended') end(state, job, why);
  return state;
}

function end(state: PlacementState, job: JobRecord, why: NonNullable<JobRecord['end']>): void {
  dequeue(state, job);
  job.phase = 'ended';
  job.end = why;
}

/** Inserts in submit order (binary search: submissions arrive almost sorted, requeues do not). */
function enqueue(state: PlacementState, job: JobRecord): void {
  const i = queueIndex(state.queue, job.submitPosition);
  if (state.queue[i] !== job) state.queue.splice(i, 0, job);
}

function dequeue(state: PlacementState, job: JobRecord): void {
  const i = queueIndex(state.queue, job.submitPosition);
  if (state.queue[i] === job) state.queue.splice(i, 1);
}

/** First index whose submitPosition is ≥ `position` (submit positions are unique per job). */
function queueIndex(q: readonly JobRecord[], position: bigint): number {
  let lo = 0;
  let hi = q.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (q[mid]!.submitPosition < position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
