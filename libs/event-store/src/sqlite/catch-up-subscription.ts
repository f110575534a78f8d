import type { RecordedEvent, Subscription } from '../event-store.js';

export interface CatchUpSource {
  /** Exclusive start. */
  fromPosition: bigint;
  batchSize: number;
  pollIntervalMs: number;
  /** Highest committed position; everything at or below it is readable and final. */
  readHead(): bigint;
  /** Matching events with fromPosition < position ≤ toPosition, at most maxCount, in order. */
  readBatch(fromPosition: bigint, toPosition: bigint, maxCount: number): RecordedEvent[];
  onClose(subscription: CatchUpSubscription): void;
}

/**
 * A catch-up subscription over a single-writer log: reads batches up to the head, then sleeps
 * until woken by an in-process append or the poll interval elapses. One consumer at a time
 * (`for await`): `next()` is not meant to be called concurrently.
 */
export class CatchUpSubscription implements Subscription, AsyncIterator<RecordedEvent> {
  /** Everything at or below it has been read (not necessarily yielded yet). */
  private cursor: bigint;
  private buffer: RecordedEvent[] = [];
  private bufferIndex = 0;
  private closed = false;
  /** Set by `wake()`, so an append that lands while a batch is being read is not slept through. */
  private woken = false;
  private sleeper: { resolve: () => void; timer: NodeJS.Timeout } | undefined;

  constructor(private readonly source: CatchUpSource) {
    this.cursor = source.fromPosition;
  }

  [Symbol.asyncIterator](): AsyncIterator<RecordedEvent> {
    return this;
  }

  async next(): Promise<IteratorResult<RecordedEvent>> {
    for (;;) {
      if (this.closed) return { done: true, value: undefined };
      if (this.bufferIndex < this.buffer.length) {
        return { done: false, value: this.buffer[this.bufferIndex++]! };
      }
      this.woken = false;
      const head = this.source.readHead();
      if (head > this.cursor) {
        const batch = this.source.readBatch(this.cursor, head, this.source.batchSize);
        // A short batch means nothing else matches up to the head, so the next read may start there.
        this.cursor = batch.length === this.source.batchSize ? batch[batch.length - 1]!.position : head;
        this.buffer = batch;
        this.bufferIndex = 0;
        continue;
      }
      if (!this.woken) await this.sleep();
    }
  }

  async return(): Promise<IteratorResult<RecordedEvent>> {
    await this.close();
    return { done: true, value: undefined };
  }

  /** Called on an in-process append: look again now rather than at the next poll. */
  wake(): void {
    this.woken = true;
    if (this.sleeper) {
      clearTimeout(this.sleeper.timer);
      const { resolve } = this.sleeper;
      this.sleeper = undefined;
      resolve();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.buffer = [];
    this.wake();
    this.source.onClose(this);
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeper = undefined;
        resolve();
      }, this.source.pollIntervalMs);
      this.sleeper = { resolve, timer };
    });
  }
}
