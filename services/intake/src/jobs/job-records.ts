/** Shapes intake answers with beyond the contracts' queries: a job's events and its outputs. */
import { DecimalString, EventId, JobId, OutputFile, Timestamp } from '#contracts';
import { z } from 'zod';

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
  })
  .describe('A job\'s stored outputs.');
export type JobOutputs = z.output<typeof JobOutputs>;

export const Healthz = z
  .object({
    status: z.enum(['ok']).describe('`ok` when intake serves.'),
    jobs: z.int().min(0).describe('Jobs in the read model.'),
    position: DecimalString.describe('Store position the read model has reached.'),
    checkedAt: Timestamp,
  })
  .describe('Liveness of this intake process.');
export type Healthz = z.output<typeof Healthz>;
