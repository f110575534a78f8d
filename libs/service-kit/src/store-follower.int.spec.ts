import { SqliteEventStore, type RecordedEvent } from '#event-store';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { newId } from './ids.js';
import { StoreFollower } from './store-follower.js';

const event = (n: number) => ({
  eventId: newId(),
  type: 'Tick',
  data: { n },
  metadata: { correlationId: 'c', causationId: 'c', producer: 'test', occurredAt: new Date().toISOString() },
});

describe('StoreFollower (SQLite)', () => {
  let dir: string;
  let store: SqliteEventStore;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-follower-'));
    store = new SqliteEventStore({ path: join(dir, 'events.db') });
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('folds what is there, then follows new events once each, in order, with read-your-writes', async () => {
    await store.appendToStream('s', [event(1), event(2)]);
    const seen: number[] = [];
    const follower = new StoreFollower(store, pino({ level: 'silent' }), { name: 'ticks', apply: (e: RecordedEvent) => seen.push((e.data as { n: number }).n), pollIntervalMs: 10 });
    expect(await follower.start()).toMatchObject({ events: 2 });
    expect(seen).toEqual([1, 2]);
    const { position } = await store.appendToStream('s', [event(3)]);
    expect(await follower.waitFor(position, 20_000)).toBe(true);
    expect(seen).toEqual([1, 2, 3]);
    expect(follower.position).toBe(position);
    expect(await follower.catchUp(20_000)).toBe(true);
    const pending = follower.waitFor(position + 100n, 5_000);
    await follower.close();
    expect(await pending).toBe(false);
  });

  it('stops following when its store is closed under it (an owner that failed halfway through its start), instead of failing on every retry', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
    const follower = new StoreFollower(store, logger, { name: 'ticks', apply: () => undefined, pollIntervalMs: 10, resubscribeDelayMs: 10 });
    await follower.start();
    await store.close();
    const stopped = () => lines.some((l) => l.msg === 'following the store for ticks stopped: the store is closed');
    for (const end = Date.now() + 20_000; !stopped() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    expect(stopped()).toBe(true);
    // Stopped for good: asked for more, it answers at once that it will not get there.
    expect(await follower.waitFor(follower.position + 1n, 20_000)).toBe(false);
    await follower.close();
  });

  it("reaches another process's append at once when asked for it, not at the subscription's next poll", async () => {
    // Through a symlinked directory the writer shares no in-process wake-up with the follower's store, as another process would not.
    const alias = join(dir, 'alias');
    symlinkSync(dir, alias);
    const writer = new SqliteEventStore({ path: join(alias, 'events.db') });
    const seen: number[] = [];
    // A poll interval far beyond the wait: only the read waitFor makes can reach the event in time.
    const follower = new StoreFollower(store, pino({ level: 'silent' }), { name: 'ticks', apply: (e: RecordedEvent) => seen.push((e.data as { n: number }).n), pollIntervalMs: 60_000 });
    try {
      await follower.start();
      const { position } = await writer.appendToStream('s', [event(1), event(2)]);
      expect(await follower.waitFor(position, 20_000)).toBe(true);
      expect(seen).toEqual([1, 2]);
      // Whichever source delivers an event first applies it; the other passes over it.
      const next = await writer.appendToStream('s', [event(3)]);
      expect(await follower.catchUp(20_000)).toBe(true);
      expect(follower.position).toBe(next.position);
      expect(seen).toEqual([1, 2, 3]);
    } finally {
      await follower.close();
      await writer.close();
    }
  });

  it('with a filter, folds and follows only the matching events (by type and stream prefix)', async () => {
    const tock = (n: number) => ({ ...event(n), type: 'Tock' });
    await store.appendToStream('keep-1', [event(1), tock(2)]);
    await store.appendToStream('other-1', [event(3)]);
    const seen: number[] = [];
    const follower = new StoreFollower(store, pino({ level: 'silent' }), {
      name: 'ticks',
      filter: { types: ['Tick'], streamPrefix: 'keep-' },
      apply: (e: RecordedEvent) => seen.push((e.data as { n: number }).n),
      pollIntervalMs: 10,
    });
    expect(await follower.start()).toMatchObject({ events: 1 });
    await store.appendToStream('other-2', [event(4)]);
    const { position } = await store.appendToStream('keep-2', [tock(5), event(6)]);
    expect(await follower.waitFor(position, 20_000)).toBe(true);
    expect(seen).toEqual([1, 6]);
    await follower.close();
  });

  it('gives up a wait after its timeout', async () => {
    const follower = new StoreFollower(store, pino({ level: 'silent' }), { name: 'ticks', apply: () => undefined });
    await follower.start();
    expect(await follower.waitFor(10n, 50)).toBe(false);
    await follower.close();
  });
});
