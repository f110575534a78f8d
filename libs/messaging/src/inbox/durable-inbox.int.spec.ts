import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import type { Inbox } from './inbox.js';
import { PostgresInbox } from './postgres-inbox.js';
import { SqliteInbox } from './sqlite-inbox.js';

interface Backend {
  name: string;
  open(): Promise<Inbox & { prune(before: Date): number | Promise<number> }>;
  dispose(): Promise<void>;
}

function sqliteBackend(): Backend {
  let dir: string | undefined;
  return {
    name: 'sqlite',
    async open() {
      dir ??= await mkdtemp(join(tmpdir(), 'gpunet-inbox-'));
      return new SqliteInbox({ path: join(dir, 'store.db') });
    },
    async dispose() {
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

function postgresBackend(): Backend {
  let db: TestDatabase | undefined;
  const pools: pg.Pool[] = [];
  return {
    name: 'postgres',
    async open() {
      db ??= await createTestDatabase('gpunet_inbox');
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      // An idle client may be ended by the server at any time (here: the database dropped with
      // FORCE while a pool still winds down); pg then emits 'error' on the pool, which must be handled.
      pool.on('error', () => undefined);
      pools.push(pool);
      return new PostgresInbox(pool);
    },
    async dispose() {
      await Promise.all(pools.map((p) => p.end()));
      await db?.drop();
    },
  };
}

describe.each([sqliteBackend, postgresBackend])('durable inbox (%p)', (make) => {
  let backend: Backend;
  beforeAll(() => {
    backend = make();
  });
  afterAll(async () => {
    await backend.dispose();
  });

  it('records group-committed in one turn are all durable once their promises resolve, across a reopen', async () => {
    const inbox = await backend.open();
    const ids = Array.from({ length: 500 }, (_, i) => `evt-${i}`);
    await Promise.all(ids.map((id) => inbox.record('ledger', id)));
    await inbox.record('ledger', 'evt-0'); // recording twice is harmless
    await inbox.close();

    const reopened = await backend.open();
    for (const id of ids) expect(await reopened.has('ledger', id)).toBe(true);
    expect(await reopened.has('placement', 'evt-0')).toBe(false);
    expect(await reopened.has('ledger', 'evt-500')).toBe(false);
    expect(await reopened.prune(new Date(Date.now() + 60_000))).toBe(500);
    expect(await reopened.has('ledger', 'evt-1')).toBe(false);
    await reopened.close();
  });

  it('answers has() for a record whose commit is still pending', async () => {
    const inbox = await backend.open();
    const recorded = inbox.record('svc', 'in-flight');
    expect(await inbox.has('svc', 'in-flight')).toBe(true);
    await recorded;
    await inbox.close();
  });
});

describe('PostgreSQL inbox on a new database', () => {
  it('is made once when several services start at the same moment', async () => {
    // Two `CREATE TABLE IF NOT EXISTS` of one table at once fail one of them (pg_type's unique index).
    for (let round = 0; round < 4; round++) {
      const db = await createTestDatabase('gpunet_inbox_race');
      const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: db.url, max: 1 }));
      // `pool.end()` resolves once its clients are asked to end, not once they have: the drop below
      // may terminate one still closing, and pg emits that as 'error' on the pool.
      for (const pool of pools) pool.on('error', () => undefined);
      try {
        await Promise.all(pools.map((pool) => new PostgresInbox(pool).init()));
        const { rows } = await pools[0]!.query<{ n: number }>("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'messaging_inbox'");
        expect(rows[0]!.n).toBe(1);
      } finally {
        await Promise.all(pools.map((p) => p.end()));
        await db.drop();
      }
    }
  });
});

