import { BlobStore } from '#blobs';
import { heartbeatSubject, stopsGang, type JobCancelRequested, type JobFinished, type JobPlaced, type NodeLost } from '#contracts';
import { isRetryable } from '#errors';
import type { EventStore } from '#event-store';
import { loadIdentityFile } from '#identity';
import type { BusEvent } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, METRICS, NATS_CONNECTION, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import type { Metrics } from '#telemetry';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable, type BeforeApplicationShutdown, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  foldAttempt,
  heartbeat,
  nodeGpus,
  nodeStreamId,
  placementConflicts,
  placementOn,
  recoveryStep,
  registration,
  attemptStreamId,
  type GpuHolders,
  type NodeGpus,
  type Placement,
  type RecordedAttemptEvent,
} from '../domain/index.js';
import { workDirOf, type ExecutionConfig } from '../execution.config.js';
import { detectGpus, removeRunDirs, removeStaleCgroups } from '../run/index.js';
import { InputCache, type CacheRemoval } from '../staging/input-cache.js';
import { NodeData } from '../staging/node-data.js';
import { AttemptHandle } from './attempt-handle.js';
import { AttemptRunner, readJobFacts, type AgentContext } from './attempt-runner.js';
import { killLeftoverGroup } from './leftover-process.js';
import { removeContainer, removeLoadedArchives } from './container-work.js';
import { NodeConfinement } from './node-confinement.js';
import { checkpointAfter, recoveryCheckpointId, scanForRecovery } from './recovery-scan.js';
import { workCopyStreamId } from '../journal/journal.js';

const AGENT_VERSION = '0.1.0';
/** Cancelled jobs remembered for a JobPlaced that may still follow (the store is asked too). */
const MAX_REMEMBERED_CANCELS = 10_000;

/**
 * The node agent: registers the node, heartbeats, recovers what a previous run left, takes
 * placements for this node and drives each attempt (see AttemptRunner), and stops cleanly.
 *
 * Lifecycle (Nest hooks, in the kit's order):
 * - bootstrap (before anything is consumed): detect GPUs, recover, `NodeRegistered`, heartbeats;
 * - before shutdown (consumers still open): take no more placements, stop heartbeats, stop every
 *   attempt with `node_lost` ('agent stopped', not billed; placement requeues the job);
 * - shutdown (consumers closed): wait for the attempts to be released, bounded.
 */
