import { CheckpointFromNode, CheckpointFromNodeReply, nodeDataSubject, StageForNode, StageForNodeReply } from '#contracts';
import { requestQuery } from '#messaging';
import type { NatsConnection } from '@nats-io/transport-node';

/**
 * The agent's side of storage's node data requests (decision 0025): a node touches only its own
 * bucket `gpunet-node-<nodeId>`; storage copies an attempt's inputs and checkpoints into it and
 * the node's checkpoints out of it, after checking the attempt is placed on this node.
 */
export class NodeData {
  constructor(
    private readonly nc: NatsConnection,
    private readonly nodeId: string,
    private readonly timeoutMs: number,
  ) {}

  /** Has storage copy these blobs of the attempt into the node's bucket (an empty list: only checks the attempt and opens the bucket). */
  stage(jobId: string, attemptId: string, blobs: readonly string[]): Promise<StageForNodeReply> {
    return requestQuery<StageForNodeReply>(this.nc, nodeDataSubject(this.nodeId, 'stage'), { jobId, attemptId, blobs: [...new Set(blobs)] }, { request: StageForNode, response: StageForNodeReply }, {
      timeoutMs: this.timeoutMs,
      jobId,
    });
  }

  /** Has storage take a checkpoint the node wrote into its bucket into the team's (verified). */
  checkpoint(jobId: string, attemptId: string, sha256: string): Promise<CheckpointFromNodeReply> {
    return requestQuery<CheckpointFromNodeReply>(this.nc, nodeDataSubject(this.nodeId, 'checkpoint'), { jobId, attemptId, sha256 }, { request: CheckpointFromNode, response: CheckpointFromNodeReply }, {
      timeoutMs: this.timeoutMs,
      jobId,
    });
  }
}
