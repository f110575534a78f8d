import { ReadForNode } from '#contracts';
import type { BlobStore } from '#blobs';
import { ValidationError } from '#errors';
import { identityName, inboxPrefix } from '#identity';
import { errorReply } from '#messaging';
import type { Msg } from '@nats-io/transport-node';
import type { Logger } from 'pino';

/**
 * How long a read's admission (attempt placed on the node, not released, the job's blob) is kept
 * before the store is asked again. A node reads a blob in hundreds of 1 MiB requests: asking the
 * store for each would cost more than the chunk. A node that releases its attempt may go on
 * reading what it was admitted to for at most this long.
 */
export const READ_ADMISSION_MS = 2_000;

/**
 * Decides whether `nodeId` may read `sha256` for this attempt; resolves with the blob's team (and,
 * when the verdict rests on facts read earlier, until when those facts may be trusted, on the
 * `performance.now()` clock) or throws the refusal.
 */
export type ReadAdmission = (nodeId: string, req: ReadForNode) => Promise<{ team: string; until?: number }>;

interface Admitted {
  expires: number;
  readonly ready: Promise<{ chunks: number; forward: (seq: number, replyTo: string) => void }>;
}

const utf8 = new TextDecoder();

/**
 * Storage's answer to `gpunet.data.<nodeId>.read` (decision 0036): once the store says the node
 * may read the blob, storage has nats-server answer the node's request itself with a direct get of
 * the team's bucket restricted to that blob's chunk subject (the chunk at or after `seq`), so no
 * other bytes can be asked for and the bytes never pass through storage. The node receives the
 * server's direct get reply: the chunk with `Nats-Sequence` (where it was, so it asks for the next)
 * and its stored headers, or status 404 past the blob's last chunk. Storage itself answers only a
 * blob with no bytes (`{ ok: true, data: { end: true } }`) and a refusal (the usual error
 * envelope). The node verifies the whole blob's sha256 and size before it keeps the file.
 *
 * The reply subject must be the node's own inbox (`_INBOX_node-<nodeId>.`, which only that node
 * may subscribe to), or the shared `_INBOX.` of a network without identities: the server answers
 * on it with storage's rights, so any other subject would let a node have the server publish a
 * chunk where the node itself may not.
 */
export class NodeReads {
  private readonly admitted = new Map<string, Admitted>();

  constructor(
    private readonly blobs: BlobStore,
    private readonly admit: ReadAdmission,
    private readonly logger: Logger,
    private readonly admissionMs = READ_ADMISSION_MS,
  ) {}

  /** Answers one read request (or has the server answer it). Never throws. */
  async answer(nodeId: string, msg: Msg): Promise<void> {
    if (!msg.reply) return;
    let reply: unknown;
    try {
      if (!ownInbox(nodeId, msg.reply)) {
        throw new ValidationError(`a read's reply subject must be the node's own inbox (${inboxPrefix(identityName('node', nodeId))}.…), not ${msg.reply}`, [
          { path: 'reply', message: 'not the node\'s inbox', fix: 'send the read with request() on a connection made with the node\'s identity' },
        ]);
      }
      const req = parse(msg.data);
      const source = await this.source(nodeId, req);
      if (source.chunks === 0) reply = { ok: true, data: { end: true } };
      else {
        source.forward(req.seq, msg.reply);
        return;
      }
    } catch (err) {
      const envelope = errorReply(err);
      if (envelope.error.code === 'internal') this.logger.error({ err, nodeId }, 'node read failed');
      reply = envelope;
    }
    try {
      msg.respond(JSON.stringify(reply));
    } catch (err) {
      this.logger.error({ err, nodeId }, 'cannot send a read reply');
    }
  }

  /** The blob the node may read, once it is admitted to it (kept for {@link READ_ADMISSION_MS}). */
  private async source(nodeId: string, req: ReadForNode): Promise<Awaited<Admitted['ready']>> {
    const key = `${nodeId}\0${req.jobId}\0${req.attemptId}\0${req.sha256}`;
    const now = performance.now();
    let entry = this.admitted.get(key);
    if (!entry || entry.expires <= now) {
      if (this.admitted.size > 1_000) for (const [k, e] of this.admitted) if (e.expires <= now) this.admitted.delete(k);
      const made: Admitted = {
        expires: now + this.admissionMs,
        ready: this.admit(nodeId, req).then(({ team, until }) => {
          // Never trusted longer than the facts the verdict rests on.
          if (until !== undefined) made.expires = Math.min(made.expires, until);
          return this.blobs.chunkSource(team, req.sha256);
        }),
      };
      const ready = made.ready;
      // A refusal is not kept: the next request asks the store again (and is logged again).
      ready.catch(() => {
        if (this.admitted.get(key) === made) this.admitted.delete(key);
      });
      this.admitted.set(key, made);
      entry = made;
    }
    return entry.ready;
  }
}

/** The node's own inbox, or the shared one of a network without identities (nobody may subscribe to it where there are identities). */
function ownInbox(nodeId: string, reply: string): boolean {
  return reply.startsWith(`${inboxPrefix(identityName('node', nodeId))}.`) || reply.startsWith('_INBOX.');
}

function parse(data: Uint8Array): ReadForNode {
  let body: unknown;
  try {
    body = data.length === 0 ? undefined : JSON.parse(utf8.decode(data));
  } catch (err) {
    throw new ValidationError('read request body is not JSON', [{ path: '', message: 'not JSON', fix: 'send { jobId, attemptId, sha256, seq } as JSON' }], { cause: err });
  }
  const parsed = ReadForNode.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new ValidationError(
    `not a read request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`,
    parsed.error.issues.map((i) => ({ path: i.path.join('.') || 'body', message: i.message, fix: 'send { jobId, attemptId, sha256, seq }' })),
  );
}
