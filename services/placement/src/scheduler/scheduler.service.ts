import type { NodeAdminReply, NodeHeartbeat } from '#contracts';
import { ValidationError } from '#errors';
import { IdempotencyConflictError, WrongExpectedVersionError, type EventStore, type RecordedEvent } from '#event-store';
import type { BusEvent } from '#messaging';
import { contextFromFields, inSpan, tracingEnabled } from '#telemetry';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Cause, type Clock, type EventWriter, type NewEvent } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import {
  deadlinePassed,
  decide,
  decideNodeAdmin,
  detectDrained,
  nodeStatus,
  predictionsOutlived,
  evolve,
  initialState,
  observeHeartbeat,
  placementJobStreamId,
  type NodeAdminCommand,
  type NodeAdminDecision,
  type PlacementDecision,
  type PlacementEvent,
  type PlacementState,
  type PlanOptions,
} from '../domain/index.js';
import { detectLostNodes, placementNodeStreamId, type NodeLossDecision } from '../domain/node-loss.js';
import { planOptionsOf, snapshotOptionsOf, stateOptionsOf, type PlacementConfig } from '../placement.config.js';
import { PlacementFold } from './placement-fold.js';
import { PlacementSnapshots } from './placement-snapshots.js';
import { PlacementMetrics } from './placement.metrics.js';
/**
 * Passes per handled event at most. One pass is complete (applying its decisions leaves nothing
 * to decide), so a second one runs only after a write conflict made placement catch up.
 */
const MAX_PASSES = 5;
/**
 * While the consumer is behind (more placement events already in hand), one pass runs for a run
 * of events rather than one per event: a pass plans the whole queue, so one per event costs
 * O(queue) per event, O(queue²) for a backlog. At most this many events are applied without a pass…
 */
const MAX_EVENTS_PER_PASS = 32;
/** …and an event applied without one gets its pass within this long, even if no event follows it. */
const OWED_PASS_MS = 20;
/** A snapshot step waits this many times the last step's duration after it: at most about 1 % of the time on steps. */
const SNAPSHOT_SPACING = 100;

/**
 * Placement's state and its passes. The state is global (every GPU of every node), so every
 * change goes through one queue: events are applied and passes run one at a time, in this
 * process, whatever the consumer's concurrency. One placement process per network.
 *
 * At start it loads its snapshot (decision 0037) and folds the store after it up to its head
 * (from the start of the store when there is no snapshot to trust); bus events at or below that
 * position are already in the state and are skipped. While it runs, the snapshot is moved on
 * every so many events or seconds and at shutdown, by folding the store (never from the live
 * state, which is not the fold of a prefix of the store).
 *
 * After each applied event a pass runs `decide`, and each decision is appended to
 * `placement-job-<jobId>` expecting the revision placement last saw there: if
 * anything else wrote it (a second placement process, or a decision that was written but not
 * applied), the append fails, placement reads the stream, applies it, and decides again. So one
 * attempt of a job can be placed once only. Decisions are applied as soon as they are written;
 * their echo on the bus then changes nothing.
 */
