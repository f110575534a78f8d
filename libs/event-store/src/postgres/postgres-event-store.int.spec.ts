import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { describeEventStoreConformance } from '../conformance/event-store.conformance.js';
import { isStrictlyIncreasing, newEvents, SubscriptionReader } from '../conformance/fixtures.js';
import type { ConformanceContext, ConformanceHarness, RawEventRow } from '../conformance/harness.js';
import type { EventStore, RecordedEvent } from '../event-store.js';
import { appendOnClient } from './append.js';
import { openPostgresEventStore, type PostgresEventStore } from './postgres-event-store.js';

const SCHEMA = 'gpunet';

/** Each setup: a fresh database of its own, stores with small pools, direct SQL for the tamper hooks. */
function postgresHarness(chainKey?: string): ConformanceHarness {
  return {
    name: chainKey ? 'postgres (HMAC chain key)' : 'postgres',
    async setup(): Promise<ConformanceContext> {
      const db = await createTestDatabase();
      const opened: EventStore[] = [];
      const open = async () => {
        const s = await openPostgresEventStore({ connectionString: db.url, schema: SCHEMA, poolSize: 3, chainKey });
        opened.push(s);
        return s;
      };
      /** One statement in its own transaction, with the append-only triggers off for it alone. */
      const unguarded = async (text: string, values: unknown[]) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          await c.query('BEGIN');
          await c.query('SET LOCAL session_replication_role = replica');
          await c.query(text, values);
          await c.query('COMMIT');
        } finally {
          await c.end();
        }
      };
      const plain = async (text: string, values: unknown[]) => {
        const c = new pg.Client({ connectionString: db.url });
        await c.connect();
        try {
          await c.query(text, values);
        } finally {
          await c.end();
        }
      };
      let store: EventStore = await open();
      return {
        get store() {
          return store;
        },
        chainKey,
        openAnother: open,
        async reopen() {
          await store.close();
          store = await open();
          return store;
        },
        tamper: {
          alterData: (position, data) =>
            unguarded(`UPDATE ${SCHEMA}.events SET data = $2::jsonb WHERE position = $1`, [position.toString(), JSON.stringify(data)]),
          deleteAt: (position) => unguarded(`DELETE FROM ${SCHEMA}.events WHERE position = $1`, [position.toString()]),
          insertRow: (row: RawEventRow) =>
            unguarded(
              `INSERT INTO ${SCHEMA}.events (position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash)
               VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb, $8, $9)`,
              [
                row.position.toString(),
                row.streamId,
                row.revision.toString(),
                row.eventId,
                row.type,
                JSON.stringify(row.data),
                JSON.stringify(row.metadata),
                row.recordedAt,
                row.hash,
              ],
            ),
        },
        plainSql: {
          updateAt: (position) => plain(`UPDATE ${SCHEMA}.events SET type = 'Edited' WHERE position = $1`, [position.toString()]),
          deleteAt: (position) => plain(`DELETE FROM ${SCHEMA}.events WHERE position = $1`, [position.toString()]),
        },
        async dispose() {
          await Promise.all(opened.map((s) => s.close()));
          await db.drop();
        },
      };
    },
  };
}

describeEventStoreConformance(postgresHarness());
describeEventStoreConformance(postgresHarness('conformance-chain-key'));

