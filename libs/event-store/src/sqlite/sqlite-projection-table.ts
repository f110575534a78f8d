import type Database from 'better-sqlite3';
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

/** The positions of every projection table of the file: one row per table. */
const CREATE_PROJECTIONS = `
CREATE TABLE IF NOT EXISTS projections (
  name     TEXT    PRIMARY KEY,
  version  INTEGER NOT NULL,
  layout   TEXT    NOT NULL,
  position INTEGER NOT NULL,
  event_id TEXT
) WITHOUT ROWID;
`;

/**
 * A projection table in the store's SQLite file, on the store's own connection. Writes run in
 * `BEGIN IMMEDIATE` (one writer across processes), so the compare and set of `commit` holds.
 */
export class SqliteProjectionTable implements ProjectionTable {
  private readonly table: string;
  private readonly statements = new Map<string, Database.Statement>();
  private readonly commitTx: (from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]) => boolean;
  private readonly resetTx: (from: ProjectionCheckpoint) => boolean;
  private readonly queryTx: (query: ProjectionQuery) => ProjectionAnswer;

  private constructor(
    private readonly db: Database.Database,
    readonly spec: ProjectionTableSpec,
    private readonly withWriteLock: <T>(write: () => T) => Promise<T>,
  ) {
    this.table = `projection_${spec.name}`;
    const columns = ['key', 'doc', ...spec.columns.map((c) => c.name)];
    const upsert = this.db.prepare(
      `INSERT INTO ${this.table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})
       ON CONFLICT (key) DO UPDATE SET ${columns.slice(1).map((c) => `${c} = excluded.${c}`).join(', ')}`,
    );
    const advance = this.db.prepare('UPDATE projections SET position = ?, event_id = ? WHERE name = ? AND position = ? AND position < ?');
    this.commitTx = this.db.transaction((from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]) => {
      // The compare and set first: a writer that lost the race writes no row.
      if (advance.run(to.position, to.eventId, spec.name, from.position, to.position).changes !== 1) return false;
      for (const r of rows) upsert.run(r.key, r.doc, ...spec.columns.map((c) => r.values[c.name] ?? null));
      return true;
    }).immediate;
    const rewind = this.db.prepare('UPDATE projections SET position = 0, event_id = NULL WHERE name = ? AND position = ?');
    const clear = this.db.prepare(`DELETE FROM ${this.table}`);
    this.resetTx = this.db.transaction((from: ProjectionCheckpoint) => {
      if (rewind.run(spec.name, from.position).changes !== 1) return false;
      clear.run();
      return true;
    }).immediate;
    this.queryTx = this.db.transaction((query: ProjectionQuery) => this.querySnapshot(query)).deferred;
  }

  /** Creates the table when missing; empties it when a different version or layout made it. */
  static async open(db: Database.Database, spec: ProjectionTableSpec, withWriteLock: <T>(write: () => T) => Promise<T>): Promise<SqliteProjectionTable> {
    validateProjectionSpec(spec);
    const table = `projection_${spec.name}`;
    const layout = projectionLayout(spec);
    await withWriteLock(() =>
      db
        .transaction(() => {
          db.exec(CREATE_PROJECTIONS);
          const row = db.prepare('SELECT version, layout FROM projections WHERE name = ?').get(spec.name) as { version: bigint; layout: string } | undefined;
          // No row of its own, or another derivation's: whatever the table holds is not this fold's output.
          if (!row || Number(row.version) !== spec.version || row.layout !== layout) {
            db.exec(`DROP TABLE IF EXISTS ${table}`);
            db.prepare('DELETE FROM projections WHERE name = ?').run(spec.name);
          }
          const cols = spec.columns.map((c) => `${c.name} ${c.type === 'integer' ? 'INTEGER' : 'TEXT'}`);
          db.exec(`CREATE TABLE IF NOT EXISTS ${table} (key TEXT NOT NULL UNIQUE, doc TEXT NOT NULL${cols.map((c) => `, ${c}`).join('')})`);
          spec.indexes.forEach((ix, i) => db.exec(`CREATE INDEX IF NOT EXISTS ${table}_ix${i} ON ${table} (${ix.join(', ')})`));
          db.prepare('INSERT INTO projections (name, version, layout, position, event_id) VALUES (?, ?, ?, 0, NULL) ON CONFLICT (name) DO NOTHING').run(spec.name, spec.version, layout);
        })
        .immediate(),
    );
    return new SqliteProjectionTable(db, spec, withWriteLock);
  }

  async checkpoint(): Promise<ProjectionCheckpoint> {
    return this.readCheckpoint();
  }

  async get(keys: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (keys.length === 0) return out;
    const rows = this.statement(`SELECT key, doc FROM ${this.table} WHERE key IN (SELECT value FROM json_each(?))`).all(JSON.stringify(keys)) as { key: string; doc: string }[];
    for (const r of rows) out.set(r.key, r.doc);
    return out;
  }

  async commit(from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]): Promise<boolean> {
    return this.withWriteLock(() => this.commitTx(from, to, rows));
  }

  async reset(from: ProjectionCheckpoint): Promise<boolean> {
    return this.withWriteLock(() => this.resetTx(from));
  }

  async query(query: ProjectionQuery): Promise<ProjectionAnswer> {
    validateProjectionQuery(this.spec, query);
    return this.queryTx(query);
  }

  private querySnapshot(query: ProjectionQuery): ProjectionAnswer {
    const params: unknown[] = [];
    const where = (query.where ?? []).map((w) => conditionSql(w, params));
    const whereSql = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const total = Number((this.statement(`SELECT count(*) AS n FROM ${this.table}${whereSql}`).get(...params) as { n: bigint }).n);
    const order = query.orderBy && query.orderBy.length > 0 ? ` ORDER BY ${query.orderBy.join(', ')}` : '';
    const rows = this.statement(`SELECT key, doc FROM ${this.table}${whereSql}${order} LIMIT ? OFFSET ?`).all(
      ...params,
      query.limit ?? -1,
      query.offset ?? 0,
    ) as { key: string; doc: string }[];
    const counts =
      query.countBy === undefined
        ? undefined
        : (this.statement(`SELECT ${query.countBy} AS value, count(*) AS n FROM ${this.table}${whereSql} GROUP BY ${query.countBy}`).all(...params) as { value: string | bigint | null; n: bigint }[]).map((r) => ({
            value: typeof r.value === 'bigint' ? Number(r.value) : r.value,
            count: Number(r.n),
          }));
    return { checkpoint: this.readCheckpoint(), rows, total, ...(counts ? { counts } : {}) };
  }

  private readCheckpoint(): ProjectionCheckpoint {
    const row = this.statement('SELECT position, event_id FROM projections WHERE name = ?').get(this.spec.name) as { position: bigint; event_id: string | null } | undefined;
    return { position: row ? BigInt(row.position) : 0n, eventId: row?.event_id ?? null };
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }
}

function conditionSql(c: ProjectionCondition, params: unknown[]): string {
  if (c.op === 'not null') return `${c.column} IS NOT NULL`;
  if (c.op === 'in') {
    params.push(JSON.stringify(c.values));
    return `${c.column} IN (SELECT value FROM json_each(?))`;
  }
  params.push(c.value);
  return `${c.column} ${c.op} ?`;
}
