import type { Inbox } from './inbox.js';

/**
 * Inbox in process memory, bounded: beyond `capacity` the oldest records are forgotten. It catches
 * duplicates while the process lives (lost acks, redeliveries); use a durable inbox where a
 * duplicate may arrive after a restart.
 */
export class MemoryInbox implements Inbox {
  private readonly seen = new Set<string>();

  /** @param capacity records kept; default 100,000. */
  constructor(private readonly capacity = 100_000) {}

  has(consumer: string, eventId: string): boolean {
    return this.seen.has(`${consumer}\u0000${eventId}`);
  }

  record(consumer: string, eventId: string): Promise<void> {
    const key = `${consumer}\u0000${eventId}`;
    this.seen.delete(key);
    this.seen.add(key);
    if (this.seen.size > this.capacity) {
      // A Set iterates in insertion order: the first key is the oldest record.
      this.seen.delete(this.seen.values().next().value!);
    }
    return Promise.resolve();
  }

  get size(): number {
    return this.seen.size;
  }

  close(): Promise<void> {
    this.seen.clear();
    return Promise.resolve();
  }
}