@Injectable()
export class NodeAgentService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  readonly nodeId: string;
  private readonly workDir: string;
  private node: NodeGpus | undefined;
  private ctx: AgentContext | undefined;
  private readonly attempts = new Map<string, AttemptRunner>();
  private readonly cancelled = new Map<string, JobCancelRequested>();
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private sequence = 0;
  private draining = false;

  constructor(
    @Inject(SERVICE_CONFIG) private readonly config: ExecutionConfig,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(METRICS) metrics: Metrics,
  ) {
    this.instrument(metrics);
    this.nodeId = config.GPUNET_NODE_ID;
    this.workDir = resolve(workDirOf(config));
  }

  private now = (): string => this.clock.now().toISOString();

  /**
   * The node's own view on `/metrics`, read when scraped: its GPUs held by attempts not yet
   * released and free, by model, and the attempts it runs. Placement's `gpunet_gpus` is the
   * network's view of the same GPUs; a difference between them is worth a look.
   */
  private instrument(metrics: Metrics): void {
    const node = () => this.node;
    const holders = () => this.holders();
    const attempts = this.attempts;
    metrics.gauge({
      name: 'gpunet_agent_gpus',
      help: 'This node\'s GPUs by model and state (held by an attempt not yet released; free), as its agent sees them.',
      labelNames: ['model', 'state'],
      collect() {
        const gpus = node()?.gpus;
        if (!gpus) return;
        const held = holders();
        this.reset();
        for (const g of gpus) {
          this.inc({ model: g.model, state: held.has(g.index) ? 'held' : 'free' }, 1);
          this.inc({ model: g.model, state: held.has(g.index) ? 'free' : 'held' }, 0);
        }
      },
    });
    metrics.gauge({
      name: 'gpunet_agent_attempts',
      help: 'Attempts this agent has in hand, not yet released.',
      collect() {
        let n = 0;
        for (const runner of attempts.values()) if (runner.handle.state.phase !== 'released') n++;
        this.set(n);
      },
    });
    this.heartbeatsSent = metrics.counter({ name: 'gpunet_agent_heartbeats_total', help: 'Heartbeats this agent published.' });
  }
  private heartbeatsSent: { inc(): void } | undefined;

  /** GPU index → the attempt holding it, for every attempt not yet released. */
  private holders(): GpuHolders {
    const map = new Map<number, { jobId: string; attemptId: string }>();
    for (const runner of this.attempts.values()) {
      const { placement, phase } = runner.handle.state;
      if (phase === 'released') continue;
      for (const i of placement.gpuIndices) map.set(i, { jobId: placement.jobId, attemptId: placement.attemptId });
    }
    return map;
  }

  async onApplicationBootstrap(): Promise<void> {
    const found = await detectGpus({ command: this.config.GPUNET_NVIDIA_SMI });
    this.node = nodeGpus(found, this.config.GPUNET_GPUS, this.config.GPUNET_GPU_MODEL);
    // Its own bucket only (decision 0025): storage copies checkpoints in, outputs and checkpoints out; inputs are read through storage (decision 0036).
    const blobs = await BlobStore.open(this.nc, { node: this.nodeId, create: false });
    const nodeData = new NodeData(this.nc, this.nodeId, this.config.GPUNET_NODE_DATA_TIMEOUT_MS);
    this.ctx = {
      nodeId: this.nodeId,
      workDir: this.workDir,
      config: this.config,
      store: this.store,
      clock: this.clock,
      nc: this.nc,
      js: jetstream(this.nc),
      blobs,
      nodeData,
      identity: await loadIdentityFile(this.config.GPUNET_NATS_NKEY_FILE!),
      cache: new InputCache(blobs, join(this.workDir, 'cache'), {
        onRemoved: (r) => this.recordCacheRemoval(r),
        onAdded: () => this.beatSoon(),
        prepare: async (_team, attempt, shas) => void (await nodeData.stage(attempt.jobId, attempt.attemptId, shas)),
        // First stages read through storage from the team's bucket (decision 0036): no copy into the node's.
        read: async (team, attempt, blob, dest, mode) => void (await nodeData.readTo(attempt.jobId, attempt.attemptId, team, blob.sha256, dest, { size: blob.size, mode })),
        ...(this.config.GPUNET_CACHE_MAX_BYTES !== undefined && { maxBytes: this.config.GPUNET_CACHE_MAX_BYTES }),
      }),
      confine: await NodeConfinement.detect(this.config, this.workDir, this.logger, this.node.gpus.length),
    };
    await this.recover();
    await this.writer.append(nodeStreamId(this.nodeId), [
      {
        type: 'NodeRegistered',
        data: registration({
          nodeId: this.nodeId,
          node: this.node,
          hostname: hostname(),
          agentVersion: AGENT_VERSION,
          networkIsolation: this.ctx.confine.networkIsolation,
          containerRuntimes: [...this.ctx.confine.containerRuntimes],
          heartbeatIntervalMs: this.config.GPUNET_HEARTBEAT_MS,
          at: this.now(),
        }),
      },
    ]);
    this.beat();
    this.heartbeatTimer = setInterval(() => this.beat(), this.config.GPUNET_HEARTBEAT_MS);
    this.logger.info({ nodeId: this.nodeId, gpus: this.node.gpus.length, simulated: this.node.simulated, workDir: this.workDir }, 'node registered');
  }

  /**
   * Keeps a copy of a control-plane event this node received as work in the journal, under
   * `work-<its stream>` with its own id (a redelivered copy changes nothing): the placement for
   * recovery, the job's spec and cancel, the job's last checkpoint. Never reported back.
   */
  async keepCopy(event: BusEvent): Promise<void> {
    if (!event.streamId) throw new Error(`work message ${event.eventId} (${event.type}) has no streamId: not a copy of a recorded event`);
    await this.store.appendToStream(workCopyStreamId(event.streamId), [{ eventId: event.eventId, type: event.type, data: event.data, metadata: event.metadata }]);
  }

  /** A node cache removal as `DataRemoved` (scope `node_cache`) on the node's stream. */
  private async recordCacheRemoval(r: CacheRemoval): Promise<void> {
    this.beatSoon();
    // An image archive that leaves the cache takes the image loaded from it along (decision 0019).
    for (const runtime of this.ctx?.confine.containerRuntimes ?? []) {
      const gone = await removeLoadedArchives(runtime, r.blobs.map((b) => b.sha256), runtime === 'podman' ? this.ctx!.confine.containers.podmanArgs : []);
      if (gone.length > 0) this.logger.info({ runtime, archives: gone, reason: r.reason }, 'loaded images removed with their cached archives');
    }
    await this.writer.append(nodeStreamId(this.nodeId), [
      { type: 'DataRemoved', data: { ...(r.jobId ? { jobId: r.jobId } : {}), scope: 'node_cache', nodeId: this.nodeId, blobs: [...r.blobs], reason: r.reason, removedAt: this.now() } },
    ], { team: r.team });
  }

  private beatPending = false;

  /** One heartbeat on the next turn, however many changes ask for it in this one (a folder input adds many blobs). */
  private beatSoon(): void {
    if (this.beatPending) return;
    this.beatPending = true;
    setImmediate(() => {
      this.beatPending = false;
      this.beat();
    });
  }

  private beat(): void {
    if (!this.node || this.nc.isClosed()) return;
    const data = { ...heartbeat({ nodeId: this.nodeId, node: this.node, holders: this.holders(), sequence: this.sequence++, at: this.now() }), cachedData: this.ctx?.cache.held() ?? [] };
    try {
      this.nc.publish(heartbeatSubject(this.nodeId), JSON.stringify(data));
      this.heartbeatsSent?.inc();
    } catch (err) {
      this.logger.warn({ err }, 'heartbeat not sent');
    }
  }

  /**
   * Finishes what a previous run of this agent left: attempts placed or held here and never
   * finished end `node_lost` (their leftover process group killed first) and are released;
   * finished ones get their outputs step and release in the background. Stale run directories go.
   */
  private async recover(): Promise<void> {
    const scan = await scanForRecovery(this.store, this.nodeId);
    const log = this.logger.child({ step: 'recovery' });
    for (const state of scan.attempts) {
      const { jobId, attemptId } = state.placement;
      const cause = scan.causes.get(attemptId)!;
      const alog = log.child({ jobId, attemptId, correlationId: cause.metadata.correlationId });
      const handle = new AttemptHandle(state, cause, this.writer, alog, cause.metadata.team);
      const runner = new AttemptRunner(this.ctx!, handle, undefined);
      const step = recoveryStep(state);
      if (step === 'abandon') {
        const runRoot = join(this.workDir, 'runs', jobId, attemptId);
        const leftover = await killLeftoverGroup(runRoot, attemptId);
        // A container outlives its killed client: removed by its name (nothing happens when there is none).
        for (const runtime of this.ctx!.confine.containerRuntimes) await removeContainer(runtime, attemptId, runtime === 'podman' ? this.ctx!.confine.containers.podmanArgs : []);
        // What escaped the process group dies with the run's cgroups. Only this run's: an agent
        // removes no group its own journal does not name (another agent may share the node id).
        if ((await removeStaleCgroups(this.ctx!.confine.cgroupBases, this.nodeId, new Set([attemptId]))) > 0) alog.warn('removed the cgroups the previous agent left for this run');
        alog.warn({ phase: state.phase, leftover }, 'attempt lost with the previous agent: finishing it node_lost');
        await handle.execute({ type: 'Abandon', reason: `agent restarted: the attempt was ${state.phase} when the previous agent stopped (${leftover.kind === 'killed' ? `its process group ${leftover.pgid} was killed` : leftover.detail})`, at: this.now() });
      } else {
        alog.info({ phase: state.phase, step }, 'resuming a finished attempt');
      }
      this.attempts.set(attemptId, runner);
      handle.done = runner.complete().finally(() => this.attempts.delete(attemptId));
      if (step === 'abandon') await handle.done; // released before anything new is placed here
    }
    const stillOpen = [...this.attempts.keys()];
    await this.store.saveCheckpoint(recoveryCheckpointId(this.nodeId), checkpointAfter(scan, stillOpen));
    await this.removeStaleRunDirs(new Set(stillOpen));
    if (scan.attempts.length > 0) log.info({ recovered: scan.attempts.length, resuming: stillOpen.length }, 'recovery done');
  }

  /** Run directories of attempts that are not active: released ones whose removal was interrupted. */
  private async removeStaleRunDirs(active: ReadonlySet<string>): Promise<void> {
    const runs = join(this.workDir, 'runs');
    if (!existsSync(runs)) return;
    for (const job of await readdir(runs)) {
      for (const attempt of await readdir(join(runs, job)).catch(() => [] as string[])) {
        if (!active.has(attempt)) await removeRunDirs({ root: join(runs, job, attempt) }).catch(() => undefined);
      }
      await readdir(join(runs, job)).then((left) => (left.length === 0 ? removeRunDirs({ root: join(runs, job) }) : undefined)).catch(() => undefined);
    }
  }

  /**
   * A placement for this node: stage, hold, start the run in the background. Resolves once the
   * attempt either holds its GPUs (ComputeHeld recorded) or has ended without holding them, so
   * the JobPlaced is acknowledged only then; a crash in between is covered by recovery.
   */
  async place(placed: JobPlaced, event: BusEvent, log: Logger): Promise<void> {
    // This node's part: the whole attempt, or one node of a multi-node gang.
    const placement: Placement | undefined = placementOn(placed, this.nodeId);
    if (!placement) return;
    if (this.attempts.has(placed.attemptId)) {
      log.info({ attemptId: placed.attemptId }, 'placement already being handled');
      return;
    }
    const recorded = await this.store.readStream(attemptStreamId(this.nodeId, placed.attemptId));
    const state = foldAttempt(placement, recorded.map((e) => ({ type: e.type, data: e.data }) as RecordedAttemptEvent));
    const alog = log.child({ attemptId: placed.attemptId });
    const job = await readJobFacts(this.store, placed.jobId);
    const handle = new AttemptHandle(state, event, this.writer, alog, job?.team ?? event.metadata.team);
    const remembered = this.cancelled.get(placed.jobId);
    const runner = new AttemptRunner(this.ctx!, handle, job && remembered && !job.cancel ? { ...job, cancel: remembered } : job);

    if (state.phase !== 'placed' && recoveryStep(state) === 'none') return; // released long ago: a late redelivery

    // From here to `set` nothing is awaited: the conflict check and taking the GPUs are one step,
    // and a stop that starts later finds the attempt in the map.
    const conflicts = state.phase === 'placed' ? placementConflicts(this.node!, this.holders(), placement) : [];
    this.attempts.set(placed.attemptId, runner);
    try {
      if (state.phase !== 'placed') {
        // Handled by an earlier run of this agent and not finished by its recovery (its JobPlaced
        // was not yet readable then): the process is gone with that agent.
        alog.warn({ phase: state.phase }, 'placement found half-done outside recovery: finishing it');
        await handle.execute({ type: 'Abandon', reason: 'agent restarted: the attempt was lost with the previous agent', at: this.now() });
      } else if (this.draining) {
        await handle.stop('node_lost', 'agent stopping: placement not taken', this.now);
      } else if (conflicts.length > 0) {
        alog.error({ conflicts }, 'placement refused: GPUs not available here');
        await handle.execute({ type: 'Finish', outcome: 'failed', exitCode: null, signal: null, message: `placement refused by node ${this.nodeId}: ${conflicts.join('; ')}`, at: this.now() });
      } else {
        const held = await runner.prepare();
        alog.info({ held, phase: handle.state.phase }, held ? 'compute held' : 'attempt ended before holding compute');
      }
    } catch (err) {
      if (handle.state.recorded === state.recorded && isRetryable(err)) {
        // Nothing recorded yet: forget the attempt and let the bus redeliver the placement.
        this.attempts.delete(placed.attemptId);
        await runner.discard().catch(() => undefined);
        throw err;
      }
      alog.error({ err }, 'placement could not be prepared');
      await handle.execute((s) =>
        s.finished ? undefined : { type: 'Finish', outcome: 'failed', exitCode: null, signal: null, message: `the agent could not prepare the job: ${(err as Error).message}`, at: this.now() },
      );
    } finally {
      if (this.attempts.get(placed.attemptId) === runner) handle.done = runner.complete().finally(() => this.attempts.delete(placed.attemptId));
    }
  }

  /** A cancel request: stops this job's attempt if it is here; remembered in case its placement comes later. */
  async cancel(request: JobCancelRequested, log: Logger): Promise<void> {
    const reason = request.reason ?? 'cancelled by request';
    const runners = [...this.attempts.values()].filter((r) => r.handle.jobId === request.jobId);
    if (runners.length === 0) {
      this.cancelled.set(request.jobId, request);
      if (this.cancelled.size > MAX_REMEMBERED_CANCELS) this.cancelled.delete(this.cancelled.keys().next().value!);
      return;
    }
    for (const runner of runners) {
      log.info({ attemptId: runner.handle.attemptId, phase: runner.handle.state.phase }, 'cancelling attempt');
      await runner.handle.stop('cancelled', reason, this.now);
    }
  }

  /**
   * Another part of a gang this node runs a part of has ended: when it was rank 0, or it did not
   * complete on its own, this node's part stops too (`peerEnded`), so a gang never runs on half its nodes.
   */
  async peerFinished(finished: JobFinished, log: Logger): Promise<void> {
    if (finished.nodeId === this.nodeId) return;
    const runner = this.attempts.get(finished.attemptId);
    const gang = runner?.handle.state.placement.gangNodes;
    if (!runner || !gang || runner.handle.state.finished !== undefined) return;
    const rank = gang.indexOf(finished.nodeId);
    if (rank < 0 || !stopsGang(finished, rank)) return;
    const why = rank === 0 ? `rank 0 on ${finished.nodeId} ended (${finished.outcome})` : `the part on ${finished.nodeId} (rank ${rank}) ended ${finished.outcome}`;
    log.info({ attemptId: finished.attemptId, peer: finished.nodeId, outcome: finished.outcome }, 'stopping this gang part: another part ended');
    await runner.handle.stop('cancelled', `stopped: ${why}`, this.now, finished.nodeId);
  }

  /** A node of a gang this node runs a part of was lost: this part stops too; placement requeues the job. */
  async peerLost(lost: NodeLost, log: Logger): Promise<void> {
    if (lost.nodeId === this.nodeId) return;
    for (const runner of this.attempts.values()) {
      const gang = runner.handle.state.placement.gangNodes;
      if (!gang?.includes(lost.nodeId) || runner.handle.state.finished !== undefined) continue;
      log.warn({ attemptId: runner.handle.attemptId, peer: lost.nodeId }, 'stopping this gang part: another node of the gang was lost');
      await runner.handle.stop('cancelled', `stopped: node ${lost.nodeId} of the gang was lost`, this.now, lost.nodeId);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.draining = true;
    clearInterval(this.heartbeatTimer);
    const active = [...this.attempts.values()].filter((r) => r.handle.state.finished === undefined);
    if (active.length === 0) return;
    this.logger.info({ attempts: active.length }, 'agent stopping: stopping running attempts (node_lost, not billed)');
    await Promise.all(active.map((r) => r.handle.stop('node_lost', 'agent stopped', this.now).catch((err: unknown) => r.handle.log.error({ err }, 'stop failed'))));
    // Jobs get a short grace to exit on SIGTERM; then their groups are killed so the stop takes seconds.
    const grace = sleep(this.config.GPUNET_SHUTDOWN_GRACE_MS, 'grace' as const);
    const settled = Promise.all(active.map((r) => r.handle.done)).then(() => 'done' as const);
    if ((await Promise.race([grace, settled])) === 'grace') for (const r of active) if (r.handle.state.phase === 'running') r.killNow();
  }

  async onApplicationShutdown(): Promise<void> {
    // Outputs of attempts that finished just before the stop may still be uploading: they get a
    // bounded wait; what is unfinished then is resumed by the next start's recovery.
    const pending = [...this.attempts.values()].map((r) => r.handle.done);
    if (pending.length === 0) return;
    const waited = await Promise.race([Promise.all(pending).then(() => true), sleep(10_000, false)]);
    if (!waited) this.logger.warn({ attempts: [...this.attempts.keys()] }, 'attempts left for the next start to resume');
  }
}
