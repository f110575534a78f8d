/** Streams placement writes (it writes no others; see docs/design/lifecycle.md). */

/** Prefix of every stream placement writes; its outbox relay publishes exactly these. */
export const PLACEMENT_STREAM_PREFIX = 'placement-';

/** `placement-job-<jobId>`: JobPlaced, JobRequeued, JobWithdrawn and placement's JobRejected of one job. */
export function placementJobStreamId(jobId: string): string {
  return `${PLACEMENT_STREAM_PREFIX}job-${jobId}`;
}

/** The job of a placement job stream, or undefined for any other stream. */
export function jobIdOfPlacementStream(streamId: string): string | undefined {
  const prefix = `${PLACEMENT_STREAM_PREFIX}job-`;
  return streamId.startsWith(prefix) ? streamId.slice(prefix.length) : undefined;
}
