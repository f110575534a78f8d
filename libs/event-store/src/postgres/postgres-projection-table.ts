import type pg from 'pg';
import { checkpointOf, countsOf, isAnotherDerivation, postgresProjectionDialect, projectionSql, rowValues, type ProjectionSql } from '../projection-sql.js';
import {
  droppedSpec,
  projectionLayout,
  validateProjectionQuery,
  validateProjectionSpec,
  type ProjectionAnswer,
  type ProjectionCheckpoint,
  type ProjectionQuery,
  type ProjectionRow,
  type ProjectionTable,
  type ProjectionTableSpec,
} from '../projection-table.js';
import { withTransaction } from './transaction.js';

/** Rows per INSERT statement of a commit (PostgreSQL takes at most 65,535 parameters per statement). */
const ROWS_PER_STATEMENT = 500;

/** The statements in the store's schema. */
const sqlIn = (schema: string, spec: ProjectionTableSpec): ProjectionSql => projectionSql(spec, postgresProjectionDialect(schema));

/** Whether `column` is an integer column of the spec (PostgreSQL returns bigint as text). */
const integerColumn = (spec: ProjectionTableSpec, column: string | undefined): boolean => spec.columns.find((c) => c.name === column)?.type === 'integer';

/**
 * A projection table in the store's PostgreSQL schema. `commit` takes the table's position row
 * with `UPDATE … WHERE position = from`: a second writer blocks on that row and, once the first
 * commits, finds the position moved and writes nothing.
 */
export class PostgresProjectionTable implements ProjectionTable {
  private constructor(
    private readonly connect: () => Promise<pg.PoolClient>,
    private readonly sql: ProjectionSql,
    readonly spec: ProjectionTableSpec,
  ) {}

  /** Drops `projection_<name>` and its position; true when the table was there. */
  static async drop(connect: () => Promise<pg.PoolClient>, schema: string, name: string): Promise<boolean> {
    const sql = sqlIn(schema, droppedSpec(name));
    return withTransaction(connect, async (client) => {
      const present = async (table: string) => (await client.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [table])).rows[0]!.present;
      if (!(await present(sql.table))) return false;
      await client.query(sql.dropTable);
      if (await present(sql.projections)) await client.query(sql.deletePosition, [name]);
      return true;
    }, { lock: `gpunet-projection:${schema}` });
  }

  /** Creates the table when missing; empties it when a different version or layout made it. */
  static async open(connect: () => Promise<pg.PoolClient>, schema: string, spec: ProjectionTableSpec): Promise<PostgresProjectionTable> {
    validateProjectionSpec(spec);
    const sql = sqlIn(schema, spec);
    const layout = projectionLayout(spec);
    // One lock per schema, not per table: every table's opening also makes the shared table of
    // positions, and two `CREATE TABLE IF NOT EXISTS` of it at once fail one of them (pg_type).
    await withTransaction(connect, async (client) => {
      await client.query(`CREATE TABLE IF NOT EXISTS ${sql.projections} (
        name text PRIMARY KEY, version integer NOT NULL, layout text NOT NULL, position bigint NOT NULL, event_id text)`);
      const { rows } = await client.query<{ version: number; layout: string }>(sql.selectDerivation, [spec.name]);
      if (isAnotherDerivation(rows[0], spec, layout)) {
        await client.query(sql.dropTable);
        await client.query(sql.deletePosition, [spec.name]);
      }
      await client.query(sql.createTable);
      for (const ix of sql.createIndexes) await client.query(ix);
      await client.query(sql.insertPosition, [spec.name, spec.version, layout]);
    }, { lock: `gpunet-projection:${schema}` });
    return new PostgresProjectionTable(connect, sql, spec);
  }

  async checkpoint(): Promise<ProjectionCheckpoint> {
    const client = await this.connect();
    try {
      return await this.readCheckpoint(client);
    } finally {
      client.release();
    }
  }

  async get(keys: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (keys.length === 0) return out;
    const client = await this.connect();
    try {
      const { rows } = await client.query<{ key: string; doc: string }>(`SELECT key, doc FROM ${this.sql.table} WHERE key = ANY ($1::text[])`, [keys]);
      for (const r of rows) out.set(r.key, r.doc);
      return out;
    } finally {
      client.release();
    }
  }

  async commit(from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]): Promise<boolean> {
    return withTransaction(this.connect, async (client) => {
      const moved = await client.query(this.sql.advance, [to.position.toString(), to.eventId, this.spec.name, from.position.toString(), to.position.toString()]);
      if (moved.rowCount !== 1) return false;
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        await client.query(this.sql.upsert(chunk.length), chunk.flatMap((r) => rowValues(this.spec, r)));
      }
      return true;
    });
  }

  async put(rows: readonly ProjectionRow[], remove: readonly string[] = []): Promise<void> {
    await withTransaction(this.connect, async (client) => {
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        await client.query(this.sql.upsert(chunk.length), chunk.flatMap((r) => rowValues(this.spec, r)));
      }
      if (remove.length > 0) await client.query(`DELETE FROM ${this.sql.table} WHERE key = ANY ($1::text[])`, [remove]);
    });
  }

  async reset(from: ProjectionCheckpoint): Promise<boolean> {
    return withTransaction(this.connect, async (client) => {
      const moved = await client.query(this.sql.rewind, [this.spec.name, from.position.toString()]);
      if (moved.rowCount !== 1) return false;
      await client.query(this.sql.clear);
      return true;
    });
  }

  async query(query: ProjectionQuery): Promise<ProjectionAnswer> {
    validateProjectionQuery(this.spec, query);
    const q = this.sql.query(query);
    // One snapshot for the count, the rows and the position they hold.
    return withTransaction(this.connect, async (client) => {
      const { rows: count } = await client.query<{ n: string }>(q.count, q.countParams);
      const { rows } = await client.query<{ key: string; doc: string }>(q.rows, q.rowsParams);
      const counts = q.countBy === undefined ? undefined : countsOf((await client.query<{ value: unknown; n: string }>(q.countBy, q.countParams)).rows.map((r) => ({ ...r, value: typeof r.value === 'string' && integerColumn(this.spec, query.countBy) ? BigInt(r.value) : r.value })));
      return { checkpoint: await this.readCheckpoint(client), rows, total: Number(count[0]!.n), ...(counts ? { counts } : {}) };
    }, { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' });
  }

  private async readCheckpoint(client: pg.PoolClient): Promise<ProjectionCheckpoint> {
    const { rows } = await client.query<{ position: string; event_id: string | null }>(this.sql.selectCheckpoint, [this.spec.name]);
    return checkpointOf(rows[0]);
  }
}
