/**
 * Commands: requests to change a job, sent to intake by NATS request/reply on
 * `gpunet.cmd.<Name>` or over HTTP with the same body. Authenticated by the team's API key
 * (`Authorization: Bearer <key>` header on both transports): the team comes from the key,
 * never from the payload. The reply is a {@link ReplyEnvelope} around `replySchema`.
 */
import { z } from 'zod';
import { FieldIssue, fieldError, strictObject } from './issues.js';
import { JobSpecInput } from './job-spec.js';
import { defineCommand } from './message.js';
import { OutputFile, RejectedOutput } from './events/data.js';
import { AttemptId, ByteCount, EstimateId, JobId, NodeId, Sha256, TeamId, Timestamp } from './primitives.js';
import { JobState } from './queries.js';
import { BudgetFigures } from './budgets.js';

const idempotencyKeyError = fieldError(
  'idempotencyKey',
  'must be 1–128 visible ASCII characters',
  'use a fresh UUID per job you mean to submit, and the same one when you retry it',
);
/** Makes a submit safe to retry: the same key within a team returns the first result. */
export const IdempotencyKey = z
  .string({ error: idempotencyKeyError })
  .regex(/^[\x21-\x7e]{1,128}$/, { error: idempotencyKeyError })
  .describe('Makes the submit safe to retry: the same key (per team) returns the job first created with it. Same as the HTTP `Idempotency-Key` header.');

export const SubmitJob = strictObject(
  {
    spec: JobSpecInput,
    idempotencyKey: IdempotencyKey.optional(),
    estimateId: EstimateId.optional().describe(
      'An estimate given to your team for this spec\'s request (`gpunet estimate`, `POST /v1/estimate`): the job is held to it (its JobSubmitted `quote`), so its error is known when the job starts and ends. Each estimate is used by one job.',
    ),
  },
  'SubmitJob',
).describe('Submit a job: its spec, and optionally an idempotency key and the estimate it was submitted on.');
export type SubmitJob = z.output<typeof SubmitJob>;

export const SubmitJobReply = z
  .object({
    jobId: JobId,
    state: JobState,
    submittedAt: Timestamp.describe('When intake accepted the job.'),
    duplicate: z.boolean().describe('True when the idempotency key was seen before and this is the original job.'),
    warnings: z
      .array(FieldIssue)
      .optional()
      .describe('Accepted despite these, e.g. a deadline the current plan cannot meet under `Gpunet-Deadline-Policy: warn`.'),
    budget: BudgetFigures.optional().describe('When the team has a budget: the job\'s worst case reserved and what remains this month.'),
  })
  .describe('The accepted job.');
export type SubmitJobReply = z.output<typeof SubmitJobReply>;

const reasonError = fieldError('reason', 'must be text of at most 500 characters', 'shorten the reason');
export const CancelJob = strictObject(
  {
    jobId: JobId.describe('The job to cancel, e.g. `job_01jz8k4m2n`.'),
    reason: z.string({ error: reasonError }).max(500, { error: reasonError }).optional().describe('Why, kept in the job\'s history.'),
  },
  'CancelJob',
).describe('Cancel a job: a queued job ends at once; a running one is stopped (SIGTERM, grace, SIGKILL) and billed up to its end.');
export type CancelJob = z.output<typeof CancelJob>;

export const CancelJobReply = z
  .object({
    jobId: JobId,
    state: JobState,
    cancelRequested: z.boolean().describe('False when the job had already ended; nothing changed then.'),
  })
  .describe('Where the job stands after the request.');
export type CancelJobReply = z.output<typeof CancelJobReply>;

export const StoreOutputs = z
  .object({
    jobId: JobId,
    team: TeamId,
    attemptId: AttemptId,
    nodeId: NodeId,
    files: z.array(OutputFile).describe('Output files already uploaded to the object store under the team, by content address.'),
    truncated: z.boolean().default(false).describe('True when files were left out because `outputs.maxBytes` was reached.'),
    rejected: z.array(RejectedOutput).max(1000).default([]).describe('Files matching the globs that were refused, each with why (recorded in OutputsStored).'),
    logs: z
      .array(z.object({ stream: z.enum(['stdout', 'stderr']).describe('Which stream.'), sha256: Sha256, size: ByteCount }))
      .default([])
      .describe('The captured stdout and stderr, uploaded like outputs.'),
  })
  .describe('Internal: an execution agent asks storage to record the outputs of one attempt after uploading them.');
export type StoreOutputs = z.output<typeof StoreOutputs>;

export const StoreOutputsReply = z
  .object({
    jobId: JobId,
    attemptId: AttemptId,
    files: z.int().min(0).describe('Number of files recorded.'),
    totalBytes: ByteCount.describe('Sum of their sizes.'),
    duplicate: z.boolean().describe('True when this attempt\'s outputs were already recorded (a retried request).'),
  })
  .describe('The recorded outputs.');
export type StoreOutputsReply = z.output<typeof StoreOutputsReply>;

export const commands = [
  defineCommand({
    name: 'SubmitJob',
    version: 1,
    handler: 'intake',
    description: 'Submit a job spec for the caller\'s team. Idempotent on the idempotency key.',
    schema: SubmitJob,
    replySchema: SubmitJobReply,
  }),
  defineCommand({
    name: 'CancelJob',
    version: 1,
    handler: 'intake',
    description: 'Cancel one of the caller\'s jobs. Cancelling an ended job is not an error: the reply says nothing changed.',
    schema: CancelJob,
    replySchema: CancelJobReply,
  }),
  defineCommand({
    name: 'StoreOutputs',
    version: 1,
    handler: 'storage',
    description: 'Internal (execution → storage): record the outputs of an attempt whose blobs are uploaded. Idempotent per attempt.',
    schema: StoreOutputs,
    replySchema: StoreOutputsReply,
  }),
] as const;