describe('postgres: global order never skips a late commit', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let other: PostgresEventStore;
  /** Two connections of their own, for transactions held open across steps. */
  let txA: pg.PoolClient;
  let txB: pg.PoolClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openPostgresEventStore({ connectionString: db.url, poolSize: 4 });
    other = await openPostgresEventStore({ connectionString: db.url, poolSize: 1 });
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await db?.drop();
  });

  async function withTwoTransactions(fn: () => Promise<void>): Promise<void> {
    txA = await store.connect();
    txB = await store.connect();
    try {
      await fn();
    } finally {
      await txA.query('ROLLBACK').catch(() => undefined);
      await txB.query('ROLLBACK').catch(() => undefined);
      txA.release();
      txB.release();
    }
  }

  it('a transaction that appended first and commits last holds back later commits, then both arrive in position order', async () => {
    const from = await store.headPosition();
    const reader = new SubscriptionReader(store.subscribeToAll({ fromPosition: from, pollIntervalMs: 50 }));
    try {
      await withTwoTransactions(async () => {
        await txA.query('BEGIN');
        const a = await appendOnClient(txA, store.appendSettings, 'late-a', newEvents(2));
        // B (another instance, as another service would) appends to another stream and commits while A is still open.
        const b = await other.appendToStream('late-b', newEvents(1));
        expect(a.position < b.position).toBe(true);

        await reader.nothingWithin(400);
        expect(await store.readAll({ fromPosition: from })).toEqual([]);
        expect(await store.headPosition()).toBe(from);

        await txA.query('COMMIT');
        const seen = await reader.take(3);
        expect(seen.map((e) => e.streamId)).toEqual(['late-a', 'late-a', 'late-b']);
        expect(seen[1]!.position).toBe(a.position);
        expect(seen[2]!.position).toBe(b.position);
        expect(isStrictlyIncreasing(seen.map((e) => e.position))).toBe(true);
        expect(await store.readAll({ fromPosition: from })).toEqual(seen);
        expect(await store.headPosition()).toBe(b.position);
        await reader.nothingWithin(200);
      });
    } finally {
      await reader.subscription.close();
    }
  });

  it('a write transaction held open in another database of the server holds nothing back, while one of this database does', async () => {
    const elsewhere = await createTestDatabase();
    const load = new pg.Client({ connectionString: elsewhere.url });
    await load.connect();
    try {
      // A bulk load or a migration in another database: a transaction id taken, not committed.
      await load.query('BEGIN');
      await load.query('SELECT pg_current_xact_id()');
      const from = await store.headPosition();
      const reader = new SubscriptionReader(store.subscribeToAll({ fromPosition: from, pollIntervalMs: 50 }));
      try {
        // Appended by another instance, whose notification tells `store`'s subscription of it.
        const appended = await other.appendToStream('beside-a-load', newEvents(2));
        const seen = await reader.take(2, 20_000);
        expect(seen.map((e) => e.streamId)).toEqual(['beside-a-load', 'beside-a-load']);
        // The appender reads its own writes, and its head is its append.
        expect(await other.readAll({ fromPosition: from })).toEqual(seen);
        expect(await other.headPosition()).toBe(appended.position);
        // So does a reader that did not append, at its first read: a one-shot read may be all it reads.
        const stranger = await openPostgresEventStore({ connectionString: db.url, poolSize: 1 });
        try {
          expect(await stranger.readAll({ fromPosition: from })).toEqual(seen);
          expect(await stranger.headPosition()).toBe(appended.position);
        } finally {
          await stranger.close();
        }
      } finally {
        await reader.subscription.close();
      }
      const after = await other.headPosition();

      // A transaction of this database does hold the log back, even for the appender (after its 2 s wait for its own write).
      await withTwoTransactions(async () => {
        await txA.query('BEGIN');
        await txA.query('SELECT pg_current_xact_id()');
        const held = await other.appendToStream('behind-this-database', newEvents(1));
        expect(await other.readAll({ fromPosition: after })).toEqual([]);
        await txA.query('COMMIT');
        expect((await other.readAll({ fromPosition: after })).map((e) => e.position)).toEqual([held.position]);
      });
    } finally {
      await load.query('ROLLBACK').catch(() => undefined);
      await load.end();
      await elsewhere.drop();
    }
  });

  it('a reader that appended nothing sees every event committed before it read, while short transactions come and go in another database', async () => {
    // A transaction of another database that is in flight at a read's snapshot and ends before
    // the read looks at the sessions is held by no one any more: the read cannot tell whose it
    // was, so it counts (latency, never a skip), and a one-shot read asks again rather than
    // answer short. Each churner holds its transaction id for up to 10 ms, so such endings are
    // common: without asking again about one read in twenty answered short here.
    const elsewhere = await createTestDatabase();
    const stranger = await openPostgresEventStore({ connectionString: db.url, poolSize: 1 });
    let stop = false;
    const churn = async (): Promise<void> => {
      const c = new pg.Client({ connectionString: elsewhere.url });
      await c.connect();
      try {
        while (!stop) {
          await c.query('BEGIN');
          await c.query('SELECT pg_current_xact_id(), pg_sleep(random() * 0.01)');
          await c.query('COMMIT');
        }
      } finally {
        await c.end();
      }
    };
    const churners = Array.from({ length: 6 }, churn);
    const short: string[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const appended = await other.appendToStream(`beside-churn-${i}`, newEvents(1));
        const head = await stranger.headPosition();
        if (head !== appended.position) short.push(`head ${head} after append at ${appended.position}`);
        const tail = await stranger.readAll({ fromPosition: appended.position - 1n });
        if (tail.at(-1)?.position !== appended.position) short.push(`read ended at ${tail.at(-1)?.position} after append at ${appended.position}`);
      }
    } finally {
      stop = true;
      await Promise.allSettled(churners);
      await stranger.close();
      await elsewhere.drop();
    }
    expect(short).toEqual([]);
  });

  it('no skip when a transaction takes its id before another one draws positions (where a position sequence would skip)', async () => {
    // With positions from a sequence, E (older xid, higher position) is readable while T
    // (younger xid, lower position) is in flight; a reader passes E's position and T's events
    // are skipped when it commits. Positions carry the transaction id, so E sorts first.
    const from = await store.headPosition();
    const delivered: RecordedEvent[] = [];
    const reader = new SubscriptionReader(store.subscribeToAll({ fromPosition: from, pollIntervalMs: 50 }));
    try {
      await withTwoTransactions(async () => {
        await txA.query('BEGIN');
        await txA.query('SELECT pg_current_xact_id()'); // E takes its transaction id first
        await txB.query('BEGIN');
        const t = await appendOnClient(txB, store.appendSettings, 'order-t', newEvents(1)); // T appends first
        const e = await appendOnClient(txA, store.appendSettings, 'order-e', newEvents(1)); // E appends second
        expect(e.position < t.position).toBe(true);

        await txA.query('COMMIT'); // E commits while T is still open: E is visible, nothing after it
        delivered.push(...(await reader.take(1)));
        expect(delivered[0]!.position).toBe(e.position);
        await reader.nothingWithin(300);

        await txB.query('COMMIT');
        delivered.push(...(await reader.take(1)));
        expect(delivered[1]!.position).toBe(t.position);
      });
      expect(delivered).toEqual(await store.readAll({ fromPosition: from }));
    } finally {
      await reader.subscription.close();
    }
  });

  it('many concurrent writers with interleaved commits: every subscriber sees every event once, in increasing order', async () => {
    const from = await store.headPosition();
    const reader = new SubscriptionReader(store.subscribeToAll({ fromPosition: from, batchSize: 7, pollIntervalMs: 20 }));
    const writers = 8;
    const perWriter = 15;
    try {
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < perWriter; i++) {
            const c = await store.connect();
            try {
              await c.query('BEGIN');
              await appendOnClient(c, store.appendSettings, `mix-${w}`, newEvents(1 + (i % 3)));
              // Hold some transactions open a little, so commits land out of position order.
              if ((w + i) % 3 === 0) await c.query('SELECT pg_sleep(0.01)');
              await c.query('COMMIT');
            } finally {
              c.release();
            }
          }
        }),
      );
      const all = await store.readAll({ fromPosition: from });
      expect(all).toHaveLength(writers * (5 * 1 + 5 * 2 + 5 * 3));
      const seen = await reader.take(all.length, 20_000);
      expect(seen).toEqual(all);
      expect(isStrictlyIncreasing(seen.map((e) => e.position))).toBe(true);
    } finally {
      await reader.subscription.close();
    }
  }, 60_000);
});

