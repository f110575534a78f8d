import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresEventStore } from '#event-store';
import { eventsTableSql } from '../src/postgres/schema.js';
import type { BenchAdapter, BenchTarget, RawBenchRow } from './bench-adapter.js';

/** Server the benchmark creates its databases on: GPUNET_BENCH_PG_URL, else GPUNET_TEST_PG_URL, else the local default. */
const ADMIN_URL = process.env.GPUNET_BENCH_PG_URL ?? process.env.GPUNET_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

const RAW_COLUMNS = ['position', 'stream_id', 'revision', 'event_id', 'type', 'data', 'metadata', 'recorded_at', 'hash'] as const;

/**
 * PostgreSQL: a fresh database of the benchmark's own, dropped afterwards. The store lives in
 * schema `gpunet`; the raw writer inserts into an identical `events` table (same columns,
 * generated columns and indexes, no guards) in schema `raw` of the same database: 1 row per
 * autocommitted INSERT, or 100 rows in one multi-row INSERT, one round trip each.
 */
export const postgresBenchAdapter: BenchAdapter = {
  name: 'postgres',
  async open(): Promise<BenchTarget> {
    const name = `gpunet_bench_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    try {
      await admin.connect();
    } catch (err) {
      throw new Error(`PostgreSQL is not reachable at ${ADMIN_URL} (${(err as Error).message}); set GPUNET_BENCH_PG_URL`, { cause: err });
    }
    const { rows } = await admin.query<{ v: string }>(`SELECT current_setting('server_version') AS v`);
    const settings = await admin.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method') ORDER BY name`,
    );
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(ADMIN_URL);
    url.pathname = `/${name}`;

    const store = await openPostgresEventStore({ connectionString: url.toString(), poolSize: 4 });
    const raw = new pg.Client({ connectionString: url.toString() });
    await raw.connect();
    await raw.query(`CREATE SCHEMA raw; ${eventsTableSql('raw')}`);
    let position = 0n;
    const statements = new Map<number, string>();
    const insertText = (n: number) => {
      let text = statements.get(n);
      if (!text) {
        const tuples = Array.from({ length: n }, (_, r) => `(${RAW_COLUMNS.map((_, c) => `$${r * RAW_COLUMNS.length + c + 1}`).join(', ')})`);
        text = `INSERT INTO raw.events (${RAW_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')}`;
        statements.set(n, text);
      }
      return text;
    };

    return {
      store,
      notes: `PostgreSQL ${rows[0]?.v}, ${settings.rows.map((r) => `${r.name}=${r.setting}`).join(', ')}, database ${name}`,
      async rawInsert(batch: readonly RawBenchRow[]) {
        const values: unknown[] = [];
        for (const r of batch) {
          values.push(String(++position), r.streamId, r.revision.toString(), r.eventId, r.type, r.dataJson, r.metadataJson, r.recordedAt, r.hash);
        }
        await raw.query({ name: `raw_insert_${batch.length}`, text: insertText(batch.length), values });
      },
      async close() {
        await store.close();
        await raw.end();
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await admin.end();
      },
    };
  },
};
