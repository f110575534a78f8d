/**
 * What a team may see of its own jobs' events: the feed entry of a recorded event, or undefined
 * when the event is not for a team's feed. Pure.
 */
import { FEED_EVENT_TYPES, type FeedEntry, type FeedEventType } from '#contracts';

/** The fields of a recorded event the feed reads; a structural subset of the store's `RecordedEvent`. */
export interface FeedSource {
  eventId: string;
  type: string;
  data: unknown;
  position: bigint;
  recordedAt: string;
  metadata: { team?: string | undefined; jobId?: string | undefined; producer: string; occurredAt: string; correlationId: string };
}

const FEED_TYPES = new Set<string>(FEED_EVENT_TYPES);

/**
 * The entry `event` makes in its team's feed: only an event of a job (metadata `jobId`) of a team
 * (metadata `team`, set by the control plane, never by a node or a producer) and of a type in
 * `FEED_EVENT_TYPES`. The entry carries the event's data and its times, producer and correlation;
 * never its hash, stream, signatures or causation. `team`, when given, must match too.
 */
export function feedEntryOf(event: FeedSource, team?: string): FeedEntry | undefined {
  const { team: owner, jobId } = event.metadata;
  if (!owner || !jobId || !FEED_TYPES.has(event.type)) return undefined;
  if (team !== undefined && owner !== team) return undefined;
  if (typeof event.data !== 'object' || event.data === null || Array.isArray(event.data)) return undefined;
  // An event whose data names a team names the same one (it always does; this keeps a slip from leaking).
  const dataTeam = (event.data as { team?: unknown }).team;
  if (dataTeam !== undefined && dataTeam !== owner) return undefined;
  return {
    position: event.position.toString(),
    eventId: event.eventId,
    type: event.type as FeedEventType,
    jobId,
    team: owner,
    data: event.data as Record<string, unknown>,
    occurredAt: event.metadata.occurredAt,
    recordedAt: event.recordedAt,
    producer: event.metadata.producer,
    correlationId: event.metadata.correlationId,
  };
}

/** Whether `entry` ends its job's feed: nothing more happens to a job after its `JobEnded`. */
export function endsJob(entry: FeedEntry): boolean {
  return entry.type === 'JobEnded';
}
