/**
 * Reply shapes of the HTTP API that have no query of their own in `contracts/` (a job's events
 * and its outputs). They mirror intake's answers; the others (JobView, ListJobsReply,
 * SubmitJobReply, CancelJobReply, GetChargesReply) come from the contracts as they are.
 * Tolerant of fields added later, like every reply schema.
 */
import { DecimalString, EventId, JobId, OutputFile, Timestamp } from '#contracts';
import { z } from 'zod';

/** One event of a job, as `GET /v1/jobs/:id/events` lists it. */
export const JobEventRecord = z.object({
  position: DecimalString,
  streamId: z.string(),
  revision: DecimalString,
  eventId: EventId,
  type: z.string(),
  /** The time the event states (agent clock for agent events). */
  at: Timestamp,
  /** Service that appended it. */
  producer: z.string(),
  occurredAt: Timestamp,
  recordedAt: Timestamp,
  correlationId: z.string(),
  causationId: z.string(),
  data: z.unknown(),
});
export type JobEventRecord = z.output<typeof JobEventRecord>;

/** `GET /v1/jobs/:id/events`: every event of the job from every service, in store order. */
export const JobEvents = z.object({ jobId: JobId, events: z.array(JobEventRecord) });
export type JobEvents = z.output<typeof JobEvents>;

/** `GET /v1/jobs/:id/outputs`: the stored output files. */
export const JobOutputs = z.object({
  jobId: JobId,
  /** False until storage recorded the outputs. */
  stored: z.boolean(),
  files: z.array(OutputFile),
  totalBytes: z.int().min(0),
  truncated: z.boolean(),
});
export type JobOutputs = z.output<typeof JobOutputs>;
