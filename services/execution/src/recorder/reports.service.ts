import {
  Commands,
  commandSubject,
  EnrollNode,
  IssueJoinToken,
  JoinNode,
  ListNodes,
  ListNodesReply,
  NodeOutputsReport,
  NodeReport,
  nodeOfReportSubject,
  outputsSigningBytes,
  querySubject,
  REPORT_SUBJECTS,
  reportSigningBytes,
  type ReportProof,
  type JobPlaced,
  type JobSubmitted,
  type NodeReportRefused,
  type NodeReportReply,
  type ReportRefusalReason,
  type StoreOutputsReply,
} from '#contracts';
import { contextFromFields, inSpan, traceFields, tracingEnabled } from '#telemetry';
import { TransientError, ValidationError } from '#errors';
import { IdempotencyConflictError, WrongExpectedVersionError, type EventMetadata, type EventStore, type RecordedEvent } from '#event-store';
import { verifySignature } from '#identity';
import { requestQuery, serveQuery } from '#messaging';
import { CLOCK, derivedId, EVENT_STORE, EVENT_WRITER, LOGGER, NATS_CONNECTION, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { attemptStreamId, judgeOutputs, judgeReport, type JudgedReport, type StreamEvent } from '../domain/index.js';
import { ReportRefusedError } from './errors.js';
import { NodeRegistry } from './node-registry.service.js';
import type { RecorderConfig } from './recorder.config.js';
import { highWaterId, intakeJobStreamId, placementJobStreamId, REFUSALS_STREAM } from './recorder.streams.js';
import { WorkDispatcher } from './work-dispatcher.service.js';

const JOB_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Jobs whose team the recorder keeps at hand: far more than a node runs at once. */
const TEAMS_CACHED = 10_000;

/**
 * The recorder's front: nodes' reports in (`gpunet.report.<nodeId>.event|outputs`), judged
 * (src/domain/report.ts) against what the store holds, and either appended to the node's stream
 * with the node's signature kept in `metadata.report`, or refused and the refusal recorded in
 * `execution-recorder-refused`. Reports are handled one at a time, so two reports of one attempt
 * never race. Also the operator's EnrollNode and ListNodes.
 */
@Injectable()
export class ReportsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly subscriptions: Subscription[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private readonly highWater = new Map<string, bigint>();
  /** Teams of recent jobs (the store answers for the rest): bounded, so memory does not grow with every job ever run. */
  private readonly teams = new LRUCache<string, string>({ max: TEAMS_CACHED });

  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: RecorderConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: NodeRegistry,
    private readonly work: WorkDispatcher,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.registry.start();
    await this.work.start();
    this.subscriptions.push(
      serveQuery(this.nc, REPORT_SUBJECTS, {}, // Event reports one at a time (two of one attempt never race); outputs wait on storage, so they run beside them.
        (body, ctx) => (ctx.subject.endsWith('.outputs') ? this.onOutputs(ctx.subject, body) : this.serial(() => this.onReport(ctx.subject, body))), {
        queue: 'execution-recorder',
        logger: this.logger,
      }),
      serveQuery(this.nc, commandSubject('EnrollNode'), { request: EnrollNode, response: Commands.EnrollNode.replySchema }, (req) => {
        const r = req as EnrollNode;
        return this.registry.enroll(r.nodeId, r.publicKey, r.enrolledBy);
      }, { queue: 'execution-recorder', logger: this.logger }),
      serveQuery(this.nc, commandSubject('IssueJoinToken'), { request: IssueJoinToken, response: Commands.IssueJoinToken.replySchema }, (req) => this.registry.issueJoinToken(req as IssueJoinToken), {
        queue: 'execution-recorder',
        logger: this.logger,
      }),
      // From the `joiner` identity (anyone holding a join token): the token is all that is trusted.
      serveQuery(this.nc, commandSubject('JoinNode'), { request: JoinNode, response: Commands.JoinNode.replySchema }, (req) => this.registry.join(req as JoinNode), {
        queue: 'execution-recorder',
        logger: this.logger,
      }),
      serveQuery(this.nc, querySubject('execution', 'ListNodes'), { request: ListNodes, response: ListNodesReply }, () => ({ nodes: this.registry.list() }), {
        queue: 'execution-recorder',
        logger: this.logger,
      }),
    );
    await this.nc.flush();
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.subscriptions.splice(0).map((s) => s.drain().catch(() => undefined)));
    await this.chain.catch(() => undefined);
    await this.work.stop();
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** One observation of a node. */
  async onReport(subject: string, body: unknown): Promise<NodeReportReply> {
    const fromNode = nodeOfReportSubject(subject) ?? '?';
    const parsed = NodeReport.safeParse(body);
    if (!parsed.success) {
      const detail = `not a node report: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
      await this.refuse(fromNode, 'malformed', detail, {}, JSON.stringify(body ?? null).slice(0, 200));
      return { status: 'refused', reason: 'malformed', detail };
    }
    const report = parsed.data;
    const { streamId, eventId, type, data } = report.event;
    const publicKey = await this.registry.publicKeyOf(report.nodeId);
    const signedBytes = reportSigningBytes(report);
    const judged: JudgedReport = { nodeId: report.nodeId, journal: report.journal, seq: BigInt(report.seq), event: report.event, signature: report.signature, signedBytes };
    const ownStream = report.nodeId === fromNode && streamId.startsWith(`execution-${fromNode}-`);
    const recorded = ownStream ? await this.store.readStream(streamId) : [];
    const jobId = typeof (data as { jobId?: unknown })?.jobId === 'string' ? (data as { jobId: string }).jobId : undefined;
    const attemptId = typeof (data as { attemptId?: unknown })?.attemptId === 'string' ? (data as { attemptId: string }).attemptId : undefined;
    const placed = ownStream && jobId && JOB_ID.test(jobId) && attemptId ? await this.placementOf(jobId, attemptId) : undefined;
    const hwKey = highWaterId(report.nodeId, report.journal);
    const highWater = await this.highWaterOf(hwKey);
    // One ed25519 check per report: the judge's answer and the high-water rule below share it.
    let signatureHolds: boolean | undefined;
    const verifyOnce = (key: string, bytes: Uint8Array, signature: string) => (signatureHolds ??= verifySignature(key, bytes, signature));
    const verdict = judgeReport({ fromNode, report: judged, publicKey, verify: verifyOnce, highWater, stream: recorded.map(streamEvent), placed });
    const about = { eventId, type, streamId, ...(jobId && JOB_ID.test(jobId) ? { jobId } : {}), ...(attemptId && attemptId.length <= 200 ? { attemptId } : {}), ...(publicKey ? { publicKey } : {}) };

    const signed = publicKey !== undefined && report.nodeId === fromNode && verifyOnce(publicKey, signedBytes, report.signature);
    const log = this.logger.child({ nodeId: fromNode, eventId, type, ...(jobId ? { jobId } : {}), correlationId: report.event.metadata.correlationId });

    if (verdict.verdict === 'duplicate') {
      log.debug('report recorded before: acknowledged again');
      return { status: 'duplicate' };
    }
    if (verdict.verdict === 'refuse') {
      log.warn({ reason: verdict.reason, detail: verdict.detail }, 'node report refused');
      await this.refuse(fromNode, verdict.reason, verdict.detail, about, `${eventId}:${report.signature}`);
      // Only a report the node really signed moves its mark: an unsigned one must not shut the node out.
      if (signed) await this.raiseHighWater(hwKey, judged.seq);
      return { status: 'refused', reason: verdict.reason, detail: verdict.detail };
    }

    const proof: ReportProof = { nodeId: report.nodeId, publicKey: publicKey!, signature: report.signature, journal: report.journal, seq: report.seq, metadata: report.event.metadata };
    const m = report.event.metadata;
    const team = verdict.jobId ? await this.teamOf(verdict.jobId) : undefined;
    const metadata = {
      correlationId: m.correlationId,
      causationId: m.causationId,
      producer: 'execution',
      occurredAt: m.occurredAt,
      // An attempt's job and team are the control plane's (placement, intake), never the node's say.
      ...(verdict.jobId ? { jobId: verdict.jobId } : m.jobId ? { jobId: m.jobId } : {}),
      ...(verdict.jobId ? (team ? { team } : {}) : m.team ? { team: m.team } : {}),
      report: proof,
    } as EventMetadata;
    try {
      // With tracing on, recording is a span of the job's trace, child of the node's (from the
      // report's metadata: advisory only, like every trace context), and the recorded event
      // carries the recorder's context on to the consumers.
      // Through the writer: the node's event as it wrote it, fenced on this recorder's term
      // (decision 0029), so a recorder that is no longer the leader records nothing.
      const append = () => this.writer.appendAsIs(streamId, [{ eventId, type, data, metadata: tracingEnabled() ? { ...metadata, ...traceFields() } : metadata }], recorded.length === 0 ? 'no_stream' : recorded[recorded.length - 1]!.revision);
      if (tracingEnabled()) await inSpan(`recorder record ${type}`, { parent: contextFromFields(m as Record<string, unknown>), attributes: { 'gpunet.job_id': verdict.jobId, 'gpunet.node_id': fromNode } }, append);
      else await append();
    } catch (err) {
      if (err instanceof WrongExpectedVersionError) throw new TransientError(`stream ${streamId} moved while the report was judged; send it again`, { cause: err });
      if (err instanceof IdempotencyConflictError) {
        const detail = `event id ${eventId} is taken by another event`;
        await this.refuse(fromNode, 'replayed', detail, about, `${eventId}:${report.signature}`);
        if (signed) await this.raiseHighWater(hwKey, judged.seq);
        return { status: 'refused', reason: 'replayed', detail };
      }
      throw err;
    }
    await this.raiseHighWater(hwKey, judged.seq);
    log.info({ seq: report.seq, streamId }, 'node report recorded');
    return { status: 'accepted' };
  }

  /** The outputs of an attempt: judged, then handed to storage with the job's team. */
  async onOutputs(subject: string, body: unknown): Promise<StoreOutputsReply> {
    const fromNode = nodeOfReportSubject(subject) ?? '?';
    const parsed = NodeOutputsReport.safeParse(body);
    if (!parsed.success) {
      const detail = `not an outputs report: ${parsed.error.issues.slice(0, 3).map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
      await this.refuse(fromNode, 'malformed', detail, { type: 'StoreOutputs' }, JSON.stringify(body ?? null).slice(0, 200));
      throw new ReportRefusedError(detail);
    }
    const { nodeId, outputs, signature } = parsed.data;
    const publicKey = await this.registry.publicKeyOf(nodeId);
    const placed = await this.placementOf(outputs.jobId, outputs.attemptId);
    const team = await this.teamOf(outputs.jobId);
    const ownStream = nodeId === fromNode && outputs.nodeId === nodeId;
    const stream = ownStream ? (await this.store.readStream(attemptStreamId(nodeId, outputs.attemptId))).map(streamEvent) : [];
    const verdict = judgeOutputs({ fromNode, nodeId, outputs, signature, signedBytes: outputsSigningBytes(parsed.data), publicKey, verify: verifySignature, placed, team, stream });
    const about = { type: 'StoreOutputs', jobId: outputs.jobId, attemptId: outputs.attemptId, streamId: attemptStreamId(outputs.nodeId, outputs.attemptId), ...(publicKey ? { publicKey } : {}) };
    if (verdict.verdict === 'not_yet') throw new TransientError(verdict.detail);
    if (verdict.verdict === 'refuse') {
      this.logger.warn({ nodeId: fromNode, jobId: outputs.jobId, attemptId: outputs.attemptId, reason: verdict.reason, detail: verdict.detail }, 'outputs report refused');
      await this.refuse(fromNode, verdict.reason, verdict.detail, about, `outputs:${outputs.attemptId}:${signature}`);
      throw new ReportRefusedError(`outputs refused (${verdict.reason}): ${verdict.detail}`);
    }
    try {
      return await requestQuery<StoreOutputsReply>(this.nc, commandSubject('StoreOutputs'), { ...outputs, team: team! }, { request: Commands.StoreOutputs.schema, response: Commands.StoreOutputs.replySchema }, {
        timeoutMs: this.config.GPUNET_STORE_OUTPUTS_TIMEOUT_MS,
        jobId: outputs.jobId,
      });
    } catch (err) {
      // Storage copies the outputs out of the node's bucket, verified (decision 0025): bytes missing
      // there or not matching what the node signed are the node's fault, recorded like any refusal.
      if (err instanceof ValidationError) {
        this.logger.warn({ nodeId: fromNode, jobId: outputs.jobId, attemptId: outputs.attemptId, reason: 'bad_blob', detail: err.message }, 'outputs report refused');
        await this.refuse(fromNode, 'bad_blob', err.message, about, `outputs:${outputs.attemptId}:${signature}`);
      }
      throw err;
    }
  }

  /** NodeReportRefused, once per refused report (its id is derived from what was refused). */
  private async refuse(nodeId: string, reason: ReportRefusalReason, detail: string, about: Partial<NodeReportRefused>, key: string): Promise<void> {
    const data: NodeReportRefused = { nodeId: nodeId.slice(0, 200), reason, detail: detail.slice(0, 2000), ...about, refusedAt: this.clock.now().toISOString() };
    const eventId = derivedId('NodeReportRefused', nodeId, reason, key);
    try {
      await this.writer.append(REFUSALS_STREAM, [{ type: 'NodeReportRefused', data, eventId }], { ...(about.jobId ? { jobId: about.jobId } : {}) });
    } catch (err) {
      // The same refused report sent again: its refusal is recorded already.
      if (!(err instanceof IdempotencyConflictError)) throw err;
    }
  }

  private async placementOf(jobId: string, attemptId: string): Promise<JobPlaced | undefined> {
    const events = await this.store.readStream(placementJobStreamId(jobId));
    return events.find((e) => e.type === 'JobPlaced' && (e.data as JobPlaced).attemptId === attemptId)?.data as JobPlaced | undefined;
  }

  private async teamOf(jobId: string): Promise<string | undefined> {
    const known = this.teams.get(jobId);
    if (known) return known;
    const submitted = (await this.store.readStream(intakeJobStreamId(jobId))).find((e) => e.type === 'JobSubmitted')?.data as JobSubmitted | undefined;
    if (submitted) this.teams.set(jobId, submitted.team);
    return submitted?.team;
  }

  private async highWaterOf(key: string): Promise<bigint | undefined> {
    if (!this.highWater.has(key)) {
      const saved = await this.store.loadCheckpoint(key);
      if (saved !== undefined) this.highWater.set(key, saved);
    }
    return this.highWater.get(key);
  }

  private async raiseHighWater(key: string, seq: bigint): Promise<void> {
    const now = this.highWater.get(key);
    if (now !== undefined && now >= seq) return;
    this.highWater.set(key, seq);
    await this.store.saveCheckpoint(key, seq);
  }
}

function streamEvent(e: RecordedEvent): StreamEvent {
  const proof = (e.metadata as EventMetadata & { report?: ReportProof }).report;
  return { eventId: e.eventId, type: e.type, data: e.data, ...(proof ? { signature: proof.signature } : {}) };
}
