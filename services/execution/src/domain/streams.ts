/** Event store streams an execution agent writes (one writer per stream: this agent). */

/** `execution-<nodeId>-`: every stream of one agent; its outbox relay publishes these. */
export function agentStreamPrefix(nodeId: string): string {
  return `execution-${nodeId}-`;
}

/** `execution-<nodeId>-attempt-`: the attempt streams of one node. */
export function attemptStreamPrefix(nodeId: string): string {
  return `${agentStreamPrefix(nodeId)}attempt-`;
}

/** `execution-<nodeId>-attempt-<attemptId>`: ComputeHeld, JobStarted, JobFinished, ComputeReleased of one attempt. */
export function attemptStreamId(nodeId: string, attemptId: string): string {
  return `${attemptStreamPrefix(nodeId)}${attemptId}`;
}

/** `execution-<nodeId>-node`: NodeRegistered, one per agent start. */
export function nodeStreamId(nodeId: string): string {
  return `${agentStreamPrefix(nodeId)}node`;
}

/** The attempt id of an attempt stream of this node, or `undefined` for any other stream. */
export function attemptIdOfStream(nodeId: string, streamId: string): string | undefined {
  const prefix = attemptStreamPrefix(nodeId);
  return streamId.startsWith(prefix) && streamId.length > prefix.length ? streamId.slice(prefix.length) : undefined;
}
