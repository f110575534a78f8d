import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describeEventStoreConformance } from '../conformance/event-store.conformance.js';
import { newEvent, newEvents, SubscriptionReader } from '../conformance/fixtures.js';
import type { ConformanceContext, ConformanceHarness, RawEventRow } from '../conformance/harness.js';
import type { EventStore } from '../event-store.js';
import { canonicalJson, computeEventHash, GENESIS_HASH } from '../hash-chain.js';
import { CREATE_EVENT_GUARDS, DROP_EVENT_GUARDS } from './schema.js';
import { readAllQuery, SqliteEventStore, type SqliteEventStoreOptions } from './sqlite-event-store.js';

/** A temp directory per context; tamper and plain-SQL hooks use their own connection, as an intruder would. */
function sqliteHarness(extra: Omit<SqliteEventStoreOptions, 'path'> = {}): ConformanceHarness {
  return {
    name: extra.chainKey ? 'sqlite (HMAC chain key)' : 'sqlite',
    async setup(): Promise<ConformanceContext> {
      const dir = mkdtempSync(join(tmpdir(), 'gpunet-es-'));
      const path = join(dir, 'events.db');
      const open = (): SqliteEventStore => new SqliteEventStore({ path, ...extra });
      const opened: EventStore[] = [];
      let current = open();
      opened.push(current);

      /** Runs `fn` on a separate connection; with `unguarded`, inside one transaction with the guards dropped and recreated. */
      const direct = (fn: (db: Database.Database) => void, unguarded = false): void => {
        const db = new Database(path, { timeout: 5_000 });
        try {
          // Rethrown in this realm: better-sqlite3 may build its errors in another test file's VM context.
          if (!unguarded) {
            try {
              return fn(db);
            } catch (err) {
              throw new Error(String((err as { message?: unknown }).message), { cause: err });
            }
          }
          db.transaction(() => {
            db.exec(DROP_EVENT_GUARDS);
            fn(db);
            db.exec(CREATE_EVENT_GUARDS);
          }).immediate();
        } finally {
          db.close();
        }
      };

      return {
        get store() {
          return current;
        },
        ...(extra.chainKey ? { chainKey: extra.chainKey } : {}),
        async openAnother() {
          const s = open();
          opened.push(s);
          return s;
        },
        async reopen() {
          await current.close();
          current = open();
          opened.push(current);
          return current;
        },
        tamper: {
          async alterData(position, data) {
            direct((db) => db.prepare('UPDATE events SET data = ? WHERE position = ?').run(canonicalJson(data), position), true);
          },
          async deleteAt(position) {
            direct((db) => db.prepare('DELETE FROM events WHERE position = ?').run(position), true);
          },
          async insertRow(row: RawEventRow) {
            direct((db) =>
              db
                .prepare(
                  'INSERT INTO events (position, stream_id, revision, event_id, type, data, metadata, job_id, team, recorded_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
                )
                .run(
                  row.position,
                  row.streamId,
                  row.revision,
                  row.eventId,
                  row.type,
                  canonicalJson(row.data),
                  canonicalJson(row.metadata),
                  row.metadata.jobId ?? null,
                  row.metadata.team ?? null,
                  row.recordedAt,
                  row.hash,
                ),
            );
          },
        },
        plainSql: {
          async updateAt(position) {
            direct((db) => db.prepare("UPDATE events SET data = '{}' WHERE position = ?").run(position));
          },
          async deleteAt(position) {
            direct((db) => db.prepare('DELETE FROM events WHERE position = ?').run(position));
          },
        },
        async dispose() {
          await Promise.all(opened.map((s) => s.close()));
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

describeEventStoreConformance(sqliteHarness());
describeEventStoreConformance(sqliteHarness({ chainKey: 'conformance-chain-key' }));

describe('sqlite event store specifics', () => {
  let dir: string;
  const opened: SqliteEventStore[] = [];
  const open = (options: Omit<SqliteEventStoreOptions, 'path'> = {}): SqliteEventStore => {
    const s = new SqliteEventStore({ path: join(dir, 'events.db'), ...options });
    opened.push(s);
    return s;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-es-'));
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens the file in WAL mode with synchronous=FULL', async () => {
    const store = open();
    await store.appendToStream('s', [newEvent()]);
    const db = new Database(join(dir, 'events.db'), { readonly: true });
    try {
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      db.close();
    }
    // synchronous is per connection: read it through the store's own connection.
    expect((store as unknown as { db: Database.Database }).db.pragma('synchronous', { simple: true })).toBe(2n);
  });

  it("reads one job's events of a team by the job's index, not by walking the team's", async () => {
    const store = open();
    for (let j = 0; j < 50; j++) {
      await store.appendToStream(`job-${j}`, [0, 1].map((i) => newEvent({ type: i === 0 ? 'JobSubmitted' : 'JobEnded', data: { i }, metadata: { jobId: `job-${j}`, team: 'team-a' } })));
    }
    const options = { filter: { team: 'team-a', jobId: 'job-7', types: ['JobSubmitted', 'JobEnded'] } };
    expect((await store.readAll(options)).map((e) => e.streamId)).toEqual(['job-7', 'job-7']);
    const { sql, params } = readAllQuery(options)!;
    const plan = (store as unknown as { db: Database.Database }).db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[];
    expect(plan.map((p) => p.detail).join('\n')).toContain('USING INDEX events_job_id');
  });

  it('stamps recordedAt with the injected clock and hashes with it', async () => {
    const store = open({ clock: () => new Date('2031-05-06T07:08:09.010Z') });
    await store.appendToStream('s', newEvents(2));
    const [e0, e1] = await store.readStream('s');
    expect(e0!.recordedAt).toBe('2031-05-06T07:08:09.010Z');
    expect(e0!.hash).toBe(computeEventHash(GENESIS_HASH, e0!));
    expect(e1!.hash).toBe(computeEventHash(e0!.hash, e1!));
  });

  it('a store with another chain key finds the chain forged, from the first event', async () => {
    await open({ chainKey: 'key-1' }).appendToStream('s', newEvents(2));
    const first = (await opened[0]!.readAll())[0]!;
    expect(await open({ chainKey: 'key-1' }).verify()).toMatchObject({ ok: true, events: 2 });
    expect(await open({ chainKey: 'key-2' }).verify()).toMatchObject({ ok: false, firstBadPosition: first.position, streamId: 's' });
    expect(await open().verify()).toMatchObject({ ok: false, firstBadPosition: first.position });
  });

  it("finds another process's appends by polling when no in-process wake-up comes", async () => {
    // Through a symlinked directory the two instances do not share a wake-up registry, as two processes would not.
    const alias = join(dir, 'alias');
    symlinkSync(dir, alias);
    const subscriber = open();
    const writer = new SqliteEventStore({ path: join(alias, 'events.db') });
    opened.push(writer);
    const reader = new SubscriptionReader(subscriber.subscribeToAll({ pollIntervalMs: 100 }));
    try {
      await reader.nothingWithin(50);
      await writer.appendToStream('s', newEvents(3));
      expect((await reader.take(3, 2_000)).map((e) => e.revision)).toEqual([0n, 1n, 2n]);
    } finally {
      await reader.subscription.close();
    }
  });

  it('refuses to rewind or delete a stream head by plain SQL', async () => {
    await open().appendToStream('s', newEvents(3));
    const db = new Database(join(dir, 'events.db'));
    try {
      expect(() => db.prepare("UPDATE streams SET revision = 1 WHERE stream_id = 's'").run()).toThrow(/only move forward/);
      expect(() => db.prepare("DELETE FROM streams WHERE stream_id = 's'").run()).toThrow(/never deleted/);
    } finally {
      db.close();
    }
  });

  it('refuses calls after close with IllegalStateError, and close is idempotent', async () => {
    const store = open();
    await store.close();
    await store.close();
    await expect(store.readAll()).rejects.toMatchObject({ name: 'IllegalStateError' });
  });
});

describe('SqliteEventStore: file modes', () => {
  it('creates the store 0600 (and its -wal and -shm) in a new 0700 directory, whatever the umask', async () => {
    const { statSync, writeFileSync } = await import('node:fs');
    const base = mkdtempSync(join(tmpdir(), 'gpunet-es-mode-'));
    const old = process.umask(0o000);
    try {
      const path = join(base, 'data', 'events.db');
      const store = new SqliteEventStore({ path });
      await store.appendToStream('s-1', [newEvent()]);
      const mode = (p: string) => statSync(p).mode & 0o777;
      expect(mode(join(base, 'data'))).toBe(0o700);
      expect(mode(path)).toBe(0o600);
      expect(mode(`${path}-wal`)).toBe(0o600);
      expect(mode(`${path}-shm`)).toBe(0o600);
      await store.close();

      // A store file someone left world-readable is closed when it is opened.
      const loose = join(base, 'loose.db');
      writeFileSync(loose, '', { mode: 0o644 });
      const again = new SqliteEventStore({ path: loose });
      expect(mode(loose)).toBe(0o600);
      await again.close();
    } finally {
      process.umask(old);
      rmSync(base, { recursive: true, force: true });
    }
  });
});
