/**
 * Storage's durable consumers of `GPUNET_EVENTS` (deploy/topology.yaml, decision 0054). Each is
 * filtered by the server to the one event type it handles, so the other events of a job are never
 * delivered to storage.
 */

/** The jobs submitted (`gpunet.evt.JobSubmitted.>`): staging. Its dead letters are on `gpunet.dlq.storage`, as before decision 0054. */
export const STORAGE_CONSUMER = 'storage';

/** The computes released (`gpunet.evt.ComputeReleased.>`): removing the inputs no job needs any more. */
export const RELEASED_CONSUMER = 'storage-released';
