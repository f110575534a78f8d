import type { JobView } from '#contracts';
import type { EventStore, RecordedEvent, Subscription } from '#event-store';
import type { Logger } from 'pino';
import { jobIdOf } from '../domain/job-view.js';
import { JobViews } from '../domain/job-views.js';

/** Events read per batch while folding the store at start. */
const FOLD_BATCH = 5_000;
/** Pause before following the store again after the subscription failed. */
const RESUBSCRIBE_DELAY_MS = 1_000;

type Watcher = (view: JobView) => void;

/**
 * Keeps every job's view in memory: `start()` folds the whole store (the service calls it before
 * it serves anything), then follows it with `subscribeToAll` from that position. The store, not
 * the bus: it is one ordered log of every service's events, so the views never see events out of
 * order, and it needs no consumer of its own.
 */
export class JobViewsFeed {
  readonly views = new JobViews();
  private subscription: Subscription | undefined;
  private following: Promise<void> | undefined;
  private closed = false;
  private readonly watchers = new Map<string, Set<Watcher>>();
  private waiters: { position: bigint; resolve: (reached: boolean) => void }[] = [];

  constructor(
    private readonly store: EventStore,
    private readonly logger: Logger,
  ) {}

  /** Folds the store up to its head, then follows it in the background. */
  async start(): Promise<void> {
    const started = Date.now();
    let events = 0;
    for (;;) {
      const batch = await this.store.readAll({ fromPosition: this.views.position, maxCount: FOLD_BATCH });
      if (batch.length === 0) break;
      for (const e of batch) this.views.apply(e);
      events += batch.length;
    }
    this.logger.info({ jobs: this.views.size, events, position: String(this.views.position), ms: Date.now() - started }, 'job views folded from the store');
    this.following = this.follow();
  }

  /** Stops following; pending `waitFor` calls resolve false. */
  async close(): Promise<void> {
    this.closed = true;
    await this.subscription?.close();
    await this.following;
    for (const w of this.waiters.splice(0)) w.resolve(false);
  }

  /** Position of the last event applied. */
  get position(): bigint {
    return this.views.position;
  }

  get(jobId: string): JobView | undefined {
    return this.views.get(jobId);
  }

  /**
   * Resolves true once the views include the event at `position` (read-your-writes after an
   * append), or false after `timeoutMs`.
   */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.views.position >= position) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
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

  /** Calls `watcher` with the job's view after each change, until the returned function is called. */
  watch(jobId: string, watcher: Watcher): () => void {
    const set = this.watchers.get(jobId) ?? new Set();
    set.add(watcher);
    this.watchers.set(jobId, set);
    return () => {
      set.delete(watcher);
      if (set.size === 0) this.watchers.delete(jobId);
    };
  }

  private apply(event: RecordedEvent): void {
    const changed = this.views.apply(event);
    if (changed) {
      const jobId = jobIdOf(event)!;
      for (const watcher of this.watchers.get(jobId) ?? []) {
        try {
          watcher(changed.view);
        } catch (err) {
          this.logger.error({ err, jobId }, 'job view watcher failed');
        }
      }
    }
    if (this.waiters.length > 0) {
      const ready = this.waiters.filter((w) => w.position <= this.views.position);
      if (ready.length > 0) {
        this.waiters = this.waiters.filter((w) => w.position > this.views.position);
        for (const w of ready) w.resolve(true);
      }
    }
  }

  private async follow(): Promise<void> {
    while (!this.closed) {
      const subscription = this.store.subscribeToAll({ fromPosition: this.views.position, batchSize: 1_000 });
      this.subscription = subscription;
      try {
        for await (const event of subscription) this.apply(event);
        if (this.closed) break;
        throw new Error('the store subscription ended');
      } catch (err) {
        if (this.closed) break;
        this.logger.error({ err, position: String(this.views.position) }, 'following the store failed; following again shortly');
        await subscription.close().catch(() => undefined);
        await new Promise((r) => setTimeout(r, RESUBSCRIBE_DELAY_MS));
      }
    }
  }
}
