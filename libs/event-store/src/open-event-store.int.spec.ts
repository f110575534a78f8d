import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createTestDatabase, type TestDatabase } from '../../../test/support/postgres.js';
import { newEvents } from './conformance/fixtures.js';
import { computeEventHash, GENESIS_HASH } from './hash-chain.js';
import { openEventStore } from './open-event-store.js';
import { PostgresEventStore } from './postgres/postgres-event-store.js';
import { SqliteEventStore } from './sqlite/sqlite-event-store.js';

describe('openEventStore', () => {
  let db: TestDatabase;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(join(tmpdir(), 'gpunet-open-'));
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens the adapter each URL names, with the shared options applied', async () => {
    const clock = () => new Date('2031-02-03T04:05:06.789Z');
    for (const [url, kind] of [
      [db.url, PostgresEventStore],
      [`sqlite:${join(dir, 'a.db')}`, SqliteEventStore],
      [join(dir, 'b.db'), SqliteEventStore],
    ] as const) {
      const store = await openEventStore(url, { clock, chainKey: 'k', postgres: { poolSize: 2 } });
      try {
        expect(store).toBeInstanceOf(kind);
        await store.appendToStream('s', newEvents(2));
        const events = await store.readAll();
        expect(events.map((e) => e.recordedAt)).toEqual([clock().toISOString(), clock().toISOString()]);
        expect(events[0]!.hash).toBe(computeEventHash(GENESIS_HASH, events[0]!, 'k'));
        expect((await store.verify()).ok).toBe(true);
      } finally {
        await store.close();
      }
    }
  });
});
