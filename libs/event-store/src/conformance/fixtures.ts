import { randomUUID } from 'node:crypto';
import type { EventMetadata, EventToAppend, RecordedEvent, Subscription } from '../event-store.js';

/** Metadata with every required field; tests override what they need. */
export function metadata(overrides: Partial<EventMetadata> = {}): EventMetadata {
  return {
    correlationId: randomUUID(),
    causationId: randomUUID(),
    producer: 'conformance',
    occurredAt: '2030-01-02T03:04:05.678Z',
    ...overrides,
  };
}

/** A fresh event with a new UUID; `type`, `data` and `metadata` may be overridden. */
export function newEvent(
  overrides: { eventId?: string; type?: string; data?: unknown; metadata?: Partial<EventMetadata> } = {},
): EventToAppend {
  return {
    eventId: overrides.eventId ?? randomUUID(),
    type: overrides.type ?? 'ThingHappened',
    data: overrides.data ?? { n: 1 },
    metadata: metadata(overrides.metadata),
  };
}

/** `count` fresh events of one type, numbered in `data.i`. */
export function newEvents(count: number, type = 'ThingHappened'): EventToAppend[] {
  return Array.from({ length: count }, (_, i) => newEvent({ type, data: { i } }));
}

/** Runs `fn` and returns what it threw; fails the test when it resolves. */
export async function caught<T = unknown>(fn: () => Promise<unknown>): Promise<T> {
  try {
    await fn();
  } catch (err) {
    return err as T;
  }
  throw new Error('expected the call to reject, but it resolved');
}

const TIMED_OUT = Symbol('timed out');

/**
 * Reads a subscription through one iterator, so a test can take some events, append more, then
 * take again from the same subscription. `next` fails the test when nothing arrives in time;
 * `nothingWithin` succeeds only when no event arrives (the pending pull is left to `close()`).
 */
export class SubscriptionReader {
  private readonly iterator: AsyncIterator<RecordedEvent>;
  private pending: Promise<IteratorResult<RecordedEvent>> | undefined;

  constructor(readonly subscription: Subscription) {
    this.iterator = subscription[Symbol.asyncIterator]();
  }

  /** The next `count` events, in the order the subscription yields them. */
  async take(count: number, timeoutMs = 10_000): Promise<RecordedEvent[]> {
    const out: RecordedEvent[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < count) {
      const r = await this.pull(deadline - Date.now());
      if (r === TIMED_OUT) throw new Error(`subscription yielded ${out.length} of ${count} events within ${timeoutMs} ms`);
      if (r.done) throw new Error(`subscription ended after ${out.length} of ${count} events`);
      out.push(r.value);
    }
    return out;
  }

  /** Resolves when no event arrives within `ms`; rejects with the event otherwise. */
  async nothingWithin(ms: number): Promise<void> {
    const r = await this.pull(ms);
    if (r === TIMED_OUT) return;
    if (r.done) throw new Error('subscription ended while it should still be open');
    throw new Error(`unexpected event at position ${r.value.position} (${r.value.eventId})`);
  }

  /** The result of the pending (or a new) pull, for checking how `close()` ends the iteration. */
  async end(timeoutMs = 5_000): Promise<IteratorResult<RecordedEvent> | typeof TIMED_OUT> {
    return this.pull(timeoutMs);
  }

  private async pull(ms: number): Promise<IteratorResult<RecordedEvent> | typeof TIMED_OUT> {
    this.pending ??= this.iterator.next();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), Math.max(0, ms));
    });
    try {
      const r = await Promise.race([this.pending, timeout]);
      if (r !== TIMED_OUT) this.pending = undefined;
      return r;
    } finally {
      clearTimeout(timer);
    }
  }
}

export { TIMED_OUT };

/** Asserts positions strictly increase (gaps allowed) and returns them. */
export function positionsOf(events: readonly RecordedEvent[]): bigint[] {
  return events.map((e) => e.position);
}

export function isStrictlyIncreasing(values: readonly bigint[]): boolean {
  for (let i = 1; i < values.length; i++) if (values[i]! <= values[i - 1]!) return false;
  return true;
}
