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
