import { CHUNK_INDEX_HEADER, CheckpointFromNode, CheckpointFromNodeReply, nodeDataSubject, ReadForNode, StageForNode, StageForNodeReply } from '#contracts';
import { BlobStoreUnavailableError, chunkStream, writeVerified, type BlobDigest, type ChunkGetter } from '#blobs';
import { Headers, parseReply, QueryTimeoutError, QueryUnavailableError, replyToError, requestQuery } from '#messaging';
import { headers, RequestError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';

const utf8 = new TextDecoder();

/**
 * Chunk reads of one blob in flight through storage (32 MiB at the default chunk size). Each waits
 * two hops (the node's request to storage, storage's direct get to the server) before the server
 * answers; in `npm run bench:staging` (1 GiB) 32 staged at 102–137 MB/s where 16 did 56–97 and 64
 * did 59 (decision 0036). The cache reads up to 4 blobs at once: at most 128 MiB in flight.
 */
export const READS_IN_FLIGHT = 32;

/**
 * The agent's side of storage's node data requests (decision 0025): a node touches only its own
 * bucket `gpunet-node-<nodeId>`; storage copies checkpoints into it and out of it, and reads an
 * attempt's inputs for it from the team's bucket chunk by chunk (decision 0036), after checking
 * the attempt is placed on this node.
 */
export class NodeData {
  constructor(
    private readonly nc: NatsConnection,
    private readonly nodeId: string,
    private readonly timeoutMs: number,
    /** How long one chunk read (`readTo`) may wait, as a download's stall timeout: a lost read fails in seconds, not after a copy's long wait. */
    private readonly readTimeoutMs = 30_000,
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

  /**
   * Reads `team`'s blob `sha256` of the attempt through storage (`read`, decision 0036) into
   * `destPath`: {@link READS_IN_FLIGHT} chunk reads in flight, every byte hashed as it is written to a
   * temporary file that is renamed into place only when the whole blob's sha256 and `size` match.
   *
   * @throws BlobIntegrityError (the bytes are not the address's), the refusal storage answered
   *   (`node_data_refused`, `not_found`: terminal), QueryTimeoutError or QueryUnavailableError (retryable)
   */
  async readTo(jobId: string, attemptId: string, team: string, sha256: string, destPath: string, options: { size: number; mode?: number }): Promise<BlobDigest> {
    const subject = nodeDataSubject(this.nodeId, 'read');
    const get: ChunkGetter = async (seq) => {
      const body: ReadForNode = { jobId, attemptId, sha256, seq };
      const h = headers();
      h.set(Headers.JobId, jobId);
      let msg;
      try {
        msg = await this.nc.request(subject, JSON.stringify(body), { timeout: this.readTimeoutMs, headers: h });
      } catch (err) {
        if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) throw new QueryTimeoutError(subject, this.readTimeoutMs, { cause: err });
        if (err instanceof RequestError && err.isNoResponders()) throw new QueryUnavailableError(subject, { cause: err });
        throw err;
      }
      // nats-server's own direct get reply (storage had it answer us): the chunk, or 404 past the last one.
      const at = msg.headers?.get('Nats-Sequence');
      if (at) {
        const index = msg.headers?.get(CHUNK_INDEX_HEADER);
        return { seq: Number(at), data: msg.data, index: index ? Number(index) : undefined };
      }
      const status = msg.headers?.code ?? 0;
      if (status === 404) return null;
      if (status >= 400) throw new BlobStoreUnavailableError(`reading ${team}/${sha256} through storage: the object store answered ${status} ${msg.headers?.description ?? ''}`.trim());
      // Storage's own answer: a refusal, or a blob with no bytes.
      const reply = parseReply(subject, utf8.decode(msg.data));
      if (!reply.ok) throw replyToError(subject, reply.error);
      return null;
    };
    return writeVerified(chunkStream(get, undefined, READS_IN_FLIGHT), destPath, { sha256, size: options.size }, {
      name: `${team}/${sha256} (read through storage)`,
      stallTimeoutMs: this.readTimeoutMs,
      total: options.size,
      ...(options.mode !== undefined && { mode: options.mode }),
    });
  }
}
