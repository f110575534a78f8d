import type Database from 'better-sqlite3';
import { checkpointOf, countsOf, isAnotherDerivation, projectionSql, rowValues, SQLITE_PROJECTION_DIALECT, type ProjectionSql } from '../projection-sql.js';
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

/** SQLite compares text byte-wise already; a negative LIMIT is no limit. */

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
  private readonly statements = new Map<string, Database.Statement>();
  private readonly commitTx: (from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]) => boolean;
  private readonly resetTx: (from: ProjectionCheckpoint) => boolean;
  private readonly putTx: (rows: readonly ProjectionRow[], remove: readonly string[]) => void;
  private readonly queryTx: (query: ProjectionQuery) => ProjectionAnswer;

  private constructor(
    private readonly db: Database.Database,
    readonly spec: ProjectionTableSpec,
    private readonly sql: ProjectionSql,
    private readonly withWriteLock: <T>(write: () => T) => Promise<T>,
  ) {
    const upsert = this.db.prepare(sql.upsert(1));
    const advance = this.db.prepare(sql.advance);
    this.commitTx = this.db.transaction((from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]) => {
      // The compare and set first: a writer that lost the race writes no row.
      if (advance.run(to.position, to.eventId, spec.name, from.position, to.position).changes !== 1) return false;
      for (const r of rows) upsert.run(...rowValues(spec, r));
      return true;
    }).immediate;
    const remove = this.db.prepare(`DELETE FROM ${sql.table} WHERE key IN (SELECT value FROM json_each(?))`);
    this.putTx = this.db.transaction((rows: readonly ProjectionRow[], keys: readonly string[]) => {
      for (const r of rows) upsert.run(...rowValues(spec, r));
      if (keys.length > 0) remove.run(JSON.stringify(keys));
    }).immediate;
    const rewind = this.db.prepare(sql.rewind);
    const clear = this.db.prepare(sql.clear);
    this.resetTx = this.db.transaction((from: ProjectionCheckpoint) => {
      if (rewind.run(spec.name, from.position).changes !== 1) return false;
      clear.run();
      return true;
    }).immediate;
    this.queryTx = this.db.transaction((query: ProjectionQuery) => this.querySnapshot(query)).deferred;
  }

  /** Drops `projection_<name>` and its position; true when the table was there. */
  static async drop(db: Database.Database, name: string, withWriteLock: <T>(write: () => T) => Promise<T>): Promise<boolean> {
    const sql = projectionSql(droppedSpec(name), SQLITE_PROJECTION_DIALECT);
    return withWriteLock(() =>
      db
        .transaction(() => {
          const exists = (table: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
          if (!exists(sql.table)) return false;
          db.exec(sql.dropTable);
          if (exists(sql.projections)) db.prepare(sql.deletePosition).run(name);
          return true;
        })
        .immediate(),
    );
  }

  /** Creates the table when missing; empties it when a different version or layout made it. */
  static async open(db: Database.Database, spec: ProjectionTableSpec, withWriteLock: <T>(write: () => T) => Promise<T>): Promise<SqliteProjectionTable> {
    validateProjectionSpec(spec);
    const sql = projectionSql(spec, SQLITE_PROJECTION_DIALECT);
    const layout = projectionLayout(spec);
    await withWriteLock(() =>
      db
        .transaction(() => {
          db.exec(CREATE_PROJECTIONS);
          const row = db.prepare(sql.selectDerivation).get(spec.name) as { version: bigint; layout: string } | undefined;
          if (isAnotherDerivation(row, spec, layout)) {
            db.exec(sql.dropTable);
            db.prepare(sql.deletePosition).run(spec.name);
          }
          db.exec(sql.createTable);
          for (const ix of sql.createIndexes) db.exec(ix);
          db.prepare(sql.insertPosition).run(spec.name, spec.version, layout);
        })
        .immediate(),
    );
    return new SqliteProjectionTable(db, spec, sql, withWriteLock);
  }

  async checkpoint(): Promise<ProjectionCheckpoint> {
    return this.readCheckpoint();
  }

  async get(keys: readonly string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (keys.length === 0) return out;
    const rows = this.statement(`SELECT key, doc FROM ${this.sql.table} WHERE key IN (SELECT value FROM json_each(?))`).all(JSON.stringify(keys)) as { key: string; doc: string }[];
    for (const r of rows) out.set(r.key, r.doc);
    return out;
  }

  async commit(from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]): Promise<boolean> {
    return this.withWriteLock(() => this.commitTx(from, to, rows));
  }

  async put(rows: readonly ProjectionRow[], remove: readonly string[] = []): Promise<void> {
    return this.withWriteLock(() => this.putTx(rows, remove));
  }

  async reset(from: ProjectionCheckpoint): Promise<boolean> {
    return this.withWriteLock(() => this.resetTx(from));
  }

  async query(query: ProjectionQuery): Promise<ProjectionAnswer> {
    validateProjectionQuery(this.spec, query);
    return this.queryTx(query);
  }

  private querySnapshot(query: ProjectionQuery): ProjectionAnswer {
    const q = this.sql.query(query);
    const total = Number((this.statement(q.count).get(...q.countParams) as { n: bigint }).n);
    const rows = this.statement(q.rows).all(...q.rowsParams) as { key: string; doc: string }[];
    const counts = q.countBy === undefined ? undefined : countsOf(this.statement(q.countBy).all(...q.countParams) as { value: unknown; n: unknown }[]);
    return { checkpoint: this.readCheckpoint(), rows, total, ...(counts ? { counts } : {}) };
  }

  private readCheckpoint(): ProjectionCheckpoint {
    return checkpointOf(this.statement(this.sql.selectCheckpoint).get(this.spec.name) as { position: bigint; event_id: string | null } | undefined);
  }

  private statement(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.db.prepare(sql)));
    return s;
  }
}
