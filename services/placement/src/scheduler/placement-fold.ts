/**
 * Placement's fold of the store: the state (`domain/state.ts`) and the bookkeeping of its own
 * streams (the revision of each `placement-job-<jobId>` last seen, each job's correlation id and
 * trace context), applied one recorded event at a time. The scheduler folds with it at start and
 * applies bus events with it; snapshots (decision 0037) are made with it too, so a state loaded
 * from a snapshot and a state folded from zero come from one piece of code.
 *
 * A snapshot holds what the fold derives from events only: a node's heartbeats and when this
 * process saw its registration are this process's observations, not history, and are left out
 * (on load every registered node gets a whole lease from then, as a fold from zero gives it).
 */
import { validateEventData } from '#contracts';
import type { EventStore, ProjectionCheckpoint, RecordedEvent } from '#event-store';
import { tracingEnabled } from '#telemetry';
import type { Logger } from 'pino';
import { evolve, forgetEnded, initialState, isPlacementEventType, jobIdOfPlacementStream, PLACEMENT_EVENT_TYPES, type JobRecord, type PlacementEvent, type PlacementState, type StateOptions } from '../domain/index.js';
import { observeRegistration } from '../domain/node-loss.js';

/** Events read per page when folding the store. */
const FOLD_PAGE = 5_000;

/** The snapshot's name in the store's database (`projection_snapshot_placement`). */
export const PLACEMENT_SNAPSHOT = 'placement';
/**
 * Format of placement's snapshot: bump it whenever the state or the bookkeeping changes shape or
 * meaning (a field added to `PlacementState`, an `evolve` that folds an event differently). A
 * snapshot of another format is ignored and the store folded from zero.
 */
export const PLACEMENT_SNAPSHOT_FORMAT = 2;

type Applicable = Pick<RecordedEvent, 'type' | 'data' | 'position' | 'streamId' | 'revision' | 'metadata'>;

/** What a fold of the store went through. */
export interface FoldResult {
  /** Events applied. */
  events: number;
  /** The last placement event read (applied, or skipped as unreadable): what a snapshot of this fold holds. Undefined: none read. */
  last?: ProjectionCheckpoint;
}

export class PlacementFold {
  /** Last revision of each `placement-job-<jobId>` stream seen: the next append's expectedRevision. */
  readonly revisions = new Map<string, bigint>();
  /** Correlation id of each job's JobSubmitted, so placement's events join the job's trail. */
  readonly correlations = new Map<string, string>();
  /**
   * With tracing on: the trace context of each job's latest event applied, so a decision about
   * job B made while handling job A's event joins B's trace, not A's.
   */
  readonly traces = new Map<string, { traceparent?: string; tracestate?: string }>();

  constructor(
    readonly state: PlacementState,
    /** Placement's clock (epoch ms): when a registration was seen. */
    private readonly now: () => number,
  ) {}

  /**
   * Own decisions applied before the bus brought them back: job id → the revision of the last such
   * event on its `placement-job-<jobId>` stream. An ended job stays in memory while it has one:
   * its echo must still find the job (a JobPlaced echoed for a job forgotten would hold GPUs for
   * good). This process's own observation, never in a snapshot: a start folds the store up to its
   * head, and the bus brings nothing at or below that.
   */
  private readonly unechoed = new Map<string, bigint>();

  /**
   * Applies one recorded event to the state and to the bookkeeping of placement's own streams.
   * False for the echo of a decision placement already applied when it wrote it (its own stream,
   * at or below the revision it last saw there): the state is as it was, so no pass is owed.
   *
   * `source` says where the event came from: the fold of the store (`store`, the default), the
   * bus (`bus`), or a read of a stream while running (`read`: the bus brings it again later).
   * A job that has ended is then forgotten (`forgetEnded`, decision 0043) unless an echo is
   * still to come, and the bookkeeping of a job placement does not know is dropped.
   */
  apply(e: Applicable, source: 'store' | 'bus' | 'read' = 'store'): boolean {
    if (!isPlacementEventType(e.type) || e.position === undefined) return false;
    if (e.type === 'JobSubmitted' && e.metadata?.jobId) this.correlations.set(e.metadata.jobId, e.metadata.correlationId);
    const own = e.streamId === undefined ? undefined : jobIdOfPlacementStream(e.streamId);
    const echo = own !== undefined && e.revision !== undefined && (this.revisions.get(own) ?? -1n) >= e.revision;
    if (own !== undefined && e.revision !== undefined) {
      if (!echo) this.revisions.set(own, e.revision);
      if (source === 'read') this.awaitEcho(own, e.revision);
      else if (source === 'bus' && (this.unechoed.get(own) ?? e.revision + 1n) <= e.revision) this.unechoed.delete(own);
    }
    evolve(this.state, { type: e.type, data: e.data, position: e.position } as PlacementEvent);
    const jobId = e.metadata?.jobId ?? (e.data as { jobId?: unknown }).jobId;
    if (typeof jobId === 'string') {
      if (e.metadata?.traceparent && tracingEnabled() && this.state.jobs.get(jobId)?.phase !== 'ended') {
        this.traces.set(jobId, { traceparent: e.metadata.traceparent, ...(e.metadata.tracestate ? { tracestate: e.metadata.tracestate } : {}) });
      }
      this.settle(jobId);
    }
    // A registration is a sign of life: the node gets a whole lease for its first heartbeat here.
    if (e.type === 'NodeRegistered') observeRegistration(this.state, (e.data as { nodeId: string }).nodeId, this.now());
    return !echo;
  }

