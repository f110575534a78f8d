import {
  CheckpointFromNode,
  NODE_DATA_SUBJECTS,
  parseNodeDataSubject,
  ReadForNode,
  StageForNode,
  type CheckpointFromNodeReply,
  type JobCheckpointed,
  type JobPlaced,
  type JobSubmitted,
  type StageForNodeReply,
} from '#contracts';
import { BlobIntegrityError, BlobNotFoundError, mapLimit, nodeBucket, type BlobStore, type CopyResult } from '#blobs';
import { GpunetError, ValidationError } from '#errors';
import type { EventStore } from '#event-store';
import { answer } from '#messaging';
import { EVENT_STORE, LOGGER, NATS_CONNECTION } from '#service-kit';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { NodeBuckets } from '../blobs/node-buckets.js';
import { NodeReads, READ_ADMISSION_MS } from './node-reads.js';
import { intakeJobStreamId, judgeNodeAttempt, nodeAttemptStreamId, placementJobStreamId, manifestsToExpand, unreferenced, type NodeAttemptFacts, type NodeDataRefusal } from '../domain/index.js';

/** Blobs copied at once for one request. */
const COPY_CONCURRENCY = 4;

/** Storage refused a node's request (logged at warn as `node data request refused`). Terminal. */
export class NodeDataRefusedError extends GpunetError {
  readonly code = 'node_data_refused';
  readonly retryable = false;
  constructor(
    readonly reason: NodeDataRefusal | 'blob_mismatch',
    message: string,
  ) {
    super(message);
  }
}

/**
 * A node's requests about its own bucket (decision 0025), on `gpunet.data.<nodeId>.<op>`, which
 * only that node may publish (nats-server), so the subject names who asks:
 *
 * - `stage`: copy blobs of an attempt placed on the node (its job's inputs, folder files, recorded
 *   checkpoints) from the team's bucket into the node's, skipping what the node's holds;
 * - `checkpoint`: copy a checkpoint the node wrote into its bucket into the team's, verifying every
 *   file's sha256 and size as it copies;
 * - `read`: one chunk of such a blob, read from the team's bucket for the node ({@link NodeReads},
 *   decision 0036): how the agent's input cache stages inputs, without a copy into its bucket.
 *
 * Each is checked against the store first: the job exists, the attempt is placed on this node and
 * the node has not released it, and every blob asked for is the job's. A refusal is logged at warn
 * with the node, the job and the reason.
 */
@Injectable()
export class NodeDataService implements OnApplicationBootstrap, OnApplicationShutdown {
  private subscription: Subscription | undefined;
  /** Copies under way, by destination bucket and object: a retried request joins the copy rather than racing it on the same chunks. */
  private readonly copying = new Map<string, Promise<CopyResult>>();
  /** The store's facts of attempts being read, and their folder manifests' files, for a short while (reads come by the hundred). */
  private readonly attempts = new Map<string, { expires: number; facts: Promise<NodeAttemptFacts>; filesOf?: Promise<Map<string, string[]>> }>();
  private readonly reads: NodeReads;

  constructor(
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly nodes: NodeBuckets,
  ) {
    this.reads = new NodeReads(blobs, (nodeId, req) => this.admitRead(nodeId, req), logger);
  }

  async onApplicationBootstrap(): Promise<void> {
    const logger = this.logger.child({ query: NODE_DATA_SUBJECTS });
    // Reads answer raw chunks; the other operations are JSON queries.
    this.subscription = this.nc.subscribe(NODE_DATA_SUBJECTS, {
      queue: 'storage',
      callback: (err, msg) => {
        if (err) {
          logger.error({ err }, 'node data subscription failed');
          return;
        }
        const parsed = parseNodeDataSubject(msg.subject);
        if (parsed?.op === 'read') void this.reads.answer(parsed.nodeId, msg);
        else void answer(msg, {}, (body, ctx) => this.handle(ctx.subject, body), logger);
      },
    });
    await this.nc.flush();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.subscription?.drain().catch(() => undefined);
  }

  async handle(subject: string, body: unknown): Promise<StageForNodeReply | CheckpointFromNodeReply> {
    const parsed = parseNodeDataSubject(subject);
    if (!parsed) throw new ValidationError(`${subject} is not a node data subject`);
    const { nodeId, op } = parsed;
    if (op === 'stage') return this.stage(nodeId, parseBody(StageForNode, body, op));
    if (op === 'checkpoint') return this.checkpoint(nodeId, parseBody(CheckpointFromNode, body, op));
    throw new ValidationError(`no node data operation \`${op}\` (stage, checkpoint, read)`, [{ path: 'subject', message: `unknown operation ${op}`, fix: 'use gpunet.data.<nodeId>.stage, .checkpoint or .read' }]);
  }