describe('postgres: appends to different streams run concurrently', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openPostgresEventStore({ connectionString: db.url, poolSize: 4 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('two open transactions both append before either commits; a third append to one of their streams waits for it', async () => {
    const a = await store.connect();
    const b = await store.connect();
    try {
      await a.query('BEGIN');
      await b.query('BEGIN');
      await appendOnClient(a, store.appendSettings, 'x', newEvents(1));
      // Would hang here if appends took a global lock (a is still open).
      await within(20_000, appendOnClient(b, store.appendSettings, 'y', newEvents(1)));
      // The pool's own append to an unrelated stream also goes through at once.
      await within(20_000, store.appendToStream('z', newEvents(1)));

      // But an append to x waits on x's head lock until a commits.
      let done = false;
      const contended = store.appendToStream('x', newEvents(1)).then((r) => {
        done = true;
        return r;
      });
      // Seen waiting on a lock by the server, not guessed from a pause.
      await waitingOnLock(store);
      expect(done).toBe(false);
      await a.query('COMMIT');
      expect((await within(20_000, contended)).nextExpectedRevision).toBe(1n);
      await b.query('COMMIT');
      expect((await store.readStream('y')).length).toBe(1);
    } finally {
      await a.query('ROLLBACK').catch(() => undefined);
      await b.query('ROLLBACK').catch(() => undefined);
      a.release();
      b.release();
    }
  });

  it('several appends in one caller transaction continue its positions, also after a rolled-back savepoint', async () => {
    const c = await store.connect();
    const positions: bigint[] = [];
    try {
      await c.query('BEGIN');
      positions.push((await appendOnClient(c, store.appendSettings, 'tx-a', newEvents(2))).position);
      await c.query('SAVEPOINT sp');
      await appendOnClient(c, store.appendSettings, 'tx-b', newEvents(3));
      await c.query('ROLLBACK TO SAVEPOINT sp');
      positions.push((await appendOnClient(c, store.appendSettings, 'tx-b', newEvents(1))).position);
      positions.push((await appendOnClient(c, store.appendSettings, 'tx-a', newEvents(1))).position);
      await c.query('COMMIT');
    } finally {
      c.release();
    }
    // One transaction: consecutive positions, the savepoint's events gone and their positions reused.
    expect(positions.map((p) => p - positions[0]!)).toEqual([0n, 1n, 2n]);
    expect((await store.readStream('tx-a')).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
    expect((await store.readStream('tx-b')).map((e) => e.revision)).toEqual([0n]);
    expect((await store.verify()).ok).toBe(true);
  });

  it('the same event raced into two streams: the second waits for the first, then gets a conflict, not a duplicate row', async () => {
    const [e] = newEvents(1);
    const a = await store.connect();
    try {
      await a.query('BEGIN');
      await appendOnClient(a, store.appendSettings, 'race-1', [e!]);
      const second = store.appendToStream('race-2', [e!]).then(
        () => 'appended',
        (err: Error) => err.name,
      );
      await waitingOnLock(store); // the second append waits for the first's transaction
      await a.query('COMMIT');
      expect(await within(20_000, second)).toBe('IdempotencyConflictError');
    } finally {
      await a.query('ROLLBACK').catch(() => undefined);
      a.release();
    }
    expect(await store.readStream('race-2')).toEqual([]);
  });

  it('a rolled-back caller transaction leaves no event, no stream head and no hole in the chain', async () => {
    const c = await store.connect();
    try {
      await c.query('BEGIN');
      await appendOnClient(c, store.appendSettings, 'rolled-back', newEvents(2));
      await c.query('ROLLBACK');
    } finally {
      c.release();
    }
    expect(await store.readStream('rolled-back')).toEqual([]);
    expect((await store.appendToStream('rolled-back', newEvents(1), { expectedRevision: 'no_stream' })).nextExpectedRevision).toBe(0n);
    expect((await store.verify()).ok).toBe(true);
  });
});

describe('postgres: notifications', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;
  let other: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openPostgresEventStore({ connectionString: db.url, poolSize: 2 });
    other = await openPostgresEventStore({ connectionString: db.url, poolSize: 2 });
  });
  afterAll(async () => {
    await store?.close();
    await other?.close();
    await db?.drop();
  });

  it("another instance's append wakes a subscription through LISTEN/NOTIFY, long before its next poll", async () => {
    const reader = new SubscriptionReader(store.subscribeToAll({ pollIntervalMs: 60_000 }));
    try {
      // The reader pulls (an empty store: nothing to yield), and its first wait opens the LISTEN
      // connection. Once the server shows it (not guessed from a pause), only a notification can
      // wake the reader before its minute is out.
      await reader.nothingWithin(0);
      await listening(store);
      await other.appendToStream('woken', newEvents(1));
      // Waits are failure guards, well below the one-minute poll that would also deliver it.
      expect((await reader.take(1, 20_000))[0]!.streamId).toBe('woken');

      // An append in a caller's transaction notifies once the caller says it committed.
      const c = await other.connect();
      let appended: bigint;
      try {
        await c.query('BEGIN');
        appended = (await appendOnClient(c, other.appendSettings, 'woken', newEvents(1))).position;
        await c.query('COMMIT');
      } finally {
        c.release();
      }
      other.notifyAppended(appended);
      expect((await reader.take(1, 20_000))[0]!.revision).toBe(1n);
    } finally {
      await reader.subscription.close();
    }
  });
});

