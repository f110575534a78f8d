import { FEED_EVENT_TYPES, HEADERS, feedSubject, type FeedEntry, type ReadFeedReply } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { endsJob, feedEntryOf } from '../domain/feed.js';
import type { JobViewsFeed } from '../jobs/job-views.feed.js';

/** Receives a team's new feed entries, in store order. */
export type FeedListener = (entry: FeedEntry) => void;

/**
 * The team feed, served from the store: pages from any position (`read`), live entries as the
 * job views apply them (`listen`), and a core-NATS notification per entry on
 * `gpunet.feed.<team>.<jobId>` (nats-server lets a team subscribe to its own only). Entries
 * follow the store's order and positions; what a team may see is `feedEntryOf`'s.
 */
export class FeedHub {
  private readonly listeners = new Map<string, Set<FeedListener>>();
  private readonly endWaiters = new Map<string, Set<() => void>>();
  private unlisten: (() => void) | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly views: JobViewsFeed,
    private readonly nc: NatsConnection | undefined,
    private readonly logger: Logger,
  ) {}

  /** Starts fanning out what the views apply from now on. */
  start(): void {
    this.unlisten ??= this.views.listen((e) => this.onEvent(e));
  }

  close(): void {
    this.unlisten?.();
    this.unlisten = undefined;
    for (const waiters of this.endWaiters.values()) for (const w of waiters) w();
    this.endWaiters.clear();
  }

  /**
   * A page of `team`'s feed after `after` (exclusive), up to what the job views have applied, so
   * an entry read here is already in `GET /v1/jobs/:id`. `next` may skip other teams' positions.
   */
  async read(team: string, options: { after: bigint; jobId?: string | undefined; limit: number }): Promise<ReadFeedReply> {
    const head = this.views.position;
    if (options.after >= head) return { entries: [], next: options.after.toString(), caughtUp: true };
    const events = await this.store.readAll({
      fromPosition: options.after,
      toPosition: head,
      maxCount: options.limit,
      filter: { team, types: FEED_EVENT_TYPES, ...(options.jobId ? { jobId: options.jobId } : {}) },
    });
    const entries = events.flatMap((e) => feedEntryOf(e, team) ?? []);
    const caughtUp = events.length < options.limit;
    const next = caughtUp ? head : events[events.length - 1]!.position;
    return { entries, next: next.toString(), caughtUp };
  }

  /** Calls `listener` with each new entry of `team` (of one job when `jobId` is given) until the returned function is called. */
  listen(team: string, jobId: string | undefined, listener: FeedListener): () => void {
    const wrapped: FeedListener = jobId ? (e) => e.jobId === jobId && listener(e) : listener;
    const set = this.listeners.get(team) ?? new Set();
    set.add(wrapped);
    this.listeners.set(team, set);
    return () => {
      set.delete(wrapped);
      if (set.size === 0) this.listeners.delete(team);
    };
  }

  /**
   * Resolves once the job is over: its `JobEnded` is recorded (already, or later; the ledger records
   * one for every job). Also resolves when `signal` aborts or the hub closes.
   */
  async ended(jobId: string, signal?: AbortSignal): Promise<void> {
    let done!: () => void;
    const over = new Promise<void>((resolve) => (done = resolve));
    const waiters = this.endWaiters.get(jobId) ?? new Set();
    waiters.add(done);
    this.endWaiters.set(jobId, waiters);
    signal?.addEventListener('abort', done, { once: true });
    try {
      const recorded = await this.store.readAll({ filter: { jobId, types: ['JobEnded'] }, maxCount: 1 });
      if (recorded.length > 0) done();
      await over;
    } finally {
      signal?.removeEventListener('abort', done);
      waiters.delete(done);
      if (waiters.size === 0) this.endWaiters.delete(jobId);
    }
  }

  private onEvent(event: RecordedEvent): void {
    const entry = feedEntryOf(event);
    if (!entry) return;
    for (const listener of this.listeners.get(entry.team) ?? []) {
      try {
        listener(entry);
      } catch (err) {
        this.logger.error({ err, jobId: entry.jobId }, 'feed listener failed');
      }
    }
    if (endsJob(entry)) for (const w of this.endWaiters.get(entry.jobId) ?? []) w();
    this.notify(entry);
  }

  /** The NATS notification: best effort (core NATS); a reader that missed one reads from its last position. */
  private notify(entry: FeedEntry): void {
    if (!this.nc || this.nc.isClosed()) return;
    try {
      const h = natsHeaders();
      h.set(HEADERS.type, entry.type);
      h.set(HEADERS.jobId, entry.jobId);
      h.set(HEADERS.correlationId, entry.correlationId);
      this.nc.publish(feedSubject(entry.team, entry.jobId), JSON.stringify(entry), { headers: h });
    } catch (err) {
      this.logger.warn({ err, jobId: entry.jobId }, 'cannot publish a feed notification');
    }
  }
}
