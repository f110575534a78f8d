import { WORK_STREAM, type EnrollNodeReply, type IssueJoinToken, type IssueJoinTokenReply, type JoinNode, type JoinNodeReply, type NodeEnrolled } from '#contracts';
import { createHash } from 'node:crypto';
import { decideJoin, evolveJoinTokens, type JoinTokenState } from '../domain/join.js';
import { provision } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, NATS_CONNECTION, SERVICE_CONFIG, defaultTopologyFile, topologyFor, type Clock, type EventWriter } from '#service-kit';
import type { EventStore } from '#event-store';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import type { RecorderConfig } from './recorder.config.js';
import { ENROLLMENT_STREAM } from './recorder.streams.js';

/**
 * The enrolled nodes and their keys, from `NodeEnrolled` in `execution-recorder-nodes` (the
 * latest enrollment of a node wins). Enrolling a node also creates its work consumer
 * `execution-<nodeId>` on GPUNET_WORK (its own subjects only): a node provisions nothing.
 */
@Injectable()
export class NodeRegistry {
  private nodes = new Map<string, NodeEnrolled>();
  /** Join tokens by the sha256 of their secret (NodeJoinTokenIssued / NodeJoinTokenUsed, same stream). */
  private readonly tokens = new Map<string, JoinTokenState>();
  private revision = -1n;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: RecorderConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Reads the enrollments, enrolls the nodes named in GPUNET_ENROLL_NODES, makes every enrolled node's consumer. */
  async start(): Promise<void> {
    await this.refresh();
    for (const [nodeId, publicKey] of parseEnrollList(this.config.GPUNET_ENROLL_NODES)) await this.enroll(nodeId, publicKey, 'gpunet up');
    for (const nodeId of this.nodes.keys()) await this.ensureConsumer(nodeId);
    this.logger.info({ nodes: [...this.nodes.keys()] }, 'enrolled nodes');
  }

  /** Every enrolled node. */
  list(): NodeEnrolled[] {
    return [...this.nodes.values()].sort((a, b) => a.nodeId.localeCompare(b.nodeId));
  }

  /** The node's enrolled key; the store is read again for a node not known yet (enrolled by another recorder run). */
  async publicKeyOf(nodeId: string): Promise<string | undefined> {
    if (!this.nodes.has(nodeId)) await this.refresh();
    return this.nodes.get(nodeId)?.publicKey;
  }

  /** Records NodeEnrolled unless the node is enrolled with this key already; one at a time. */
  enroll(nodeId: string, publicKey: string, enrolledBy: string): Promise<EnrollNodeReply> {
    const run = this.chain.then(async () => {
      await this.refresh();
      if (this.nodes.get(nodeId)?.publicKey === publicKey) return { nodeId, publicKey, changed: false };
      await this.writer.append(ENROLLMENT_STREAM, [{ type: 'NodeEnrolled', data: { nodeId, publicKey, enrolledBy, enrolledAt: this.clock.now().toISOString() } }], {
        expectedRevision: this.revision < 0n ? 'no_stream' : this.revision,
      });
      await this.refresh();
      await this.ensureConsumer(nodeId);
      this.logger.info({ nodeId, publicKey, enrolledBy }, 'node enrolled');
      return { nodeId, publicKey, changed: true };
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Records a join token (its secret's hash only); one at a time with enrollments, so a token is never spent twice. */
  issueJoinToken(req: IssueJoinToken): Promise<IssueJoinTokenReply> {
    return this.serial(async () => {
      await this.refresh();
      const tokenId = req.secretSha256.slice(0, 16);
      const issuedAt = this.clock.now().toISOString();
      await this.writer.append(ENROLLMENT_STREAM, [{ type: 'NodeJoinTokenIssued', data: { nodeId: req.nodeId, tokenId, secretSha256: req.secretSha256, expiresAt: req.expiresAt, issuedBy: req.issuedBy, issuedAt } }], {
        expectedRevision: this.revision < 0n ? 'no_stream' : this.revision,
      });
      await this.refresh();
      this.logger.info({ nodeId: req.nodeId, tokenId, expiresAt: req.expiresAt, issuedBy: req.issuedBy }, 'join token issued');
      return { nodeId: req.nodeId, tokenId, expiresAt: req.expiresAt };
    });
  }

  /**
   * A machine spends a join token: checked (src/domain/join.ts), then NodeJoinTokenUsed and
   * NodeEnrolled in one append at the stream's expected revision — a token raced by two machines
   * (or two recorders) enrolls one of them: the other's append fails because the stream moved,
   * its request is answered with that error, and asked again it is refused as `used`.
   */
  join(req: JoinNode): Promise<JoinNodeReply> {
    return this.serial(async () => {
      await this.refresh();
      const secretSha256 = createHash('sha256').update(req.secret).digest('hex');
      const now = this.clock.now();
      const decision = decideJoin(this.tokens, { nodeId: req.nodeId, secretSha256 }, now);
      if (!decision.ok) {
        this.logger.warn({ nodeId: req.nodeId, reason: decision.reason, publicKey: req.publicKey }, `join refused: ${decision.detail}`);
        return { status: 'refused', nodeId: req.nodeId, reason: decision.reason, detail: decision.detail };
      }
      const { tokenId } = decision.token;
      const at = now.toISOString();
      await this.writer.append(
        ENROLLMENT_STREAM,
        [
          { type: 'NodeJoinTokenUsed', data: { nodeId: req.nodeId, tokenId, publicKey: req.publicKey, usedAt: at } },
          { type: 'NodeEnrolled', data: { nodeId: req.nodeId, publicKey: req.publicKey, enrolledBy: `join token ${tokenId}`, enrolledAt: at } },
        ],
        { expectedRevision: this.revision < 0n ? 'no_stream' : this.revision },
      );
      await this.refresh();
      await this.ensureConsumer(req.nodeId);
      this.logger.info({ nodeId: req.nodeId, publicKey: req.publicKey, tokenId }, 'node joined');
      return { status: 'joined', nodeId: req.nodeId, publicKey: req.publicKey, tokenId };
    });
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async refresh(): Promise<void> {
    const events = await this.store.readStream(ENROLLMENT_STREAM, { fromRevision: this.revision + 1n });
    for (const e of events) {
      if (e.type === 'NodeEnrolled') this.nodes.set((e.data as NodeEnrolled).nodeId, e.data as NodeEnrolled);
      evolveJoinTokens(this.tokens, e.type, e.data);
      this.revision = e.revision;
    }
  }

  /** The node's durable on GPUNET_WORK, from the `execution-{instance}` template of the topology file. */
  private async ensureConsumer(nodeId: string): Promise<void> {
    const topology = await topologyFor(this.config.GPUNET_TOPOLOGY_FILE ?? defaultTopologyFile(), nodeId, [`execution-${nodeId}`]);
    const consumers = topology.consumers.filter((c) => c.stream === WORK_STREAM);
    await provision(await jetstreamManager(this.nc), { streams: topology.streams, consumers }, { serverVersion: this.nc.info?.version, serverInfo: this.nc.info, logger: this.logger });
  }
}

/** `node-1=UAB…,node-2=UCD…` → pairs. Pure. */
export function parseEnrollList(text: string | undefined): [string, string][] {
  if (!text) return [];
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq <= 0) throw new Error(`GPUNET_ENROLL_NODES: ${JSON.stringify(pair)} is not <nodeId>=<public key>`);
      return [pair.slice(0, eq), pair.slice(eq + 1)] as [string, string];
    });
}