describe('postgres: the server ends a connection the store has checked out', () => {
  let db: TestDatabase;
  let store: PostgresEventStore;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openPostgresEventStore({ connectionString: db.url, poolSize: 2 });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('between two statements of a transaction (as a server restart does): the process lives on, the statement fails, the next append gets a fresh connection', async () => {
    const c = await store.connect();
    const ended = new Promise<void>((resolve) => c.once('end', () => resolve()));
    await c.query('BEGIN');
    const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    // What a fast shutdown sends every backend: FATAL 57P01, with no statement of ours running.
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    try {
      expect((await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [pid])).rows[0]!.ok).toBe(true);
    } finally {
      await admin.end();
    }
    // Unguarded, the client's 'error' event had no listener here and Node ended the process.
    await ended;
    await expect(c.query('SELECT 1')).rejects.toThrow();
    c.release();
    const r = await store.appendToStream('after-terminate', newEvents(1));
    expect(r.nextExpectedRevision).toBe(0n);
    expect((await store.readStream('after-terminate')).length).toBe(1);
  });
});

/** Resolves once some connection to the store's database waits on a lock (a heavyweight lock: a row, a transaction). */
async function waitingOnLock(store: PostgresEventStore, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const c = await store.connect();
    try {
      const { rows } = await c.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
      if (Number(rows[0]!.n) > 0) return;
    } finally {
      c.release();
    }
    if (Date.now() > end) throw new Error(`no connection waited on a lock within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves once the database has a connection whose last statement was a LISTEN: a change feed's. */
async function listening(store: PostgresEventStore, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const c = await store.connect();
    try {
      const { rows } = await c.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle' AND query LIKE 'LISTEN %'");
      if (Number(rows[0]!.n) > 0) return;
    } finally {
      c.release();
    }
    if (Date.now() > end) throw new Error(`no LISTEN connection within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function within<T>(ms: number, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not done within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