  /**
   * Applies a decision placement just appended to `placement-job-<jobId>` at `revision`: the
   * next append expects that revision, and the job is kept until the bus brings the event back.
   */
  recorded(event: PlacementEvent, jobId: string, revision: bigint): void {
    this.revisions.set(jobId, revision);
    this.awaitEcho(jobId, revision);
    evolve(this.state, event);
  }

  /** Jobs kept only for an echo still to come (a figure for tests and logs). */
  get awaitingEcho(): number {
    return this.unechoed.size;
  }

  private awaitEcho(jobId: string, revision: bigint): void {
    if ((this.unechoed.get(jobId) ?? -1n) < revision) this.unechoed.set(jobId, revision);
  }

  /** Forgets the job if it has ended and no echo is due, and drops the bookkeeping of a job not known. */
  private settle(jobId: string): void {
    if (this.unechoed.has(jobId)) return;
    const job = this.state.jobs.get(jobId);
    if (job && job.phase !== 'ended') return;
    if (job) forgetEnded(this.state, jobId);
    this.revisions.delete(jobId);
    this.correlations.delete(jobId);
    this.traces.delete(jobId);
  }

  /** Applies every event placement folds after position `from` up to `to` (inclusive), in store order. */
  async foldStore(store: EventStore, from: bigint, to: bigint, log: Logger): Promise<FoldResult> {
    let events = 0;
    let last: ProjectionCheckpoint | undefined;
    for (let at = from; at < to; ) {
      const page = await store.readAll({ fromPosition: at, toPosition: to, maxCount: FOLD_PAGE, filter: { types: PLACEMENT_EVENT_TYPES } });
      for (const e of page) {
        last = { position: e.position, eventId: e.eventId };
        const checked = validateEventData(e.type, e.data);
        if (!checked.ok) {
          // A recorded fact placement cannot read: say so loudly, never guess its meaning.
          log.error({ eventId: e.eventId, type: e.type, position: e.position.toString(), issues: checked.issues }, 'stored event does not match its contract; not applied');
          continue;
        }
        this.apply({ ...e, data: checked.value });
        events++;
      }
      if (page.length < FOLD_PAGE) break;
      at = page[page.length - 1]!.position;
    }
    return { events, ...(last ? { last } : {}) };
  }

  /**
   * The fold as snapshot text: every field of the state and the bookkeeping (Maps, Sets and
   * bigints tagged), the queue as job ids, without this process's observations of nodes.
   */
  encode(): string {
    const { queue, registeredCache: _cache, ...rest } = this.state;
    const nodes = new Map([...this.state.nodes].map(([id, n]) => {
      const { lastHeartbeatAt: _a, lastHeartbeatSequence: _s, lastHeartbeatSentAt: _t, registrationSeenAt: _r, cachedData: _c, ...kept } = n;
      return [id, kept];
    }));
    const doc = { state: { ...rest, nodes, queue: queue.map((j) => j.jobId) }, revisions: this.revisions, correlations: this.correlations, traces: this.traces };
    return JSON.stringify(doc, (_key, value: unknown) => {
      if (typeof value === 'bigint') return { $bigint: value.toString() };
      if (value instanceof Map) return { $map: [...value] };
      if (value instanceof Set) return { $set: [...value] };
      return value;
    });
  }

  /**
   * A fold from snapshot text made by {@link encode} (of {@link PLACEMENT_SNAPSHOT_FORMAT}).
   * Throws when the text is not such a snapshot, or when it was folded with another fair-share
   * half-life than `options` asks (usage decays as it is folded: that history would read otherwise).
   */
  static decode(text: string, options: StateOptions, now: () => number): PlacementFold {
    const doc = JSON.parse(text, (_key, value: unknown) => {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        const tagged = value as { $bigint?: string; $map?: [unknown, unknown][]; $set?: unknown[] };
        if (typeof tagged.$bigint === 'string') return BigInt(tagged.$bigint);
        if (Array.isArray(tagged.$map)) return new Map(tagged.$map);
        if (Array.isArray(tagged.$set)) return new Set(tagged.$set);
      }
      return value;
    }) as { state: Omit<PlacementState, 'queue'> & { queue: string[] }; revisions: Map<string, bigint>; correlations: Map<string, string>; traces: Map<string, { traceparent?: string; tracestate?: string }> };
    const fresh = initialState(options);
    const saved = doc.state;
    if (!(saved?.nodes instanceof Map) || !(saved.jobs instanceof Map) || !Array.isArray(saved.queue) || typeof saved.position !== 'bigint') throw new Error('not a placement snapshot: state.nodes, jobs, queue or position missing');
    if (saved.usageHalfLifeMs !== fresh.usageHalfLifeMs) throw new Error(`folded with a fair-share half-life of ${saved.usageHalfLifeMs} ms, this placement uses ${fresh.usageHalfLifeMs} ms (GPUNET_FAIRSHARE_HALF_LIFE_MS)`);
    const queue = saved.queue.map((id) => {
      const job = saved.jobs.get(id);
      if (!job) throw new Error(`not a placement snapshot: queued job ${id} is not among its jobs`);
      return job as JobRecord;
    });
    const fold = new PlacementFold({ ...fresh, ...saved, queue }, now);
    for (const [k, v] of doc.revisions ?? []) fold.revisions.set(k, v);
    for (const [k, v] of doc.correlations ?? []) fold.correlations.set(k, v);
    for (const [k, v] of doc.traces ?? []) fold.traces.set(k, v);
    // Every node ever registered is given a whole lease from now, as a fold from zero gives it.
    const seenAt = now();
    for (const node of fold.state.nodes.values()) if (node.registeredAt !== undefined) node.registrationSeenAt = seenAt;
    return fold;
  }
}
