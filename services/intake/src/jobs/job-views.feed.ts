import type { JobView } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { StoreFollower } from '#service-kit';
import type { Logger } from 'pino';
import { jobIdOf } from '../domain/job-view.js';
import { JobViews } from '../domain/job-views.js';

type Watcher = (view: JobView) => void;

/**
 * Keeps every job's view in memory: `start()` folds the whole store (the service calls it before
 * it serves anything), then follows it with `subscribeToAll` from that position. The store, not
 * the bus: it is one ordered log of every service's events, so the views never see events out of
 * order, and it needs no consumer of its own.
 */
export class JobViewsFeed {
  readonly views = new JobViews();
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly listeners = new Set<(event: RecordedEvent) => void>();
  private readonly follower: StoreFollower;

  constructor(
    store: EventStore,
    private readonly logger: Logger,
  ) {
    this.follower = new StoreFollower(store, logger, { name: 'job views', apply: (e) => this.apply(e) });
  }

  /** Folds the store up to its head, then follows it in the background. */
  async start(): Promise<void> {
    await this.follower.start();
    this.logger.info({ jobs: this.views.size }, 'job views ready');
  }

  /** Stops following; pending `waitFor` calls resolve false. */
  close(): Promise<void> {
    return this.follower.close();
  }

  /** Position of the last event applied. */
  get position(): bigint {
    return this.follower.position;
  }

  get(jobId: string): JobView | undefined {
    return this.views.get(jobId);
  }

  /**
   * Resolves true once the views include the event at `position` (read-your-writes after an
   * append), or false after `timeoutMs`.
   */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    return this.follower.waitFor(position, timeoutMs);
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

  /**
   * Calls `listener` with every event the views apply from now on, in store order, after the
   * views include it (so a reader told of an event finds it in the views); until the returned
   * function is called.
   */
  listen(listener: (event: RecordedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private apply(event: RecordedEvent): void {
    try {
      this.applyToViews(event);
    } finally {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (err) {
          this.logger.error({ err, eventId: event.eventId }, 'job views listener failed');
        }
      }
    }
  }

  private applyToViews(event: RecordedEvent): void {
    const changed = this.views.apply(event);
    if (!changed) return;
    const jobId = jobIdOf(event)!;
    for (const watcher of this.watchers.get(jobId) ?? []) {
      try {
        watcher(changed.view);
      } catch (err) {
        this.logger.error({ err, jobId }, 'job view watcher failed');
      }
    }
  }
}
