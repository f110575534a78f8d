import type pg from 'pg';
import {
  projectionLayout,
  validateProjectionQuery,
  validateProjectionSpec,
  type ProjectionAnswer,
  type ProjectionCheckpoint,
  type ProjectionCondition,
  type ProjectionQuery,
  type ProjectionRow,
  type ProjectionTable,
  type ProjectionTableSpec,
} from '../projection-table.js';

/** Rows per INSERT statement of a commit (PostgreSQL takes at most 65,535 parameters per statement). */
const ROWS_PER_STATEMENT = 500;

/**
 * A projection table in the store's PostgreSQL schema. `commit` takes the table's position row
 * with `UPDATE … WHERE position = from`: a second writer blocks on that row and, once the first
 * commits, finds the position moved and writes nothing.
 */
export class PostgresProjectionTable implements ProjectionTable {
  private readonly table: string;

  private constructor(
    private readonly connect: () => Promise<pg.PoolClient>,
    private readonly schema: string,
    readonly spec: ProjectionTableSpec,
  ) {
    this.table = `${schema}.projection_${spec.name}`;
  }

  /** Creates the table when missing; empties it when a different version or layout made it. */
  static async open(connect: () => Promise<pg.PoolClient>, schema: string, spec: ProjectionTableSpec): Promise<PostgresProjectionTable> {
    validateProjectionSpec(spec);
    const table = `${schema}.projection_${spec.name}`;
    const layout = projectionLayout(spec);
    await inTransaction(connect, 'BEGIN', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`gpunet-projection:${schema}.${spec.name}`]);
      await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.projections (
        name text PRIMARY KEY, version integer NOT NULL, layout text NOT NULL, position bigint NOT NULL, event_id text)`);
      const { rows } = await client.query<{ version: number; layout: string }>(`SELECT version, layout FROM ${schema}.projections WHERE name = $1`, [spec.name]);
      const row = rows[0];
      // No row of its own, or another derivation's: whatever the table holds is not this fold's output.
      if (!row || row.version !== spec.version || row.layout !== layout) {
        await client.query(`DROP TABLE IF EXISTS ${table}`);
        await client.query(`DELETE FROM ${schema}.projections WHERE name = $1`, [spec.name]);
      }
      const cols = spec.columns.map((c) => `, ${c.name} ${c.type === 'integer' ? 'bigint' : 'text'}`).join('');
      await client.query(`CREATE TABLE IF NOT EXISTS ${table} (key text PRIMARY KEY, doc text NOT NULL${cols})`);
      for (const [i, ix] of spec.indexes.entries()) {
        // Text columns compare byte-wise, as SQLite's do: one order on both stores.
        const cols = ix.map((c) => (c === 'key' || spec.columns.find((x) => x.name === c)?.type === 'text' ? `${c} COLLATE "C"` : c));
        await client.query(`CREATE INDEX IF NOT EXISTS projection_${spec.name}_ix${i} ON ${table} (${cols.join(', ')})`);
      }
      await client.query(`INSERT INTO ${schema}.projections (name, version, layout, position, event_id) VALUES ($1, $2, $3, 0, NULL) ON CONFLICT (name) DO NOTHING`, [
        spec.name,
        spec.version,
        layout,
      ]);
    });
    return new PostgresProjectionTable(connect, schema, spec);
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
      const { rows } = await client.query<{ key: string; doc: string }>(`SELECT key, doc FROM ${this.table} WHERE key = ANY ($1::text[])`, [keys]);
      for (const r of rows) out.set(r.key, r.doc);
      return out;
    } finally {
      client.release();
    }
  }

  async commit(from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]): Promise<boolean> {
    const columns = ['key', 'doc', ...this.spec.columns.map((c) => c.name)];
    return inTransaction(this.connect, 'BEGIN', async (client) => {
      const moved = await client.query(`UPDATE ${this.schema}.projections SET position = $1, event_id = $2 WHERE name = $3 AND position = $4 AND position < $1`, [
        to.position.toString(),
        to.eventId,
        this.spec.name,
        from.position.toString(),
      ]);
      if (moved.rowCount !== 1) return false;
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        const params: unknown[] = [];
        const tuples = chunk.map((r) => {
          const values = [r.key, r.doc, ...this.spec.columns.map((c) => r.values[c.name] ?? null)];
          return `(${values.map((v) => (params.push(v), `$${params.length}`)).join(', ')})`;
        });
        await client.query(
          `INSERT INTO ${this.table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}
           ON CONFLICT (key) DO UPDATE SET ${columns.slice(1).map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`,
          params,
        );
      }
      return true;
    });
  }

  async reset(from: ProjectionCheckpoint): Promise<boolean> {
    return inTransaction(this.connect, 'BEGIN', async (client) => {
      const moved = await client.query(`UPDATE ${this.schema}.projections SET position = 0, event_id = NULL WHERE name = $1 AND position = $2`, [this.spec.name, from.position.toString()]);
      if (moved.rowCount !== 1) return false;
      await client.query(`DELETE FROM ${this.table}`);
      return true;
    });
  }

  async query(query: ProjectionQuery): Promise<ProjectionAnswer> {
    validateProjectionQuery(this.spec, query);
    // One snapshot for the count, the rows and the position they hold.
    return inTransaction(this.connect, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', async (client) => {
      const params: unknown[] = [];
      const where = (query.where ?? []).map((w) => this.conditionSql(w, params));
      const whereSql = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
      const { rows: count } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${this.table}${whereSql}`, params);
      const order = query.orderBy && query.orderBy.length > 0 ? ` ORDER BY ${query.orderBy.map((c) => this.collated(c)).join(', ')}` : '';
      const { rows } = await client.query<{ key: string; doc: string }>(
        `SELECT key, doc FROM ${this.table}${whereSql}${order} LIMIT ${query.limit === undefined ? 'ALL' : `$${params.length + 1}`} OFFSET $${params.length + (query.limit === undefined ? 1 : 2)}`,
        [...params, ...(query.limit === undefined ? [] : [query.limit]), query.offset ?? 0],
      );
      const counts =
        query.countBy === undefined
          ? undefined
          : (await client.query<{ value: string | null; n: string }>(`SELECT ${query.countBy} AS value, count(*) AS n FROM ${this.table}${whereSql} GROUP BY ${query.countBy}`, params)).rows.map((r) => ({
              value: r.value !== null && this.spec.columns.find((c) => c.name === query.countBy)?.type === 'integer' ? Number(r.value) : r.value,
              count: Number(r.n),
            }));
      return { checkpoint: await this.readCheckpoint(client), rows, total: Number(count[0]!.n), ...(counts ? { counts } : {}) };
    });
  }

  private collated(column: string): string {
    return column === 'key' || this.spec.columns.find((c) => c.name === column)?.type === 'text' ? `${column} COLLATE "C"` : column;
  }

  private conditionSql(c: ProjectionCondition, params: unknown[]): string {
    if (c.op === 'not null') return `${c.column} IS NOT NULL`;
    if (c.op === 'in') {
      const integer = this.spec.columns.find((x) => x.name === c.column)?.type === 'integer';
      params.push(c.values.map(String));
      return `${this.collated(c.column)} = ANY ($${params.length}::${integer ? 'bigint' : 'text'}[])`;
    }
    params.push(c.value);
    return `${this.collated(c.column)} ${c.op} $${params.length}`;
  }

  private async readCheckpoint(client: pg.PoolClient): Promise<ProjectionCheckpoint> {
    const { rows } = await client.query<{ position: string; event_id: string | null }>(`SELECT position, event_id FROM ${this.schema}.projections WHERE name = $1`, [this.spec.name]);
    return { position: BigInt(rows[0]?.position ?? 0), eventId: rows[0]?.event_id ?? null };
  }
}

async function inTransaction<T>(connect: () => Promise<pg.PoolClient>, begin: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await connect();
  try {
    await client.query(begin);
    const result = await work(client);
    // A compare and set that lost wrote nothing: its transaction ends the same either way.
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
