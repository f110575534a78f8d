/**
 * The team feed: a team's own jobs' events, in store order, from any position and resumable.
 * Read over HTTP as Server-Sent Events (`GET /v1/feed`, `Last-Event-ID`) or over NATS with the
 * `ReadFeed` query (pages from a position) plus core-NATS notifications on
 * `gpunet.feed.<team>.<jobId>` (`feedSubject`) that say a new entry is there.
 *
 * What a team sees: the events of its own jobs (the event's `metadata.team` is the caller's team
 * and it names a job) of the types in {@link FEED_EVENT_TYPES}, with their `data` as recorded —
 * its own spec, placements, holds, runs, outputs, usage and end. Never another team's event, and
 * none of the control plane's own records (refused node reports, audit queries, key actions),
 * nor an event's hash, stream, signatures or causation chain.
 */
import { z } from 'zod';
import { fieldError, strictObject } from './issues.js';
import { defineQuery } from './message.js';
import { DecimalString, JobId, TeamId, Timestamp } from './primitives.js';

/** The event types a team's feed carries, all about one of its jobs. */
export const FEED_EVENT_TYPES = [
  'JobSubmitted',
  'JobRejected',
  'JobCancelRequested',
  'InputsStaged',
  'StagingFailed',
  'JobPlaced',
  'ComputeHeld',
  'JobStarted',
  'JobCheckpointed',
  'JobFinished',
  'JobRequeued',
  'ComputeReleased',
  'JobWithdrawn',
  'JobQuoted',
  'OutputsStored',
  'UsageRecorded',
  'DataRemoved',
  'JobEnded',
  'BudgetReserved',
  'BudgetReleased',
  'BudgetThresholdCrossed',
] as const;
export type FeedEventType = (typeof FEED_EVENT_TYPES)[number];

export const FeedEntry = z
  .object({
    position: DecimalString.describe('The event\'s position in the store: the SSE `id`, and what to pass as `after` (or `Last-Event-ID`) to resume after it.'),
    eventId: z.string().describe('The event\'s id (unique; the same event is never sent under another id).'),
    type: z.enum(FEED_EVENT_TYPES).describe('The event type; `data` is that event\'s data (`contracts/generated/json-schema/<type>.json`).'),
    jobId: JobId,
    team: TeamId,
    data: z.record(z.string(), z.unknown()).describe('The event\'s data as recorded.'),
    occurredAt: Timestamp.describe('When it happened, as its producer says.'),
    recordedAt: Timestamp.describe('When the store recorded it.'),
    producer: z.string().describe('The service that recorded it.'),
    correlationId: z.string().describe('Ties together every event caused by one request (e.g. the submit).'),
  })
  .describe('One event of one of the team\'s jobs, as the team may see it.');
export type FeedEntry = z.output<typeof FeedEntry>;

const limitError = fieldError('limit', 'must be a whole number from 1 to 1000', 'write e.g. `limit: 200`');
export const ReadFeed = strictObject(
  {
    after: DecimalString.default('0').describe(
      'Exclusive store position: the `position` of the last entry you hold, or `next` of the previous reply. Default `0`: from the start.',
    ),
    jobId: JobId.optional().describe('Only this job\'s entries. Default: every job of the team.'),
    limit: z.int({ error: limitError }).min(1, { error: limitError }).max(1000, { error: limitError }).default(200).describe('Most entries per reply, 1–1000. Default 200.'),
  },
  'ReadFeed',
).describe('A page of the caller\'s team feed after a position.');
export type ReadFeed = z.output<typeof ReadFeed>;

export const ReadFeedReply = z
  .object({
    entries: z.array(FeedEntry).describe('Entries after `after`, in store order.'),
    next: DecimalString.describe('Pass as `after` for the next page; it may be past the last entry (positions of other teams\' events are skipped).'),
    caughtUp: z.boolean().describe('True when the page reached what intake has seen of the store: wait for a notification before asking again.'),
  })
  .describe('One page of the team feed.');
export type ReadFeedReply = z.output<typeof ReadFeedReply>;

export const feedQueries = [
  defineQuery({
    name: 'ReadFeed',
    version: 1,
    service: 'intake',
    description:
      'A page of the caller\'s team feed (its own jobs\' events) after a store position. Live: subscribe to `gpunet.feed.<team>.>` (a `FeedEntry` per new entry) and read again from your last position.',
    schema: ReadFeed,
    replySchema: ReadFeedReply,
  }),
] as const;
