import type { ReadAllOptions, RecordedEvent, SubscribeToAllOptions, Subscription } from '../event-store.js';
import type { ChangeFeed } from './change-feed.js';

/** Defaults of `SubscribeToAllOptions`, as documented on the port. */
export const SUBSCRIPTION_DEFAULTS = { batchSize: 500, pollIntervalMs: 250 } as const;

/** First and longest pause while a known commit is held back behind the visibility frontier. */
const HELD_BACK_RETRY_MS = { first: 5, max: 100 } as const;

/** A page of the global log and the visibility frontier of the snapshot it was read in. */
export type ReadPage = (options: ReadAllOptions) => Promise<{ events: RecordedEvent[]; frontier: bigint }>;

/**
 * A catch-up subscription over `readAll`: reads pages after the last yielded position until a
 * page comes back short, then waits for a wake-up (NOTIFY, an append of this process) or the
 * poll interval, and reads again. `readAll` only returns the gap-free committed prefix of the
 * log, so resuming after the last yielded position never skips a late commit.
 *
 * A wake-up can come before its event is readable: the frontier is the oldest transaction in
 * flight anywhere in the cluster, and it may be older than the append. While an event is known
 * to be committed beyond the frontier, the subscription re-reads after a short, growing pause
 * rather than sleeping until the next notification or poll.
 */
export class CatchUpSubscription implements Subscription {
  private readonly stop = new AbortController();
  private started = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly readPage: ReadPage,
    private readonly feed: ChangeFeed,
    private readonly options: SubscribeToAllOptions,
    private readonly onClosed: (s: CatchUpSubscription) => void,
  ) {}

  [Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    if (this.started) throw new Error('a subscription can be iterated once; subscribe again for another reader');
    this.started = true;
    return this.run();
  }

  /** Ends the iteration (a pending `next()` resolves with `done`) and waits for an in-flight read. */
  async close(): Promise<void> {
    this.stop.abort();
    await this.running?.catch(() => undefined);
    this.onClosed(this);
  }

  private async *run(): AsyncGenerator<RecordedEvent> {
    const batchSize = this.options.batchSize ?? SUBSCRIPTION_DEFAULTS.batchSize;
    const pollIntervalMs = this.options.pollIntervalMs ?? SUBSCRIPTION_DEFAULTS.pollIntervalMs;
    let from = this.options.fromPosition ?? 0n;
    let heldBackMs = 0;
    try {
      while (!this.stop.signal.aborted) {
        // Taken before the read: a wake-up that lands between the read and the wait is not lost.
        const seen = this.feed.current;
        const read = this.readPage({ fromPosition: from, maxCount: batchSize, filter: this.options.filter });
        // What close() waits for. Its own copy of a failure is handled here: the reader gets the
        // failure from `await read`, and a reader that stops iterating then (never calling close)
        // must not leave a rejected promise behind that kills the process.
        this.running = read.then(
          () => undefined,
          () => undefined,
        );
        const { events, frontier } = await read;
        for (const event of events) {
          if (this.stop.signal.aborted) return;
          yield event;
          from = event.position;
        }
        if (events.length === batchSize) continue;
        if (this.feed.knownPosition >= frontier) {
          heldBackMs = Math.min(HELD_BACK_RETRY_MS.max, heldBackMs === 0 ? HELD_BACK_RETRY_MS.first : heldBackMs * 2);
          await this.feed.wait(seen, Math.min(heldBackMs, pollIntervalMs), this.stop.signal);
        } else {
          heldBackMs = 0;
          await this.feed.wait(seen, pollIntervalMs, this.stop.signal);
        }
      }
    } finally {
      this.stop.abort();
      this.onClosed(this);
    }
  }
}