@Injectable()
export class SchedulerService implements OnModuleInit, OnApplicationShutdown {
  readonly state: PlacementState;
  /** Priority weights, reservation depth and backfill, from the config: every pass and query plans with them. */
  readonly planOptions: PlanOptions;
  /** Store head folded at start: bus events at or below it are already applied. */
  private foldedHead = 0n;
  /** The fold of the store and bus events into `state`, with the bookkeeping of placement's own streams. */
  private readonly folder: PlacementFold;
  /** Placement's snapshot in the store's database; undefined on a store without one (a test double). */
  private snapshots: PlacementSnapshots | undefined;
  /** Events applied since the snapshot was last moved on. */
  private sinceSnapshot = 0;
  /** The snapshot step running, if any: one at a time, and shutdown waits for it. */
  private snapshotting: Promise<void> | undefined;
  private snapshotTimer: NodeJS.Timeout | undefined;
  /** How long the last snapshot step took and when it ended: the next waits SNAPSHOT_SPACING times as long. */
  private lastSnapshotStep = { ms: 0, endedAt: 0 };
  /** When the snapshot is moved on: every so many events applied, every so many ms. */
  private readonly snapshotEvery: { everyEvents: number; everyMs: number };
  private tail: Promise<unknown> = Promise.resolve();
  /** Clock (epoch ms) of the last pass: a prediction outlived since then calls for another. */
  private lastPassAt = 0;
  /** Events applied since the last pass (handled while the consumer was behind): the next pass decides on them. */
  private owed = 0;
  /** Runs the owed pass when no later event did within OWED_PASS_MS. */
  private owedTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly log: Logger;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) logger: Logger,
    @Inject(SERVICE_CONFIG) private readonly config: Partial<PlacementConfig>,
    private readonly metrics: PlacementMetrics,
  ) {
    this.log = logger.child({ component: 'scheduler' });
    this.planOptions = planOptionsOf(config);
    this.snapshotEvery = snapshotOptionsOf(config);
    this.state = initialState(stateOptionsOf(config));
    this.folder = new PlacementFold(this.state, () => this.clock.now().getTime());
    metrics.watch(this.state, this.planOptions);
  }

  private get revisions(): Map<string, bigint> {
    return this.folder.revisions;
  }

  private get correlations(): Map<string, string> {
    return this.folder.correlations;
  }

  private get traces(): Map<string, { traceparent?: string; tracestate?: string }> {
    return this.folder.traces;
  }

  /** Loads the snapshot and folds the store after it before anything is consumed, then places what can be placed already. */
  async onModuleInit(): Promise<void> {
    await this.serially(async () => {
      const started = Date.now();
      const { events, snapshot } = await this.fold();
      this.log.info(
        { events, fromPosition: (snapshot?.position ?? 0n).toString(), position: this.foldedHead.toString(), queued: this.state.queue.length, nodes: this.state.nodes.size, jobs: this.state.jobs.size, forgottenJobs: this.state.forgottenJobs, ms: Date.now() - started },
        snapshot ? `state loaded from its snapshot at position ${snapshot.position} and the ${events} events after it folded` : 'state folded from the store',
      );
      await this.pass(undefined);
      await this.settleDrains();
    });
    const { everyMs } = this.snapshotEvery;
    if (this.snapshots && everyMs > 0) {
      this.snapshotTimer = setInterval(() => {
        if (this.sinceSnapshot > 0) this.moveSnapshot();
      }, everyMs);
      this.snapshotTimer.unref();
    }
  }

  /** Moves the snapshot on one last time, so the next start folds only what comes after this process (bounded: the events since the last move). */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.owedTimer);
    clearInterval(this.snapshotTimer);
    await this.snapshotting;
    // Whatever was counted: this process's own decisions may not have come back from the bus yet.
    this.moveSnapshot({ final: true });
    await this.snapshotting;
  }

  /**
   * Starts a snapshot step unless one runs; off the event path (it folds the store, not the live
   * state). A step decodes and encodes the whole state on this process's event loop (about 2 s at
   * 20,000 jobs, decision 0037), so steps are spaced at least SNAPSHOT_SPACING times the last one's
   * duration apart: at most about 1 % of the time goes to them, however large the state. The last
   * step at shutdown is always taken.
   */
  private moveSnapshot(options: { final?: boolean } = {}): void {
    if (!this.snapshots || this.snapshotting) return;
    if (!options.final && Date.now() - this.lastSnapshotStep.endedAt < SNAPSHOT_SPACING * this.lastSnapshotStep.ms) return;
    const snapshots = this.snapshots;
    const applied = this.sinceSnapshot;
    this.sinceSnapshot = 0;
    const started = Date.now();
    this.snapshotting = snapshots
      .step()
      .then((step) => {
        const ended = Date.now();
        this.lastSnapshotStep = { ms: ended - started, endedAt: ended };
        this.log.debug({ events: step.events, position: step.position.toString(), saved: step.saved, ms: ended - started }, 'placement snapshot moved on');
      })
      .catch((err: unknown) => {
        this.sinceSnapshot += applied;
        // A state too large to serialize (V8's longest string) fails every step the same way.
        if (err instanceof RangeError) this.snapshots = undefined;
        this.log.warn({ err }, this.snapshots ? 'placement snapshot not moved on; trying again later (a start folds more of the store meanwhile, nothing else)' : 'placement snapshot not moved on, and no more by this process: the state could not be serialized');
      })
      .finally(() => {
        this.snapshotting = undefined;
      });
  }

  /** Store position folded at start. */
  get foldedPosition(): bigint {
    return this.foldedHead;
  }

  /**
   * Applies one bus event (unless the fold already did) and runs a pass. Throws ValidationError
   * (terminal: dead-lettered) for an event without a store position, which placement cannot order.
   *
   * `behind` is how many events the consumer already holds after this one: while it is behind,
   * the pass is left to a later event (at most MAX_EVENTS_PER_PASS applied without one, and
   * never longer than OWED_PASS_MS), so a backlog costs one pass per run of events instead of one
   * per event. Nothing is lost by acknowledging an event before its pass: the state is the
   * store's (folded again at a start, which runs a pass), and a failed owed pass fails the next
   * event's handling or is retried by the timer.
   */
  handle(event: BusEvent, log: Logger, behind = 0): Promise<void> {
    return this.serially(async () => {
      if (event.position === undefined) {
        throw new ValidationError(`${event.type} ${event.eventId} has no store position; placement orders its queue by position`, [
          { path: 'position', message: 'is missing', fix: 'publish events through the outbox relay' },
        ]);
      }
      if (event.position > this.foldedHead) {
        if (this.apply(event as RecordedEvent, 'bus')) this.owed++;
        // Echoes count too: they are events a start would fold.
        if (++this.sinceSnapshot >= this.snapshotEvery.everyEvents) this.moveSnapshot();
      }
      if (this.owed === 0) return;
      if (behind > 0 && this.owed < MAX_EVENTS_PER_PASS) {
        this.owePass();
        return;
      }
      await this.pass(event, log);
      await this.settleDrains();
    });
  }

  /** Makes sure the pass owed for events applied without one runs soon, even if no event follows. */
  private owePass(delayMs = OWED_PASS_MS): void {
    if (this.owedTimer || this.stopped) return;
    this.owedTimer = setTimeout(() => {
      this.owedTimer = undefined;
      void this.serially(async () => {
        if (this.owed === 0) return;
        await this.pass(undefined);
        await this.settleDrains();
      }).catch((err: unknown) => {
        if (this.stopped) return;
        this.log.warn({ err }, 'owed placement pass failed; trying again in a second, or with the next event');
        if (this.owed > 0) this.owePass(1_000);
      });
    }, delayMs);
    this.owedTimer.unref();
  }

  /** Records a heartbeat's arrival on the placement clock. */
  heartbeat(hb: NodeHeartbeat): void {
    observeHeartbeat(this.state, hb, this.clock.now().getTime());
  }

  /**
   * Declares every node silent past its lease lost (NodeLost on `placement-node-<nodeId>`, its id
   * derived from the node's registration so deciding it again writes nothing new), then runs a
   * pass, which requeues the lost attempts' jobs and places them; also runs a pass when a waiting
   * job's deadline has passed, so it is withdrawn within a tick. Returns the nodes declared lost.
   */
  checkNodes(): Promise<string[]> {
    return this.serially(async () => {
      const now = this.clock.now();
      const lost = detectLostNodes(this.state, now, { leaseMs: this.config.GPUNET_NODE_LEASE_MS });
      for (const d of lost) await this.recordNodeLost(d);
      // A deadline passes without any event: the same tick runs the pass that withdraws the job.
      // So does a running job outliving its prediction: the plan now expects it to run to its limit.
      const outlived = predictionsOutlived(this.state, this.lastPassAt, now.getTime());
      if (lost.length > 0 || outlived || this.state.queue.some((j) => deadlinePassed(j, now.getTime()))) await this.pass(undefined);
      // A node lost while draining holds nothing any more: its drain completes (afterLoss).
      if (lost.length > 0) await this.settleDrains();
      return lost.map((d) => d.data.nodeId);
    });
  }

  private async recordNodeLost(d: NodeLossDecision): Promise<void> {
    const streamId = placementNodeStreamId(d.data.nodeId);
    const eventId = this.writer.eventIdFor(d.registrationKey, 'NodeLost');
    try {
      const result = await this.writer.append(streamId, [{ type: 'NodeLost', data: d.data, eventId }], { causationId: d.registrationKey });
      evolve(this.state, { type: 'NodeLost', data: d.data, position: result.position });
      this.log.warn({ nodeId: d.data.nodeId, nodeHost: this.state.nodes.get(d.data.nodeId)?.hostname, lastSeenAt: d.data.lastSeenAt, affectedAttempts: d.data.affectedAttempts }, 'node lost: no heartbeat within its lease');
    } catch (err) {
      if (!(err instanceof IdempotencyConflictError)) throw err;
      // Declared before (by an earlier run of placement): that NodeLost stands.
      for (const e of await this.store.readStream(streamId)) this.apply(e, 'read');
    }
  }

  /**
   * The operator's cordon, drain or uncordon of a node (decision 0031): recorded on
   * `placement-node-<nodeId>` and applied before the answer, so the next pass already skips (or,
   * uncordoned, uses) the node. An unknown node id is a ValidationError naming `nodeId`; asking for
   * what is already so records nothing (`changed: false`). Who may ask is nats-server's to enforce:
   * only the operator identity and intake (for a key of role operator) may publish the command.
   */
  nodeAdmin(command: NodeAdminCommand, correlationId?: string): Promise<NodeAdminReply> {
    return this.serially(async () => {
      const now = this.clock.now();
      const outcome = decideNodeAdmin(this.state, command, now);
      if (!outcome.ok) {
        this.log.info({ nodeId: command.nodeId, action: command.action, by: command.by, correlationId }, `node ${command.action} refused: ${outcome.message}`);
        throw new ValidationError(outcome.message, [outcome.issue]);
      }
      if (outcome.event) await this.recordNodeEvent(outcome.event, undefined, correlationId);
      else this.log.info({ nodeId: command.nodeId, nodeHost: this.state.nodes.get(command.nodeId)?.hostname, action: command.action, by: command.by, correlationId }, `node ${command.action}: already so, nothing recorded`);
      await this.settleDrains();
      // Uncordoned: the queue may start there now, not at the next event.
      if (outcome.event?.type === 'NodeUncordoned') await this.pass(undefined);
      const node = this.state.nodes.get(command.nodeId)!;
      return {
        node: nodeStatus(this.state, node, now.getTime(), { leaseMs: this.config.GPUNET_NODE_LEASE_MS }),
        changed: outcome.event !== undefined,
        ...(outcome.event ? { event: outcome.event.type } : {}),
      };
    });
  }

  /** Records NodeDrained for every draining node that holds nothing any more (its id from the drain, so a restart writes no second one). */
  private async settleDrains(): Promise<void> {
    for (const d of detectDrained(this.state, this.clock.now())) {
      if (d.type !== 'NodeDrained') continue;
      await this.recordNodeEvent(d, this.writer.eventIdFor(`${d.data.nodeId}@${d.data.requestedAt}`, 'NodeDrained'));
    }
  }

  /** Appends one node event to `placement-node-<nodeId>`, applies it, and logs it with the node and its host. */
  private async recordNodeEvent(d: NodeAdminDecision, eventId?: string, correlationId?: string): Promise<void> {
    const streamId = placementNodeStreamId(d.data.nodeId);
    try {
      const result = await this.writer.append(streamId, [(eventId ? { ...d, eventId } : d) as NewEvent], correlationId ? { correlationId } : {});
      evolve(this.state, { type: d.type, data: d.data, position: result.position } as PlacementEvent);
    } catch (err) {
      if (!(err instanceof IdempotencyConflictError)) throw err;
      // Recorded before (by an earlier run of placement): that event stands.
      for (const e of await this.store.readStream(streamId)) this.apply(e, 'read');
      return;
    }
    const node = this.state.nodes.get(d.data.nodeId);
    const fields = { nodeId: d.data.nodeId, nodeHost: node?.hostname, event: d.type, correlationId };
    switch (d.type) {
      case 'NodeCordoned':
        this.log.info({ ...fields, by: d.data.by, reason: d.data.reason, runningAttempts: d.data.runningAttempts.length }, `node ${d.data.nodeId}${node?.hostname ? ` (${node.hostname})` : ''} cordoned: nothing new is placed there`);
        break;
      case 'NodeDrainRequested':
        this.log.info({ ...fields, by: d.data.by, reason: d.data.reason, runningAttempts: d.data.runningAttempts.length }, `node ${d.data.nodeId}${node?.hostname ? ` (${node.hostname})` : ''} draining: nothing new is placed there, ${d.data.runningAttempts.length} attempt(s) run on`);
        break;
      case 'NodeDrained':
        this.log.info({ ...fields, requestedAt: d.data.requestedAt, afterLoss: d.data.afterLoss }, `node ${d.data.nodeId}${node?.hostname ? ` (${node.hostname})` : ''} drained${d.data.afterLoss ? ' (it was lost while draining)' : ''}: nothing runs there`);
        break;
      case 'NodeUncordoned':
        this.log.info({ ...fields, by: d.data.by, reason: d.data.reason, previous: d.data.previous }, `node ${d.data.nodeId}${node?.hostname ? ` (${node.hostname})` : ''} uncordoned: it takes new work again`);
        break;
    }
  }

  /** Runs `work` after everything queued before it: the one-at-a-time discipline of a global state. */
  private serially<T>(work: () => Promise<T>): Promise<T> {
    const run = this.tail.then(work, work);
    this.tail = run.catch(() => undefined);
    return run;
  }

  /**
   * Loads the snapshot, if there is one to trust, and folds every event placement folds after it,
   * up to the head as it was at the start of the read. The state then is exactly the fold of the
   * store up to the last event read: saved as the snapshot at once (before any pass changes it),
   * so the next start folds none of these events again.
   */
  private async fold(): Promise<{ events: number; snapshot?: { position: bigint } }> {
    this.snapshots = await PlacementSnapshots.open(this.store, stateOptionsOf(this.config), () => this.clock.now().getTime(), this.log);
    const loaded = await this.snapshots?.load();
    if (loaded) {
      // Into the state the metrics and controllers already hold.
      Object.assign(this.state, loaded.fold.state);
      for (const [k, v] of loaded.fold.revisions) this.revisions.set(k, v);
      for (const [k, v] of loaded.fold.correlations) this.correlations.set(k, v);
      for (const [k, v] of loaded.fold.traces) this.traces.set(k, v);
    }
    const head = await this.store.headPosition();
    const folded = await this.folder.foldStore(this.store, loaded?.checkpoint.position ?? 0n, head, this.log);
    this.foldedHead = head;
    if (this.snapshots && folded.last) {
      const snapshots = this.snapshots;
      const from = loaded?.checkpoint ?? (await snapshots.checkpoint());
      const to = folded.last;
      // Serialized now, before the first pass changes the state; a state too large to serialize
      // (every job ever run is in it) must not stop the start.
      let text: string | undefined;
      try {
        text = this.folder.encode();
      } catch (err) {
        // Steps would fold the whole store again only to fail the same way: none for this process.
        this.snapshots = undefined;
        this.log.warn({ err, jobs: this.state.jobs.size }, 'placement snapshot not saved and not moved on by this process: the state could not be serialized; the next start folds these events again');
      }
      if (text === undefined) return { events: folded.events, ...(loaded ? { snapshot: { position: loaded.checkpoint.position } } : {}) };
      const bytes = text.length;
      this.snapshotting = snapshots
        .saveText(from, to, text)
        .then((saved) => this.log.info({ position: to.position.toString(), saved, bytes }, saved ? 'placement snapshot saved' : 'placement snapshot not saved: another placement moved it first'))
        .catch((err: unknown) => this.log.warn({ err }, 'placement snapshot not saved; the next start folds these events again'))
        .finally(() => {
          this.snapshotting = undefined;
        });
    }
    return { events: folded.events, ...(loaded ? { snapshot: { position: loaded.checkpoint.position } } : {}) };
  }

  /**
   * Records the quotes just shown (JobQuoted, `quotes.ts`) before they are answered, so a quote
   * given is a fact of the job's record; one already quoted, or placed meanwhile, is skipped.
   */
  recordQuotes(decisions: readonly PlacementDecision[]): Promise<void> {
    return this.serially(async () => {
      for (const d of decisions) {
        const job = this.state.jobs.get(d.data.jobId);
        if (!job || job.quote || job.attempts.length > 0) continue;
        // A conflict means the stream moved on (caught up): the job may be placed by now, so no retry.
        await this.record(d, undefined, this.log);
      }
    });
  }

  /** Applies one recorded event (see {@link PlacementFold.apply}): false for the echo of a decision already applied. */
  private apply(e: Pick<RecordedEvent, 'type' | 'data' | 'position' | 'streamId' | 'revision' | 'metadata'>, source: 'bus' | 'read'): boolean {
    return this.folder.apply(e, source);
  }

  /** Decides and records until nothing is left to decide (normally one pass). */
  private async pass(cause: BusEvent | undefined, log: Logger = this.log): Promise<void> {
    // Whatever was applied so far is decided on now (a failure leaves it owed: the next pass retries).
    const owed = this.owed;
    this.owed = 0;
    clearTimeout(this.owedTimer);
    this.owedTimer = undefined;
    try {
      await this.passes(cause, log);
    } catch (err) {
      this.owed += owed;
      throw err;
    }
  }

  private async passes(cause: BusEvent | undefined, log: Logger): Promise<void> {
    for (let n = 0; n < MAX_PASSES; n++) {
      const now = this.clock.now();
      this.lastPassAt = now.getTime();
      const started = performance.now();
      const decisions = decide(this.state, now, { plan: this.planOptions });
      this.metrics.passSeconds.observe({ decisions: decisions.length === 0 ? 'none' : 'some' }, (performance.now() - started) / 1000);
      if (decisions.length === 0) return;
      for (const d of decisions) {
        if (!(await this.record(d, cause, log))) break; // caught up after a conflict: decide again
      }
    }
    log.warn({ passes: MAX_PASSES }, 'still deciding after the most passes per event; the next event continues');
    this.owed++; // even if the next event changes nothing (an echo), it runs a pass
  }

  /** Appends one decision and applies it. False when the stream had moved on (placement caught up instead). */
  private async record(d: PlacementDecision, cause: BusEvent | undefined, log: Logger): Promise<boolean> {
    const jobId = d.data.jobId;
    const streamId = placementJobStreamId(jobId);
    const revision = this.revisions.get(jobId);
    const team = this.state.jobs.get(jobId)?.team ?? cause?.metadata.team;
    const correlationId = this.correlations.get(jobId) ?? cause?.metadata.correlationId;
    // Ids derive from the cause; the correlation is the job's own, so its whole trail stays together.
    const causeOfRecord: Cause | undefined = cause && { eventId: cause.eventId, metadata: { correlationId: correlationId ?? cause.metadata.correlationId } };
    try {
      const append = () =>
        this.writer.append(streamId, [{ ...d, discriminator: discriminatorOf(d) }], {
          expectedRevision: revision ?? 'no_stream',
          ...(causeOfRecord ? { cause: causeOfRecord } : correlationId ? { correlationId } : {}),
          jobId,
          // The job's team, so the event's subject and the team's feed carry it (the decision's data has none).
          ...(team ? { team } : {}),
        });
      // A decision is a span of its own job's trace: under the handler's span when the event in hand
      // is that job's, else under the job's latest known context.
      const result = tracingEnabled()
        ? await inSpan(`placement ${d.type}`, { ...(cause?.metadata.jobId === jobId ? {} : { parent: contextFromFields(this.traces.get(jobId)) }), attributes: { 'gpunet.job_id': jobId } }, append)
        : await append();
      this.folder.recorded({ type: d.type, data: d.data, position: result.position } as PlacementEvent, jobId, result.nextExpectedRevision);
      log.info({ jobId, correlationId, decision: d.type, ...summary(d), ...(d.type === 'JobPlaced' ? { nodeHost: this.state.nodes.get(d.data.nodeId)?.hostname } : {}) }, describe(d));
      return true;
    } catch (err) {
      if (!(err instanceof WrongExpectedVersionError) && !(err instanceof IdempotencyConflictError)) throw err;
      log.warn({ jobId, correlationId, decision: d.type, err: (err as Error).message }, 'placement stream moved on: catching up before deciding again');
      await this.catchUp(jobId);
      return false;
    }
  }

  /** Applies what the job's placement stream holds beyond what placement saw. */
  private async catchUp(jobId: string): Promise<void> {
    const from = (this.revisions.get(jobId) ?? -1n) + 1n;
    for (const e of await this.store.readStream(placementJobStreamId(jobId), { fromRevision: from })) this.apply(e, 'read');
  }
}

