import type { EventStore, ReadAllFilter, RecordedEvent, Subscription } from '#event-store';
import type { Logger } from 'pino';

export interface StoreFollowerOptions {
  /** What the follower keeps, for its log lines (e.g. `job views`). */
  name: string;
  /** Applies one event to the in-memory model; called once per event, in position order. */
  apply: (event: RecordedEvent) => void;
  /**
   * Only these events (types, stream prefix…), for a model that needs a few types of a large
   * store. `position` and `waitFor` then count only matching events. Default: every event.
   */
  filter?: ReadAllFilter;
  /**
   * Start after this position: for a model restored from what it kept (a table with the position
   * it holds), so `start()` folds only the tail. Default: from the start of the store.
   */
  from?: bigint;
  /** Events read per batch while folding at start. Default 5000. */
  foldBatch?: number;
  /** How often to look for new events when no notification arrives. Default: the store's. */
  pollIntervalMs?: number;
  /** Pause before following again after the subscription failed. Default 1000 ms. */
  resubscribeDelayMs?: number;
}

/**
 * Keeps an in-memory model of the whole event store: `start()` folds the store (from `from`) up to its head,
 * then follows it with a catch-up subscription. The store rather than the bus: it is one ordered
 * log of every service's events, so the model never sees them out of order and needs no consumer.
 * `waitFor(position)` gives read-your-writes after an append.
 */