  /**
   * May `nodeId` read `req.sha256` for this attempt: checked as `stage` is (the job exists, the
   * attempt is placed on this node and not released there, the blob is the job's). The store's
   * facts and the folder manifests' files are kept per attempt for {@link READ_ADMISSION_MS};
   * a refusal is not kept.
   */
  async admitRead(nodeId: string, req: ReadForNode): Promise<{ team: string; until: number }> {
    const log = this.logger.child({ nodeId, jobId: req.jobId, attemptId: req.attemptId });
    const key = `${nodeId}\0${req.jobId}\0${req.attemptId}`;
    const now = performance.now();
    let entry = this.attempts.get(key);
    if (!entry || entry.expires <= now) {
      if (this.attempts.size > 1_000) for (const [k, e] of this.attempts) if (e.expires <= now) this.attempts.delete(k);
      const facts = this.facts(nodeId, req.jobId, req.attemptId);
      entry = { expires: now + READ_ADMISSION_MS, facts };
      this.attempts.set(key, entry);
      facts.catch(() => this.attempts.delete(key));
    }
    const facts = await entry.facts;
    const verdict = judgeNodeAttempt(nodeId, req.jobId, req.attemptId, facts);
    if (!verdict.ok) {
      this.attempts.delete(key);
      this.refuse(verdict.reason, verdict.message, 'read', log);
    }
    const team = verdict.team;
    let filesOf = new Map<string, string[]>();
    if (manifestsToExpand(facts, [req.sha256]).length > 0) {
      entry.filesOf ??= this.filesOf(team, manifestsToExpand(facts, [req.sha256]));
      filesOf = await entry.filesOf;
    }
    if (unreferenced(facts, [req.sha256], filesOf).length > 0) {
      this.refuse('not_referenced', `blob ${req.sha256} is not an input or checkpoint of job ${req.jobId}`, 'read', log);
    }
    return { team, until: entry.expires };
  }

  /** The files of each folder manifest (none for one the team's bucket lacks). */
  private async filesOf(team: string, manifests: readonly string[]): Promise<Map<string, string[]>> {
    const filesOf = new Map<string, string[]>();
    for (const manifest of manifests) {
      const files = await this.blobs.readFolderManifest(team, manifest).then((m) => m.entries.map((e) => e.sha256), (err: unknown) => {
        if (err instanceof BlobNotFoundError) return [];
        throw err;
      });
      filesOf.set(manifest, files);
    }
    return filesOf;
  }

  /** Copies blobs of the attempt from the team's bucket into the node's. */
  async stage(nodeId: string, req: StageForNode): Promise<StageForNodeReply> {
    const log = this.logger.child({ nodeId, jobId: req.jobId, attemptId: req.attemptId });
    const facts = await this.facts(nodeId, req.jobId, req.attemptId);
    const team = this.admit(nodeId, req.jobId, req.attemptId, facts, 'stage', log);
    const asked = [...new Set(req.blobs)];
    const filesOf = await this.filesOf(team, manifestsToExpand(facts, asked));
    const foreign = unreferenced(facts, asked, filesOf);
    if (foreign.length > 0) this.refuse('not_referenced', `blob(s) ${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ` and ${foreign.length - 3} more` : ''} are not inputs or checkpoints of job ${req.jobId}`, 'stage', log);
    const node = await this.nodes.of(nodeId);
    await node.ensureBucket(team);
    const copied = await mapLimit(asked, COPY_CONCURRENCY, (sha256) => this.copy(node, this.blobs, team, sha256));
    const moved = copied.reduce((n, c) => n + c.copiedBytes, 0);
    log.info({ blobs: copied.length, copiedBytes: moved }, 'staged for the node');
    return { bucket: nodeBucket(nodeId), team, blobs: copied.map((c) => ({ sha256: c.sha256, size: c.size, copiedBytes: c.copiedBytes })) };
  }

  /** Copies a checkpoint (manifest and files) from the node's bucket into the team's, verified. */
  async checkpoint(nodeId: string, req: CheckpointFromNode): Promise<CheckpointFromNodeReply> {
    const log = this.logger.child({ nodeId, jobId: req.jobId, attemptId: req.attemptId });
    const facts = await this.facts(nodeId, req.jobId, req.attemptId);
    const team = this.admit(nodeId, req.jobId, req.attemptId, facts, 'checkpoint', log);
    const node = await this.nodes.of(nodeId);
    try {
      const manifest = await node.readFolderManifest(team, req.sha256);
      const unique = [...new Map(manifest.entries.map((e) => [e.sha256, e])).values()];
      const copied = await mapLimit(unique, COPY_CONCURRENCY, (e) => this.copy(this.blobs, node, team, e.sha256, e.size));
      const record = await this.copy(this.blobs, node, team, req.sha256);
      const copiedBytes = copied.reduce((n, c) => n + c.copiedBytes, 0) + record.copiedBytes;
      log.info({ sha256: req.sha256, files: manifest.entries.length, copiedBytes }, 'checkpoint taken from the node');
      return { sha256: req.sha256, files: manifest.entries.length, copiedBytes };
    } catch (err) {
      if (err instanceof BlobIntegrityError) this.refuse('blob_mismatch', err.message, 'checkpoint', log);
      throw err;
    }
  }

