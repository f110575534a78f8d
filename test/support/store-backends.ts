/**
 * Both stores for an int spec that runs its cases on each (`describe.each(stores.backends)`):
 * a SQLite file in a temp folder, or a PostgreSQL database of the test's own. Every store opened
 * is closed, and its file or database removed, by `cleanUp()` (call it after each test, after
 * stopping whatever still uses the stores).
 */
import { openPostgresEventStore, SqliteEventStore, type PostgresEventStore } from '#event-store';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase } from './postgres.js';

export type TestStore = SqliteEventStore | PostgresEventStore;

export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  /** A fresh, empty database; each `open()` is another store instance on it (another process's connections). */
  fresh(): Promise<{ open(): Promise<TestStore> }>;
}

/** The two backends, and the clean-up of everything they opened. */
export function storeBackends(options: { prefix: string; poolSize?: number }): { backends: StoreBackend[]; cleanUp(): Promise<void> } {
  const cleanups: (() => Promise<void>)[] = [];
  const backends: StoreBackend[] = [
    {
      name: 'sqlite',
      async fresh() {
        const dir = await mkdtemp(join(tmpdir(), options.prefix));
        const opened: TestStore[] = [];
        cleanups.push(async () => {
          for (const s of opened) await s.close();
          await rm(dir, { recursive: true, force: true });
        });
        return {
          async open() {
            const s = new SqliteEventStore({ path: join(dir, 'events.db') });
            opened.push(s);
            return s;
          },
        };
      },
    },
    {
      name: 'postgres',
      async fresh() {
        const db = await createTestDatabase();
        const opened: TestStore[] = [];
        cleanups.push(async () => {
          for (const s of opened) await s.close();
          await db.drop();
        });
        return {
          async open() {
            const s = await openPostgresEventStore({ connectionString: db.url, poolSize: options.poolSize ?? 3 });
            opened.push(s);
            return s;
          },
        };
      },
    },
  ];
  return {
    backends,
    async cleanUp() {
      for (const c of cleanups.splice(0).reverse()) await c();
    },
  };
}
