/**
 * Estimates held to: what `gpunet estimate` answered for a job not yet submitted is recorded
 * (EstimateGiven, in the estimate's own stream), and a submit that names it is held to it — its
 * JobSubmitted carries the estimate as its `quote`, so placement and `Capacity` measure its error
 * when the job starts and ends. Pure: time and ids come in as arguments.
 *
 * A submit may name an estimate given to its own team, for the same request (GPUs, GPU model,
 * time limit: what the plan's answer depends on), not used yet by another job. The use is recorded
 * (EstimateUsed) at the revision the check read, so two submits racing for one estimate cannot
 * both be held to it. Unknown and another team's ids get the same answer: an id says nothing of
 * another team's estimates.
 */
import type { EstimateGiven, EstimateJobReply, EstimateUsed, FieldIssue, JobSubmitted } from '#contracts';
import { ValidationError } from '#errors';

/** Stream intake writes an estimate's events to. */
export function estimateStreamId(estimateId: string): string {
  return `intake-estimate-${estimateId}`;
}

/** An estimate id from a UUID: `est_` and the 32 hex digits (v7: ids sort by time). */
export function estimateIdFromUuid(uuid: string): string {
  return `est_${uuid.replaceAll('-', '').toLowerCase()}`;
}

/** The request part an estimate is given for and a submit must repeat. */
export interface EstimatedRequest {
  gpus: number;
  gpuModel?: string | undefined;
  timeLimitMs: number;
}

export interface GivenInput {
  estimateId: string;
  team: string;
  /** Id of the API key that asked (never the key). */
  requestedBy?: string | undefined;
  request: EstimatedRequest;
  reply: EstimateJobReply;
  quotedAt: Date;
}

/** The EstimateGiven to record for an answer, or undefined when it has no expected start to hold a job to. */
export function estimateGiven(input: GivenInput): EstimateGiven | undefined {
  const { reply, request } = input;
  if (!reply.runnable || reply.expectedStart === undefined || reply.expectedEnd === undefined || reply.gpuModel === undefined) return undefined;
  const event: EstimateGiven = {
    estimateId: input.estimateId,
    team: input.team,
    request: { gpus: request.gpus, timeLimitMs: request.timeLimitMs, ...(request.gpuModel !== undefined ? { gpuModel: request.gpuModel } : {}) },
    gpuModel: reply.gpuModel,
    expectedStart: reply.expectedStart,
    expectedEnd: reply.expectedEnd,
    quotedAt: input.quotedAt.toISOString(),
  };
  if (input.requestedBy !== undefined) event.requestedBy = input.requestedBy;
  if (reply.deadlineAt !== undefined) event.deadlineAt = reply.deadlineAt;
  if (reply.charge !== undefined) event.charge = { ...reply.charge };
  return event;
}

/** An estimate's stream as read: its type and data per event, in order. */
export type EstimateStreamEvent = { type: string; data: unknown };

export interface UseInput {
  estimateId: string;
  /** The events of `intake-estimate-<estimateId>`, oldest first (empty: no such estimate). */
  events: readonly EstimateStreamEvent[];
  team: string;
  request: EstimatedRequest;
  /** The job the submit would create (or finds again, retried with its idempotency key). */
  jobId: string;
  now: Date;
}

/** What naming an estimate at submit means. */
export type EstimateUse =
  /** Hold the job to it; `used` is the EstimateUsed to append (absent: this job already used it, a retry). */
  { quote: NonNullable<JobSubmitted['quote']>; used?: EstimateUsed };

const FIELD = 'estimateId';

function refuse(issue: Omit<FieldIssue, 'path'>): ValidationError {
  return new ValidationError(`invalid submission: ${FIELD} ${issue.message}`, [{ path: FIELD, ...issue }]);
}

function describe(r: EstimatedRequest): string {
  return `${r.gpus} GPU${r.gpus === 1 ? '' : 's'} of ${r.gpuModel ?? 'any model'}, time limit ${r.timeLimitMs} ms`;
}

/**
 * Checks that a submit of `team` for `request` may be held to the estimate, and what to record:
 * a ValidationError on `estimateId` (with its fix) when the estimate is unknown, another team's,
 * for another request, or used by another job.
 */
export function decideEstimateUse(input: UseInput): EstimateUse {
  const given = input.events.find((e) => e.type === 'EstimateGiven')?.data as EstimateGiven | undefined;
  if (given === undefined || given.team !== input.team) {
    throw refuse({
      message: `\`${input.estimateId}\` is not an estimate given to your team`,
      fix: 'pass the id `gpunet estimate job.yaml` printed for this spec (estimate again if it is lost), or submit without an estimate',
    });
  }
  const r = input.request;
  if (given.request.gpus !== r.gpus || given.request.gpuModel !== r.gpuModel || given.request.timeLimitMs !== r.timeLimitMs) {
    throw refuse({
      message: `was given for another request (${describe(given.request)}), not this spec's (${describe(r)})`,
      fix: 'estimate again with this spec\'s request (`gpunet estimate job.yaml`) and submit on that id, or submit the request that was estimated',
    });
  }
  const used = input.events.find((e) => e.type === 'EstimateUsed')?.data as EstimateUsed | undefined;
  if (used !== undefined && used.usedBy !== input.jobId) {
    throw refuse({
      message: `was already used by job ${used.usedBy}: an estimate holds one job`,
      fix: 'estimate again for this job (`gpunet estimate job.yaml`) and submit on the new id',
    });
  }
  const quote = { expectedStart: given.expectedStart, expectedEnd: given.expectedEnd, quotedAt: given.quotedAt, estimateId: given.estimateId };
  if (used !== undefined) return { quote };
  return { quote, used: { estimateId: given.estimateId, team: input.team, usedBy: input.jobId, usedAt: input.now.toISOString() } };
}
