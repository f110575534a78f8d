import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteEventStore } from '#event-store';
import { CREATE_TABLES } from '../src/sqlite/schema.js';
import type { BenchAdapter, BenchTarget, RawBenchRow } from './bench-adapter.js';

/**
 * SQLite: the store on one file, the raw writer on another file in the same directory with the
 * same pragmas (WAL, synchronous=FULL) and the same `events` table and indexes.
 * Directory: GPUNET_BENCH_DIR, default the OS temp directory (put it on the disk you care about).
 */
export const sqliteBenchAdapter: BenchAdapter = {
  name: 'sqlite',
  async open(): Promise<BenchTarget> {
    const dir = mkdtempSync(join(process.env.GPUNET_BENCH_DIR ?? tmpdir(), 'gpunet-bench-'));
    const store = new SqliteEventStore({ path: join(dir, 'store.db') });
    const raw = new Database(join(dir, 'raw.db'));
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.exec(CREATE_TABLES);
    const insert = raw.prepare(
      'INSERT INTO events (stream_id, revision, event_id, type, data, metadata, job_id, team, recorded_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const insertAll = raw.transaction((rows: readonly RawBenchRow[]) => {
      for (const r of rows) insert.run(r.streamId, r.revision, r.eventId, r.type, r.dataJson, r.metadataJson, r.jobId, r.team, r.recordedAt, r.hash);
    });
    return {
      store,
      notes: `WAL, synchronous=FULL, files in ${dir}`,
      async rawInsert(rows) {
        insertAll(rows);
      },
      async close() {
        await store.close();
        raw.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};
