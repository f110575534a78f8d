/**
 * The SQL of projection tables, written once for both adapters: the statements, the compare and
 * set of a commit, and the query's conditions, order and page. What differs between SQLite and
 * PostgreSQL (parameters, column types, the key's constraint, byte-wise text order, the schema)
 * is the dialect. Pure: specs in, SQL text and parameters out; the adapters run them.
 */
import type { ProjectionCheckpoint, ProjectionQuery, ProjectionRow, ProjectionTableSpec } from './projection-table.js';

/** How one database spells what projection SQL varies in. */
export interface ProjectionDialect {
  /** The n-th parameter (from 1): `?` or `$n`. A statement names each parameter once (SQLite's `?` are positional). */
  param(n: number): string;
  /** Before every table name: the schema and a dot, or nothing. */
  prefix: string;
  /** Column types. */
  types: { text: string; integer: string };
  /** The key column's type and constraint. */
  key: string;
  /** After a text column compared or ordered, so text sorts byte-wise on every store ('' where it does already). */
  byteOrder: string;
  /** The LIMIT parameter of "every row". */
  noLimit: number | null;
  /** `column` (as compared) is one of a list given as one parameter; with that parameter's value. */
  oneOf(column: string, param: string, type: 'text' | 'integer', values: readonly (string | number)[]): { sql: string; value: unknown };
}

/** SQLite's: positional parameters, a list as a JSON array parameter. */
export const SQLITE_PROJECTION_DIALECT: ProjectionDialect = {
  param: () => '?',
  prefix: '',
  types: { text: 'TEXT', integer: 'INTEGER' },
  key: 'TEXT NOT NULL UNIQUE',
  byteOrder: '',
  noLimit: -1,
  oneOf: (column, param, _type, values) => ({ sql: `${column} IN (SELECT value FROM json_each(${param}))`, value: JSON.stringify(values) }),
};

/** PostgreSQL's, in the store's schema: text compares byte-wise (`COLLATE "C"`), as SQLite's does, so both stores give one order. */
export function postgresProjectionDialect(schema: string): ProjectionDialect {
  return {
    param: (n) => `$${n}`,
    prefix: `${schema}.`,
    types: { text: 'text', integer: 'bigint' },
    key: 'text PRIMARY KEY',
    byteOrder: ' COLLATE "C"',
    noLimit: null,
    oneOf: (column, param, type, values) => ({ sql: `${column} = ANY (${param}::${type === 'integer' ? 'bigint' : 'text'}[])`, value: values.map(String) }),
  };
}

/** The statements of one projection table in one dialect. */
export interface ProjectionSql {
  /** The table, as named in statements (with the dialect's prefix). */
  table: string;
  /** The table of every projection's position. */
  projections: string;
  /** `key`, `doc`, then the spec's columns: the order of a row's values. */
  columns: readonly string[];
  createTable: string;
  createIndexes: readonly string[];
  /** Parameters: name, version, layout. Adds the table's position row (at 0) when missing. */
  insertPosition: string;
  /** Parameters: name. */
  selectDerivation: string;
  /** Parameters: name. */
  selectCheckpoint: string;
  /** Parameters: to.position, to.eventId, name, from.position, to.position. Moves one row, or none when another writer moved it first. */
  advance: string;
  /** Parameters: name, from.position. */
  rewind: string;
  dropTable: string;
  /** Parameters: name. */
  deletePosition: string;
  clear: string;
  /** An upsert of `count` rows; parameters: {@link rowValues} of each, in turn. */
  upsert(count: number): string;
  /** The count and the page of a query, with their parameters; with `countBy`, the count per value (same parameters as the count). */
  query(query: ProjectionQuery): { count: string; countParams: unknown[]; rows: string; rowsParams: unknown[]; countBy?: string };
}

/** A row's parameters, in the order of {@link ProjectionSql.columns}. */
export function rowValues(spec: ProjectionTableSpec, row: ProjectionRow): unknown[] {
  return [row.key, row.doc, ...spec.columns.map((c) => row.values[c.name] ?? null)];
}

/** Whether a table's position row was written by another derivation (or none): its rows are not this fold's output. */
export function isAnotherDerivation(row: { version: number | bigint; layout: string } | undefined, spec: ProjectionTableSpec, layout: string): boolean {
  return !row || Number(row.version) !== spec.version || row.layout !== layout;
}