  /**
   * Before recording outputs: each blob into the team's bucket from the node's, verified as it is
   * copied (a blob the team holds already moves nothing). A blob the node's bucket lacks is left
   * for the outputs check to report missing; bytes that do not match their address are refused.
   */
  async takeOutputs(nodeId: string, team: string, blobs: readonly { sha256: string; size: number }[], log: Logger): Promise<{ copiedBytes: number; mismatched: { sha256: string; message: string }[] }> {
    const node = await this.nodes.of(nodeId);
    const mismatched: { sha256: string; message: string }[] = [];
    const copied = await mapLimit([...new Map(blobs.map((b) => [b.sha256, b])).values()], COPY_CONCURRENCY, async (b) => {
      try {
        return (await this.copy(this.blobs, node, team, b.sha256, b.size)).copiedBytes;
      } catch (err) {
        if (err instanceof BlobNotFoundError) return 0;
        if (err instanceof BlobIntegrityError) {
          mismatched.push({ sha256: b.sha256, message: err.message });
          return 0;
        }
        throw err;
      }
    });
    if (mismatched.length > 0) log.warn({ nodeId, refused: 'blob_mismatch', mismatched }, 'node data request refused');
    return { copiedBytes: copied.reduce((n, c) => n + c, 0), mismatched };
  }

  /** `to.copyFrom(from, …)`, one at a time per destination object. */
  private copy(to: BlobStore, from: BlobStore, team: string, sha256: string, size?: number): Promise<CopyResult> {
    const key = `${to.bucketOf(team)}/${team}/${sha256}`;
    let running = this.copying.get(key);
    if (!running) {
      running = to.copyFrom(from, team, sha256, size === undefined ? {} : { size }).finally(() => this.copying.delete(key));
      this.copying.set(key, running);
    }
    return running;
  }

  /** Removes blobs the team's bucket now holds from the node's (they were in transit). */
  async forget(nodeId: string, team: string, blobs: readonly string[]): Promise<void> {
    const node = await this.nodes.of(nodeId);
    await mapLimit([...new Set(blobs)], COPY_CONCURRENCY, (sha256) => node.remove(team, sha256).catch(() => false));
  }

  private admit(nodeId: string, jobId: string, attemptId: string, facts: NodeAttemptFacts, op: string, log: Logger): string {
    const verdict = judgeNodeAttempt(nodeId, jobId, attemptId, facts);
    if (!verdict.ok) this.refuse(verdict.reason, verdict.message, op, log);
    return (verdict as { team: string }).team;
  }

  private refuse(reason: NodeDataRefusedError['reason'], message: string, op: string, log: Logger): never {
    log.warn({ refused: reason, op, detail: message }, 'node data request refused');
    throw new NodeDataRefusedError(reason, `${op} refused (${reason}): ${message}`);
  }

  /** What the store records of the attempt and its job. */
  private async facts(nodeId: string, jobId: string, attemptId: string): Promise<NodeAttemptFacts> {
    const submitted = (await this.store.readStream(intakeJobStreamId(jobId), { maxCount: 10 })).find((e) => e.type === 'JobSubmitted')?.data as JobSubmitted | undefined;
    if (!submitted) return { team: undefined, inputs: [], placedOn: [], released: false, checkpoints: [] };
    const placed = (await this.store.readStream(placementJobStreamId(jobId))).find((e) => e.type === 'JobPlaced' && (e.data as JobPlaced).attemptId === attemptId)?.data as JobPlaced | undefined;
    const placedOn = placed ? (placed.nodes?.map((n) => n.nodeId) ?? [placed.nodeId]) : [];
    const released = placedOn.includes(nodeId) && (await this.store.readStream(nodeAttemptStreamId(nodeId, attemptId))).some((e) => e.type === 'ComputeReleased');
    const checkpoints: string[] = [];
    let fromPosition: bigint | undefined;
    for (;;) {
      const page = await this.store.readAll({ filter: { types: ['JobCheckpointed'], jobId }, maxCount: 500, ...(fromPosition !== undefined && { fromPosition }) });
      for (const e of page) {
        const cp = e.data as JobCheckpointed;
        if (cp.jobId === jobId && cp.sha256 !== undefined) checkpoints.push(cp.sha256);
      }
      if (page.length < 500) break;
      fromPosition = page[page.length - 1]!.position;
    }
    return { team: submitted.team, inputs: submitted.spec.data.inputs, placedOn, released, checkpoints };
  }
}

function parseBody<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } } }, body: unknown, op: string): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new ValidationError(
    `not a ${op} request: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')}`,
    parsed.error.issues.map((i) => ({ path: i.path.join('.') || 'body', message: i.message })),
  );
}
