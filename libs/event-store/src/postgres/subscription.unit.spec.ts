import { afterEach, describe, expect, it } from '@jest/globals';
import { TransientError } from '#errors';
import type { ChangeFeed } from './change-feed.js';
import { CatchUpSubscription } from './subscription.js';

describe('CatchUpSubscription when a read fails', () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  afterEach(() => {
    process.off('unhandledRejection', onUnhandled);
    unhandled.length = 0;
  });

  it('hands the failure to the reader and leaves no rejected promise behind when the reader stops without closing', async () => {
    process.on('unhandledRejection', onUnhandled);
    const feed = { current: 0, knownPosition: 0n, wait: async () => undefined } as unknown as ChangeFeed;
    const failure = new TransientError('PostgreSQL unavailable: terminating connection due to administrator command');
    const sub = new CatchUpSubscription(() => Promise.reject(failure), feed, {}, () => undefined);
    const reader = sub[Symbol.asyncIterator]();
    await expect(reader.next()).rejects.toBe(failure);
    // The reader gives up here (as a service restarting its subscription does) without close().
    // Rejections are reported after the microtask queue drains: give it a macrotask turn.
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  });
});