/** The rows of a `countBy` query as counts: integer columns' values as numbers. */
export function countsOf(rows: readonly { value: unknown; n: unknown }[]): { value: string | number | null; count: number }[] {
  return rows.map((r) => ({ value: typeof r.value === 'bigint' ? Number(r.value) : (r.value as string | number | null), count: Number(r.n) }));
}

/** A position row as a checkpoint (position 0 where there is none). */
export function checkpointOf(row: { position: bigint | number | string; event_id: string | null } | undefined): ProjectionCheckpoint {
  return { position: row ? BigInt(row.position) : 0n, eventId: row?.event_id ?? null };
}

/** The statements of `spec`'s table in dialect `d` (the spec's names are checked by `validateProjectionSpec`). */
export function projectionSql(spec: ProjectionTableSpec, d: ProjectionDialect): ProjectionSql {
  const name = `projection_${spec.name}`;
  const table = `${d.prefix}${name}`;
  const projections = `${d.prefix}projections`;
  const columns = ['key', 'doc', ...spec.columns.map((c) => c.name)];
  const params = (from: number, count: number) => Array.from({ length: count }, (_, i) => d.param(from + i));
  const compared = (column: string) => (column === 'key' || spec.columns.find((c) => c.name === column)?.type === 'text' ? `${column}${d.byteOrder}` : column);
  return {
    table,
    projections,
    columns,
    createTable: `CREATE TABLE IF NOT EXISTS ${table} (key ${d.key}, doc ${d.types.text} NOT NULL${spec.columns.map((c) => `, ${c.name} ${d.types[c.type]}`).join('')})`,
    createIndexes: spec.indexes.map((ix, i) => `CREATE INDEX IF NOT EXISTS ${name}_ix${i} ON ${table} (${ix.map(compared).join(', ')})`),
    insertPosition: `INSERT INTO ${projections} (name, version, layout, position, event_id) VALUES (${params(1, 3).join(', ')}, 0, NULL) ON CONFLICT (name) DO NOTHING`,
    selectDerivation: `SELECT version, layout FROM ${projections} WHERE name = ${d.param(1)}`,
    selectCheckpoint: `SELECT position, event_id FROM ${projections} WHERE name = ${d.param(1)}`,
    // Only from where the writer read it, and only forward.
    advance: `UPDATE ${projections} SET position = ${d.param(1)}, event_id = ${d.param(2)} WHERE name = ${d.param(3)} AND position = ${d.param(4)} AND position < ${d.param(5)}`,
    rewind: `UPDATE ${projections} SET position = 0, event_id = NULL WHERE name = ${d.param(1)} AND position = ${d.param(2)}`,
    dropTable: `DROP TABLE IF EXISTS ${table}`,
    deletePosition: `DELETE FROM ${projections} WHERE name = ${d.param(1)}`,
    clear: `DELETE FROM ${table}`,
    upsert: (count) =>
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${Array.from({ length: count }, (_, r) => `(${params(1 + r * columns.length, columns.length).join(', ')})`).join(', ')}
       ON CONFLICT (key) DO UPDATE SET ${columns.slice(1).map((c) => `${c} = excluded.${c}`).join(', ')}`,
    query(query) {
      const values: unknown[] = [];
      const where = (query.where ?? []).map((w) => {
        if (w.op === 'not null') return `${w.column} IS NOT NULL`;
        if (w.op === 'in') {
          const list = d.oneOf(compared(w.column), d.param(values.length + 1), spec.columns.find((c) => c.name === w.column)?.type ?? 'text', w.values);
          values.push(list.value);
          return list.sql;
        }
        values.push(w.value);
        return `${compared(w.column)} ${w.op} ${d.param(values.length)}`;
      });
      const whereSql = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
      const order = query.orderBy && query.orderBy.length > 0 ? ` ORDER BY ${query.orderBy.map(compared).join(', ')}` : '';
      return {
        count: `SELECT count(*) AS n FROM ${table}${whereSql}`,
        countParams: values,
        rows: `SELECT key, doc FROM ${table}${whereSql}${order} LIMIT ${d.param(values.length + 1)} OFFSET ${d.param(values.length + 2)}`,
        rowsParams: [...values, query.limit ?? d.noLimit, query.offset ?? 0],
        ...(query.countBy !== undefined ? { countBy: `SELECT ${query.countBy} AS value, count(*) AS n FROM ${table}${whereSql} GROUP BY ${query.countBy}` } : {}),
      };
    },
  };
}
