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
import { evolve, initialState, isPlacementEventType, jobIdOfPlacementStream, PLACEMENT_EVENT_TYPES, type JobRecord, type PlacementEvent, type PlacementState, type StateOptions } from '../domain/index.js';
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
export const PLACEMENT_SNAPSHOT_FORMAT = 1;

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
   * Applies one recorded event to the state and to the bookkeeping of placement's own streams.
   * False for the echo of a decision placement already applied when it wrote it (its own stream,
   * at or below the revision it last saw there): the state is as it was, so no pass is owed.
   */
  apply(e: Applicable): boolean {
    if (!isPlacementEventType(e.type) || e.position === undefined) return false;
    if (e.type === 'JobSubmitted' && e.metadata?.jobId) this.correlations.set(e.metadata.jobId, e.metadata.correlationId);
    if (e.metadata?.jobId && e.metadata.traceparent && tracingEnabled()) {
      this.traces.set(e.metadata.jobId, { traceparent: e.metadata.traceparent, ...(e.metadata.tracestate ? { tracestate: e.metadata.tracestate } : {}) });
    }
    const own = e.streamId === undefined ? undefined : jobIdOfPlacementStream(e.streamId);
    const echo = own !== undefined && e.revision !== undefined && (this.revisions.get(own) ?? -1n) >= e.revision;
    if (own !== undefined && e.revision !== undefined && !echo) this.revisions.set(own, e.revision);
    evolve(this.state, { type: e.type, data: e.data, position: e.position } as PlacementEvent);
    if (e.metadata?.jobId && this.state.jobs.get(e.metadata.jobId)?.phase === 'ended') this.traces.delete(e.metadata.jobId);
    // A registration is a sign of life: the node gets a whole lease for its first heartbeat here.
    if (e.type === 'NodeRegistered') observeRegistration(this.state, (e.data as { nodeId: string }).nodeId, this.now());
    return !echo;
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
