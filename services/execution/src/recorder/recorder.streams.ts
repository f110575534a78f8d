/** Streams the recorder reads and writes (it writes the nodes' streams for them, and two of its own). */

/** `execution-recorder-nodes`: NodeEnrolled, the nodes whose reports are taken and their keys. */
export const ENROLLMENT_STREAM = 'execution-recorder-nodes';
/** `execution-recorder-refused`: NodeReportRefused, every report the recorder would not record. */
export const REFUSALS_STREAM = 'execution-recorder-refused';
/** Prefix of everything the execution service writes centrally; the recorder's relay publishes these. */
export const EXECUTION_STREAM_PREFIX = 'execution-';

/** Placement's stream of one job (JobPlaced of each attempt). Read only. */
export const placementJobStreamId = (jobId: string) => `placement-job-${jobId}`;
/** Intake's stream of one job (JobSubmitted, JobCancelRequested). Read only. */
export const intakeJobStreamId = (jobId: string) => `intake-job-${jobId}`;
/** Placement's stream of one node (NodeLost). Read only. */
export const placementNodeStreamId = (nodeId: string) => `placement-node-${nodeId}`;

/** Checkpoint of the work dispatcher (position of the last event it dispatched). */
export const WORK_CHECKPOINT = 'execution-recorder-work';
/** Checkpoint holding the highest report sequence taken from one journal of one node. */
export const highWaterId = (nodeId: string, journal: string) => `execution-recorder-seq-${nodeId}-${journal}`;
