/**
 * Two event store instances on one fresh database (two processes' worth of connections), on
 * SQLite and on PostgreSQL, for specs that run the same cases on both adapters
 * (`describe.each(storePairBackends(...))`). Each `open()` registers its cleanup in `cleanups`
 * (run them after each test) and its PostgreSQL database in `databases` (drop them after all).
 */
import { openPostgresEventStore, SqliteEventStore, type EventStore } from '#event-store';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from './postgres.js';

export interface StorePairBackend {
  name: string;
  open(): Promise<{ a: EventStore; b: EventStore }>;
}

export function storePairBackends(options: { dirPrefix: string; cleanups: (() => Promise<void>)[]; databases: TestDatabase[] }): StorePairBackend[] {
  return [
    {
      name: 'sqlite',
      async open() {
        const dir = await mkdtemp(join(tmpdir(), options.dirPrefix));
        const a = new SqliteEventStore({ path: join(dir, 'events.db') });
        const b = new SqliteEventStore({ path: join(dir, 'events.db') });
        options.cleanups.push(async () => {
          await a.close();
          await b.close();
          await rm(dir, { recursive: true, force: true });
        });
        return { a, b };
      },
    },
    {
      name: 'postgres',
      async open() {
        const db = await createTestDatabase();
        options.databases.push(db);
        const a = await openPostgresEventStore({ connectionString: db.url, poolSize: 3 });
        const b = await openPostgresEventStore({ connectionString: db.url, poolSize: 3 });
        options.cleanups.push(async () => {
          await a.close();
          await b.close();
        });
        return { a, b };
      },
    },
  ];
}
