/**
 * The event store port: an append-only log of streams, KurrentDB-shaped.
 * Adapters: SQLite (embedded default) and PostgreSQL (production). Both pass one conformance suite.
 */

/** `any`: no check. `no_stream`: the stream must not exist. `stream_exists`: it must. A bigint: the stream's current revision must equal it. */
export type ExpectedRevision = 'any' | 'no_stream' | 'stream_exists' | bigint;

/** Metadata carried by every event; `jobId` and `team` are indexed for audit queries. */
export interface EventMetadata {
  correlationId: string;
  causationId: string;
  jobId?: string;
  team?: string;
  /** The service or client that produced the event (e.g. `intake`, `ledger`). */
  producer: string;
  /** ISO-8601 time at which the producer observed or decided the fact. */
  occurredAt: string;
  /** Schema version of `data` when it was written; absent means 1 (contracts' `EventMetadata`). */
  schemaVersion?: number;
  /**
   * W3C trace context of the work that produced the event, present only while tracing is on
   * (docs/observability.md): the outbox relay sends it on as the `traceparent` / `tracestate`
   * message headers, so one job's work across services is one trace.
   */
  traceparent?: string;
  tracestate?: string;
}

/** An event as handed to `appendToStream`. `eventId` is the idempotency key (a UUID). */
export interface EventToAppend<TType extends string = string, TData = unknown> {
  eventId: string;
  type: TType;
  data: TData;
  metadata: EventMetadata;
}

/** An event as recorded: its place in its stream and in the global log, and its chain hash. */
export interface RecordedEvent<TType extends string = string, TData = unknown> {
  streamId: string;
  /** 0-based revision within the stream. */
  revision: bigint;
  /** Global position: totally ordered across all streams; may have gaps, never reorders. */
  position: bigint;
  eventId: string;
  type: TType;
  data: TData;
  metadata: EventMetadata;
  /** ISO-8601 time the store recorded it. */
  recordedAt: string;
  /** Hex sha256 chaining this event to the previous event of its stream (see docs/decisions). */
  hash: string;
}

export interface AppendOptions {
  expectedRevision?: ExpectedRevision;
  /**
   * Appends only while another stream is still at a given revision, checked in the same
   * transaction as the append: a single writer's term (decision 0029). When the fence stream has
   * moved on, the append writes nothing and throws FencedError.
   */
  fence?: AppendFence;
}

/** `streamId` must be exactly at `revision` (the writer's own LeaderElected, say) for the append to go in. */
export interface AppendFence {
  streamId: string;
  revision: bigint;
}

export interface AppendResult {
  /** Revision of the last event now in the stream: pass it as `expectedRevision` next time. */
  nextExpectedRevision: bigint;
  /** Global position of the last event of this append. */
  position: bigint;
}

export interface ReadStreamOptions {
  /** First revision to return (inclusive). Default 0. */
  fromRevision?: bigint;
  /** Default: all. */
  maxCount?: number;
}

/** Narrows a global read; all given fields must match. */
export interface ReadAllFilter {
  /** Only these event types. */
  types?: readonly string[];
  /** Only streams whose id starts with this prefix (e.g. `job-`). */
  streamPrefix?: string;
  jobId?: string;
  team?: string;
}

export interface ReadAllOptions {
  /** Exclusive: events with position > fromPosition. Default: from the start. */
  fromPosition?: bigint;
  /** Inclusive upper bound, for reading "as of" a recorded position. */
  toPosition?: bigint;
  /** Default 1000. */
  maxCount?: number;
  filter?: ReadAllFilter;
}

export interface SubscribeToAllOptions {
  /** Exclusive start position. Default: from the start (0n). */
  fromPosition?: bigint;
  filter?: ReadAllFilter;
  /** Events fetched per read while catching up. Default 500. */
  batchSize?: number;
  /** How often to look for new events once caught up, when no notification arrives. Default 250 ms. */
  pollIntervalMs?: number;
}

/**
 * A catch-up subscription: yields every event after `fromPosition` in position order, then live
 * events as they commit. Iterate with `for await`; `close()` ends the iteration.
 */
export interface Subscription extends AsyncIterable<RecordedEvent> {
  close(): Promise<void>;
}

/** Result of walking the hash chain. */
export type VerifyResult =
  | { ok: true; events: number; headPosition: bigint; streams: number }
  | {
      ok: false;
      events: number;
      /** First global position where the chain does not hold (for a deleted row: the position of the event after the gap, or the stream head). */
      firstBadPosition: bigint;
      streamId: string;
      reason: string;
    };

export interface EventStore {
  /** Appends atomically to one stream. Throws WrongExpectedVersionError, FencedError, IdempotencyConflictError, ValidationError. */
  appendToStream(streamId: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult>;
  /** Events of one stream in revision order; an empty array when the stream does not exist. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;
  /** Committed events in global position order. Never returns an event while an earlier position may still commit. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /** Catch-up subscription over the global log. */
  subscribeToAll(options?: SubscribeToAllOptions): Subscription;
  /** Highest position a reader may see now (0n when empty). */
  headPosition(): Promise<bigint>;
  /**
   * The id of the committed event at `position`, reading nothing else of it (undefined when there
   * is none): how a projection's position is checked against the store. An event may be tens of
   * megabytes (an invoice of a large month lists every line).
   */
  eventIdAt(position: bigint): Promise<string | undefined>;
  /** Saves a subscriber's checkpoint (mutable, outside the append-only log). */
  saveCheckpoint(subscriberId: string, position: bigint): Promise<void>;
  /** Loads a subscriber's checkpoint; undefined when none was saved. */
  loadCheckpoint(subscriberId: string): Promise<bigint | undefined>;
  /** Walks the whole log and checks every hash link and every stream head. */
  verify(): Promise<VerifyResult>;
  close(): Promise<void>;
}
