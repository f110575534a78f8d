/**
 * Intake's decisions, pure: what a submit or a cancel request means, given what the job's intake
 * stream already holds. Time and ids come in as arguments.
 */
import {
  IdempotencyKey,
  SubmitJob,
  formatIssues,
  parseJobSpec,
  toJobSpec,
  type FieldIssue,
  type JobCancelRequested,
  type JobSpec,
  type JobState,
  type JobSubmitted,
} from '#contracts';
import { ValidationError } from '#errors';
import { v5 as uuidv5 } from 'uuid';
import { resolveDeadline as resolveDeadlineText } from './deadline.js';
import { isFinalState } from './job-view.js';

/** UUID v5 namespace of the job ids intake derives from idempotency keys. Never change it: it would orphan every key. */
export const INTAKE_ID_NAMESPACE = '3d0a8f8e-6f0b-4c4e-9a57-2b8f1c6e7d41';

/** Stream intake writes a job's events to. */
export function intakeStreamId(jobId: string): string {
  return `intake-job-${jobId}`;
}

/**
 * A job id from a UUID: `job_` and the 32 hex digits (40 characters, within the contracts' id
 * pattern, and no dots, so it can be a NATS subject token). With a v7 UUID job ids sort by time.
 */
export function jobIdFromUuid(uuid: string): string {
  return `job_${uuid.replaceAll('-', '').toLowerCase()}`;
}

/** The job id of an idempotent submit: the same (team, key) always names the same job. */
export function idempotentJobId(team: string, idempotencyKey: string): string {
  // NUL cannot occur in a team id nor in a key (visible ASCII), so the pair is unambiguous.
  return jobIdFromUuid(uuidv5(`${team}\u0000${idempotencyKey}`, INTAKE_ID_NAMESPACE));
}

/** A validated submit request. */
export interface Submission {
  spec: JobSpec;
  idempotencyKey?: string | undefined;
  /** The spec's deadline as an instant, when it has one. */
  deadlineAt?: string | undefined;
  /** The estimate the submit names (`SubmitJob.estimateId`), to hold the job to it. */
  estimateId?: string | undefined;
}

/** Whether a body is the `SubmitJob` envelope rather than a bare spec. */
function isEnvelope(body: Record<string, unknown>): boolean {
  return 'spec' in body && !('work' in body) && !('request' in body);
}

function invalid(issues: FieldIssue[]): ValidationError {
  const fields = issues.map((i) => i.path || '(body)').join(', ');
  return new ValidationError(`the submission is invalid: ${issues.length === 1 ? 'one field needs' : `${issues.length} fields need`} fixing (${fields})`, issues);
}

/**
 * Validates a submit request: `body` is a `SubmitJob` (`{ spec, idempotencyKey?, estimateId? }`) or a bare job
 * spec; `headerKey` is the `Idempotency-Key` header (HTTP or NATS). Resolves the deadline
 * against `now` in the team's `timeZone` (IANA; default UTC). Throws a ValidationError naming
 * every bad field and its fix.
 */
export function parseSubmission(body: unknown, headerKey: string | undefined, now: Date, timeZone?: string): Submission {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalid([{ path: '', message: 'the body must be a JSON object: a job spec, or `{ spec, idempotencyKey }`', fix: 'send the job spec as a JSON object' }]);
  }
  const issues: FieldIssue[] = [];
  let spec: JobSpec | undefined;
  let bodyKey: string | undefined;
  let estimateId: string | undefined;
  let prefix = '';
  if (isEnvelope(body as Record<string, unknown>)) {
    prefix = 'spec.';
    const parsed = SubmitJob.safeParse(body);
    if (parsed.success) {
      spec = toJobSpec(parsed.data.spec);
      bodyKey = parsed.data.idempotencyKey;
      estimateId = parsed.data.estimateId;
    } else issues.push(...formatIssues(parsed.error));
  } else {
    const parsed = parseJobSpec(body);
    if (parsed.ok) spec = parsed.spec;
    else issues.push(...parsed.issues);
  }
  if (headerKey !== undefined) {
    const parsed = IdempotencyKey.safeParse(headerKey);
    if (!parsed.success) issues.push(...formatIssues(parsed.error).map((i) => ({ ...i, path: 'Idempotency-Key' })));
    else if (bodyKey !== undefined && bodyKey !== headerKey) {
      issues.push({
        path: 'idempotencyKey',
        message: 'differs from the `Idempotency-Key` header',
        fix: 'send the key once (header or body), or the same value in both',
      });
    }
  }
  let deadlineAt: string | undefined;
  if (spec?.request.deadline !== undefined) {
    const resolved = resolveDeadline(spec.request.deadline, now, timeZone);
    if (resolved.ok) deadlineAt = resolved.at;
    else issues.push({ ...resolved.issue, path: `${prefix}${resolved.issue.path}` });
  }
  if (issues.length > 0 || spec === undefined) throw invalid(issues);
  return { spec, idempotencyKey: headerKey ?? bodyKey, deadlineAt, ...(estimateId !== undefined ? { estimateId } : {}) };
}

