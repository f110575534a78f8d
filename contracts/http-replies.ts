/**
 * Reply shapes of HTTP routes that have no NATS query of their own: a job's events (its
 * timeline across every service) and its stored outputs. Intake answers with them; the SDK
 * checks them.
 */
import { z } from 'zod';
import { OutputFile, RejectedOutput } from './events/data.js';
import { DecimalString, EventId, JobId, Timestamp } from './primitives.js';

export const JobEventRecord = z
  .object({
    position: DecimalString.describe('Global position in the event store; events are listed in this order.'),
    streamId: z.string().describe('Event store stream, e.g. `placement-job-<jobId>`.'),
    revision: DecimalString.describe('Revision within its stream.'),
    eventId: EventId,
    type: z.string().describe('Event type, e.g. `JobStarted`.'),
    at: Timestamp.describe('The time the event states (agent clock for agent events).'),
    producer: z.string().describe('Service that appended it.'),
    occurredAt: Timestamp.describe('When the producer decided or observed it.'),
    recordedAt: Timestamp.describe('When the store recorded it.'),
    correlationId: z.string().describe('Ties together every event caused by one request.'),
    causationId: z.string().describe('What directly caused it.'),
    data: z.unknown().describe('The event\'s payload, as in its contract.'),
  })
  .describe('One event of the job, as the store holds it.');
export type JobEventRecord = z.output<typeof JobEventRecord>;

export const JobEvents = z
  .object({
    jobId: JobId,
    events: z.array(JobEventRecord).describe('Every event of the job from every service, in store order.'),
  })
  .describe('A job\'s timeline: every event of it across all services.');
export type JobEvents = z.output<typeof JobEvents>;

export const JobOutputs = z
  .object({
    jobId: JobId,
    stored: z.boolean().describe('False until storage recorded the outputs (OutputsStored).'),
    files: z.array(OutputFile).describe('Stored output files; download one at `/v1/jobs/{jobId}/outputs/{path}`.'),
    totalBytes: z.int().min(0).describe('Sum of their sizes.'),
    truncated: z.boolean().describe('Files were skipped at `outputs.maxBytes`.'),
    rejected: z
      .array(RejectedOutput)
      .default([])
      .describe('Files the job wrote that were not kept, each with its reason (a symlink leaving the directory, the size cap, a name with a newline, …); nothing is dropped without a word.'),
  })
  .describe('A job\'s stored outputs.');
export type JobOutputs = z.output<typeof JobOutputs>;
