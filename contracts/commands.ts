/**
 * Commands: requests to change a job, sent to intake by NATS request/reply on
 * `gpunet.cmd.<Name>` or over HTTP with the same body. Authenticated by the team's API key
 * (`Authorization: Bearer <key>` header on both transports): the team comes from the key,
 * never from the payload. The reply is a {@link ReplyEnvelope} around `replySchema`.
 */
import { z } from 'zod';
import { fieldError, strictObject } from './issues.js';
import { JobSpecInput } from './job-spec.js';
import { defineCommand } from './message.js';
import { JobId, Timestamp } from './primitives.js';
import { JobState } from './queries.js';

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
  },
  'SubmitJob',
).describe('Submit a job: its spec, and optionally an idempotency key.');
export type SubmitJob = z.output<typeof SubmitJob>;

export const SubmitJobReply = z
  .object({
    jobId: JobId,
    state: JobState,
    submittedAt: Timestamp.describe('When intake accepted the job.'),
    duplicate: z.boolean().describe('True when the idempotency key was seen before and this is the original job.'),
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
] as const;