/**
 * The deadline as an instant (see `deadline.ts` for the accepted forms), resolved in `timeZone`
 * (default UTC). A deadline that has already passed is an issue: the job could only end `deadline`.
 */
export function resolveDeadline(deadline: string, now: Date, timeZone?: string): { ok: true; at: string } | { ok: false; issue: FieldIssue } {
  const resolved = resolveDeadlineText(deadline, { now, timeZone });
  return resolved.ok ? { ok: true, at: resolved.at.toISOString() } : resolved;
}

/** What a submit means given the job stream's JobSubmitted, if any. */
export type SubmitDecision =
  | { kind: 'append'; event: JobSubmitted }
  | { kind: 'duplicate'; original: JobSubmitted }
  /** The idempotency key was used before for a different spec. */
  | { kind: 'conflict'; original: JobSubmitted };

export interface SubmitInput {
  jobId: string;
  team: string;
  submission: Submission;
  /** Id of the API key that submits (never the key). */
  submittedBy?: string | undefined;
  now: Date;
  /** The JobSubmitted already in the job's stream (a retry of an idempotent submit). */
  existing?: JobSubmitted | undefined;
}

export function decideSubmit(input: SubmitInput): SubmitDecision {
  const { existing, submission } = input;
  if (existing !== undefined) {
    const same = existing.team === input.team && canonical(existing.spec) === canonical(submission.spec);
    return same ? { kind: 'duplicate', original: existing } : { kind: 'conflict', original: existing };
  }
  const event: JobSubmitted = {
    jobId: input.jobId,
    team: input.team,
    spec: submission.spec,
    submittedAt: input.now.toISOString(),
  };
  if (submission.deadlineAt !== undefined) event.deadlineAt = submission.deadlineAt;
  if (submission.idempotencyKey !== undefined) event.idempotencyKey = submission.idempotencyKey;
  if (input.submittedBy !== undefined) event.submittedBy = input.submittedBy;
  return { kind: 'append', event };
}

/** What a cancel request means. */
export type CancelDecision = { kind: 'append'; event: JobCancelRequested } | { kind: 'noop'; cancelRequested: boolean };

export interface CancelInput {
  submitted: JobSubmitted;
  /** A JobCancelRequested is already in the job's stream. */
  alreadyRequested: boolean;
  /** The job's state as the read model knows it; undefined when it has not seen the job yet. */
  state: JobState | undefined;
  reason?: string | undefined;
  requestedBy?: string | undefined;
  now: Date;
}

/** Cancel a job that has not ended, once; cancelling an ended job changes nothing (`cancelRequested: false`). */
export function decideCancel(input: CancelInput): CancelDecision {
  if (input.state !== undefined && isFinalState(input.state)) return { kind: 'noop', cancelRequested: false };
  if (input.alreadyRequested) return { kind: 'noop', cancelRequested: true };
  const event: JobCancelRequested = { jobId: input.submitted.jobId, team: input.submitted.team, requestedAt: input.now.toISOString() };
  if (input.reason !== undefined) event.reason = input.reason;
  if (input.requestedBy !== undefined) event.requestedBy = input.requestedBy;
  return { kind: 'append', event };
}

/** JSON with object keys sorted, so two equal specs compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}
