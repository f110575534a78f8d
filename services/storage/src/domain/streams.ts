/**
 * Event store stream ids storage writes and reads, as docs/design/lifecycle.md fixes them.
 * Storage writes only streams starting with `storage-`; it reads the others.
 */

/** Prefix of every stream storage writes (its outbox relay publishes these). */
export const STORAGE_STREAM_PREFIX = 'storage-';

/** `storage-job-<jobId>`: InputsStaged or StagingFailed, OutputsStored per attempt, DataRemoved. */
export function storageJobStreamId(jobId: string): string {
  return `${STORAGE_STREAM_PREFIX}job-${jobId}`;
}

/** `intake-job-<jobId>`: written by intake; JobSubmitted names the team that owns the job. */
export function intakeJobStreamId(jobId: string): string {
  return `intake-job-${jobId}`;
}

/** `placement-job-<jobId>`: written by placement; JobPlaced names the nodes of each attempt. */
export function placementJobStreamId(jobId: string): string {
  return `placement-job-${jobId}`;
}

/** `execution-<nodeId>-attempt-<attemptId>`: the node's part of an attempt, as the recorder recorded it. */
export function nodeAttemptStreamId(nodeId: string, attemptId: string): string {
  return `execution-${nodeId}-attempt-${attemptId}`;
}