export class StoreFollower {
  private applied: bigint;
  private subscription: Subscription | undefined;
  private following: Promise<void> | undefined;
  private closed = false;
  private readonly waiters = new PositionWaiters();
  private pulling: Promise<void> | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly logger: Logger,
    private readonly options: StoreFollowerOptions,
  ) {
    this.applied = options.from ?? 0n;
  }

  /** Position of the last event applied. */
  get position(): bigint {
    return this.applied;
  }

  /** Folds the store up to its head, then follows it in the background. */
  async start(): Promise<{ events: number; ms: number }> {
    const started = Date.now();
    let events = 0;
    for (;;) {
      const batch = await this.store.readAll({ fromPosition: this.applied, maxCount: this.options.foldBatch ?? 5_000, ...(this.options.filter ? { filter: this.options.filter } : {}) });
      if (batch.length === 0) break;
      for (const e of batch) this.apply(e);
      events += batch.length;
      // The SQLite store answers synchronously: without a turn of the event loop between batches
      // a long fold would hold it throughout, and a leader's lease would go unrenewed and lapse.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const ms = Date.now() - started;
    this.logger.info({ events, position: String(this.applied), ms }, `${this.options.name} folded from the store`);
    this.following = this.follow();
    return { events, ms };
  }

  /** Stops following; pending `waitFor` calls resolve false. */
  async close(): Promise<void> {
    this.closed = true;
    await this.subscription?.close();
    await this.following;
    await this.pulling;
    this.waiters.closeAll();
  }

  /**
   * Resolves true once the model includes the event at `position`, or false after `timeoutMs`.
   * A model behind `position` reads the store at once rather than waiting for the subscription's
   * next poll (another process's appends wake no subscription here), so a reader asking for what
   * it knows is recorded waits for one read, not for a poll interval.
   */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.applied >= position) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    const reached = this.waiters.wait(position, timeoutMs);
    if (this.following !== undefined) this.pullSoon();
    return reached;
  }

  /** Resolves true once the model includes everything the store held when called (a follower without `filter` only). */
  async catchUp(timeoutMs: number): Promise<boolean> {
    return this.waitFor(await this.store.headPosition(), timeoutMs);
  }

  /**
   * Resolves true once the model includes every event (of its filter) the store held when called:
   * it reads the store from the model's position to the end, beside the subscription. For a
   * follower with a filter, whose position counts only matching events, this is the way to see
   * what another process appended (read-your-writes across replicas); false after `timeoutMs`.
   */
  async sync(timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    const read = (async () => {
      for (;;) {
        const batch = await this.store.readAll({ fromPosition: this.applied, maxCount: 1_000, ...(this.options.filter ? { filter: this.options.filter } : {}) });
        if (batch.length === 0) return true;
        for (const e of batch) this.apply(e);
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    try {
      return await Promise.race([read, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * One read of the store from the model's position, beside the subscription (one at a time).
   * Both deliver in position order without gaps and `apply` skips what it already has, so
   * whichever comes first applies an event and the other passes over it.
   */
  private pullSoon(): void {
    if (this.pulling) return;
    this.pulling = (async () => {
      try {
        while (!this.closed && this.waiters.beyond(this.applied)) {
          const batch = await this.store.readAll({ fromPosition: this.applied, maxCount: 1_000, ...(this.options.filter ? { filter: this.options.filter } : {}) });
          if (batch.length === 0) break;
          for (const e of batch) this.apply(e);
        }
      } catch (err) {
        this.logger.warn({ err, position: String(this.applied) }, `reading the store for ${this.options.name} failed; the subscription goes on`);
      } finally {
        this.pulling = undefined;
      }
    })();
  }

  private apply(event: RecordedEvent): void {
    if (event.position <= this.applied) return;
    this.options.apply(event);
    this.applied = event.position;
    this.waiters.reached(this.applied);
  }

  private follow(): Promise<void> {
    return followStore(this.store, this.logger, {
      name: this.options.name,
      from: () => this.applied,
      apply: (event) => this.apply(event),
      isClosed: () => this.closed,
      onSubscription: (subscription) => (this.subscription = subscription),
      onStoreClosed: () => (this.closed = true),
      ...(this.options.filter ? { filter: this.options.filter } : {}),
      ...(this.options.pollIntervalMs ? { pollIntervalMs: this.options.pollIntervalMs } : {}),
      ...(this.options.resubscribeDelayMs ? { resubscribeDelayMs: this.options.resubscribeDelayMs } : {}),
    });
  }
}

export interface FollowStoreOptions {
  /** What the follower keeps, for its log lines. */
  name: string;
  /** The position to subscribe from (exclusive), read at each (re)subscription. */
  from: () => bigint;
  /** Called with each event in position order (awaited); it skips what it already holds. */
  apply: (event: RecordedEvent) => void | Promise<void>;
  isClosed: () => boolean;
  /** The subscription now followed (to close it when the follower closes). */
  onSubscription: (subscription: Subscription) => void;
  /** The store was closed under the follower: nothing more will come. */
  onStoreClosed: () => void;
  filter?: ReadAllFilter;
  pollIntervalMs?: number;
  /** Pause before following again after the subscription failed. Default 1000 ms. */
  resubscribeDelayMs?: number;
}

/**
 * Follows the store with a catch-up subscription until closed: each event to `apply`, in order;
 * after a failure, follows again from `from()` a moment later; a store closed under it ends it.
 */
export async function followStore(store: EventStore, logger: Logger, options: FollowStoreOptions): Promise<void> {
  while (!options.isClosed()) {
    let subscription: Subscription | undefined;
    try {
      subscription = store.subscribeToAll({
        fromPosition: options.from(),
        batchSize: 1_000,
        ...(options.filter ? { filter: options.filter } : {}),
        ...(options.pollIntervalMs ? { pollIntervalMs: options.pollIntervalMs } : {}),
      });
      options.onSubscription(subscription);
      for await (const event of subscription) await options.apply(event);
      if (options.isClosed()) break;
      throw new Error('the store subscription ended');
    } catch (err) {
      if (options.isClosed()) break;
      if ((err as { code?: string }).code === 'illegal_state') {
        // The store was closed under the follower (its owner stopped without closing it):
        // nothing more will come, and following again would throw the same, forever.
        logger.warn({ err, position: String(options.from()) }, `following the store for ${options.name} stopped: the store is closed`);
        options.onStoreClosed();
        break;
      }
      logger.error({ err, position: String(options.from()) }, `following the store for ${options.name} failed; following again shortly`);
      await subscription?.close().catch(() => undefined);
      await new Promise((r) => setTimeout(r, options.resubscribeDelayMs ?? 1_000));
    }
  }
}

/** Callers waiting for a model to reach a store position. */
export class PositionWaiters {
  private waiters: { position: bigint; resolve: (reached: boolean) => void }[] = [];

  /** Resolves true once `reached` is told a position at or past `position`; false after `timeoutMs` or at `closeAll`. */
  wait(position: bigint, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter = {
        position,
        resolve: (reached: boolean) => {
          clearTimeout(timer);
          resolve(reached);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Whether someone waits for a position past `position`. */
  beyond(position: bigint): boolean {
    return this.waiters.some((w) => w.position > position);
  }

  /** The model now includes `position`: those waiting for it or less are answered. */
  reached(position: bigint): void {
    if (this.waiters.length === 0) return;
    const ready = this.waiters.filter((w) => w.position <= position);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.position > position);
    for (const w of ready) w.resolve(true);
  }

  /** Answers everyone false (the model stops). */
  closeAll(): void {
    for (const w of this.waiters.splice(0)) w.resolve(false);
  }
}