/** Tells apart events of one type caused by one event: one per attempt or per job. */
function discriminatorOf(d: PlacementDecision): string {
  switch (d.type) {
    case 'JobPlaced':
      return d.data.attemptId;
    case 'JobRequeued':
      return d.data.previousAttemptId;
    default:
      return d.data.jobId;
  }
}

function summary(d: PlacementDecision): Record<string, unknown> {
  switch (d.type) {
    case 'JobPlaced':
      return { attemptId: d.data.attemptId, nodeId: d.data.nodeId, gpuIndices: d.data.gpuIndices, gpuModel: d.data.gpuModel };
    case 'JobRequeued':
      return { previousAttemptId: d.data.previousAttemptId, nextAttempt: d.data.nextAttempt };
    case 'JobWithdrawn':
      return { outcome: d.data.outcome };
    case 'JobRejected':
      return { reason: d.data.reason, message: d.data.message };
    case 'JobQuoted':
      return { expectedStart: d.data.expectedStart };
  }
}

function describe(d: PlacementDecision): string {
  switch (d.type) {
    case 'JobPlaced':
      return 'job placed';
    case 'JobRequeued':
      return d.data.reason === 'retry' ? 'job requeued: its retry policy names the exit code' : 'job requeued after its node was lost';
    case 'JobWithdrawn':
      return 'queued job withdrawn';
    case 'JobRejected':
      return 'job rejected: no node can hold it';
    case 'JobQuoted':
      return 'expected start quoted';
  }
}
