/**
 * Projection tables: a read model kept in the store's own database, one row per key (a JSON
 * document and a few indexed columns to query by), with the store position it holds written in
 * the same transaction as its rows. A restarted reader folds only the events after that position.
 *
 * The table is never trusted beyond its position, and it only moves forward: `commit` writes
 * rows and the new position only while the table is still at the position the rows were folded
 * from (compare and set), so two writers (a deposed leader, the partitions of one service) can
 * never interleave half-folds; the loser reads the table again and goes on from where it is.
 */
import { ValidationError } from '#errors';
import type { EventStore } from './event-store.js';

/** A column beside the key and the document, for `where` and `orderBy`. */
export interface ProjectionColumn {
  name: string;
  type: 'text' | 'integer';
}

export interface ProjectionTableSpec {
  /** Lower-case identifier; the table is `projection_<name>`. */
  name: string;
  /**
   * Version of the derivation that fills the rows: a table written by another version is emptied
   * when opened (its rows would be another fold's output), and refilled from position 0.
   */
  version: number;
  columns: readonly ProjectionColumn[];
  /** One index per entry, over these columns in this order (the key may end one: `key`). */
  indexes: readonly (readonly string[])[];
}

/** The position a table holds: the last event folded into it (0n and null when empty). */
export interface ProjectionCheckpoint {
  position: bigint;
  eventId: string | null;
}

export interface ProjectionRow {
  key: string;
  /** The row's document (JSON text, opaque to the store). */
  doc: string;
  /** A value for every column of the spec (null allowed). */
  values: Record<string, string | number | null>;
}

export type ProjectionCondition =
  | { column: string; op: '=' | '>=' | '<'; value: string | number }
  | { column: string; op: 'in'; values: readonly (string | number)[] }
  | { column: string; op: 'not null' };

export interface ProjectionQuery {
  where?: readonly ProjectionCondition[];
  /** Ascending; the key may be named as `key`. */
  orderBy?: readonly string[];
  /** Default: every row. */
  limit?: number;
  offset?: number;
  /** Also count the rows matching `where` per value of this column (a group-by), into `counts`. */
  countBy?: string;
}

export interface ProjectionAnswer {
  /** The position the rows hold (read in the same snapshot as the rows). */
  checkpoint: ProjectionCheckpoint;
  rows: { key: string; doc: string }[];
  /** Rows matching `where`, whatever `limit` and `offset`. */
  total: number;
  /** With `countBy`: each value of that column among the rows matching `where`, and its count. */
  counts?: { value: string | number | null; count: number }[];
}

export interface ProjectionTable {
  readonly spec: ProjectionTableSpec;
  checkpoint(): Promise<ProjectionCheckpoint>;
  /** Documents by key (keys without a row are absent). */
  get(keys: readonly string[]): Promise<Map<string, string>>;
  /**
   * Upserts `rows` and moves the position to `to`, in one transaction, only while the table is at
   * `from` and `to` is past it. False, writing nothing, when it is not (another writer moved it).
   */
  commit(from: ProjectionCheckpoint, to: ProjectionCheckpoint, rows: readonly ProjectionRow[]): Promise<boolean>;
  /**
   * Upserts `rows` and deletes the rows `remove` names, in one transaction, leaving the position
   * as it is. Only for rows no reader of the table's position reads: the parts of a snapshot not
   * yet committed (`SnapshotSlot`), or those of one no longer at the position.
   */
  put(rows: readonly ProjectionRow[], remove?: readonly string[]): Promise<void>;
  /** Empties the table and sets its position to 0, only while it is at `from`. */
  reset(from: ProjectionCheckpoint): Promise<boolean>;
  /** Rows matching `where`, ordered, with their count and the position they hold, from one snapshot. */
  query(query: ProjectionQuery): Promise<ProjectionAnswer>;
}

/** An event store whose database can also hold projection tables (both adapters). */
export interface ProjectionTableHost {
  openProjectionTable(spec: ProjectionTableSpec): Promise<ProjectionTable>;
  /**
   * Drops the table `projection_<name>` and its position, for a projection a release no longer
   * keeps; true when there was one. Nothing else: a table a process still has open must not be dropped.
   */
  dropProjectionTable(name: string): Promise<boolean>;
}

/** The spec that names a table to drop (its columns do not matter to a drop). */
export function droppedSpec(name: string): ProjectionTableSpec {
  const spec = { name, version: 1, columns: [], indexes: [] };
  validateProjectionSpec(spec);
  return spec;
}

const IDENTIFIER = /^[a-z][a-z0-9_]{0,40}$/;
const RESERVED = new Set(['key', 'doc']);

/** Checks a spec's names (they become SQL identifiers) and that indexes name its columns. */
export function validateProjectionSpec(spec: ProjectionTableSpec): void {
  const bad = (path: string, message: string) => new ValidationError(`projection table ${JSON.stringify(spec.name)}: ${path} ${message}`, [{ path, message, fix: 'use a lower-case identifier' }]);
  if (!IDENTIFIER.test(spec.name)) throw bad('name', 'must be a lower-case identifier');
  if (!Number.isInteger(spec.version) || spec.version < 1) throw bad('version', 'must be a whole number ≥ 1');
  const names = new Set<string>();
  for (const c of spec.columns) {
    if (!IDENTIFIER.test(c.name) || RESERVED.has(c.name)) throw bad(`columns.${c.name}`, 'must be a lower-case identifier other than key and doc');
    if (names.has(c.name)) throw bad(`columns.${c.name}`, 'is declared twice');
    names.add(c.name);
  }
  spec.indexes.forEach((ix, i) => {
    if (ix.length === 0) throw bad(`indexes.${i}`, 'names no column');
    for (const c of ix) if (c !== 'key' && !names.has(c)) throw bad(`indexes.${i}`, `names ${c}, not a column`);
  });
}

/** Checks a query names only the spec's columns (they are spliced into SQL). */
export function validateProjectionQuery(spec: ProjectionTableSpec, query: ProjectionQuery): void {
  const known = new Set(['key', ...spec.columns.map((c) => c.name)]);
  for (const c of [...(query.where ?? []).map((w) => w.column), ...(query.orderBy ?? []), ...(query.countBy !== undefined ? [query.countBy] : [])]) {
    if (!known.has(c)) throw new ValidationError(`projection table ${spec.name}: no column ${c}`, [{ path: 'query', message: `no column ${c}`, fix: `use one of ${[...known].join(', ')}` }]);
  }
}

/** A fingerprint of the columns and indexes: a table made for another layout is made again. */
export function projectionLayout(spec: ProjectionTableSpec): string {
  return JSON.stringify({ columns: spec.columns, indexes: spec.indexes });
}

/** The store's projection tables; undefined for a store that has none (a test double). */
export function projectionTablesOf(store: EventStore): ProjectionTableHost | undefined {
  const host = store as Partial<ProjectionTableHost>;
  return typeof host.openProjectionTable === 'function' ? (host as ProjectionTableHost) : undefined;
}

/**
 * The table's position if `store` holds the event it names; otherwise (a table ahead of a store
 * restored from an older backup, or another store's) the table emptied, from position 0, after
 * `untrusted` is told what was found: rows folded from events the store does not hold must not
 * answer for it. A table moved meanwhile by another writer is looked at again.
 */
export async function trustedCheckpoint(
  store: EventStore,
  table: ProjectionTable,
  untrusted: (held: ProjectionCheckpoint, found: string | null) => void | Promise<void>,
): Promise<ProjectionCheckpoint> {
  for (;;) {
    const cp = await table.checkpoint();
    if (cp.position === 0n) return cp;
    // The id alone: the event at a position may be tens of megabytes (a large month's invoice).
    const at = await store.eventIdAt(cp.position);
    if (at !== undefined && at === cp.eventId) return cp;
    await untrusted(cp, at ?? null);
    if (await table.reset(cp)) return { position: 0n, eventId: null };
  }
}

/**
 * Writes `rows` and moves the table to `to`, from `held` (where this writer last left it or found
 * it), by compare and set. When another writer moved it meanwhile: from where it now is (every
 * writer folds the same store, so these rows are the fold up to `to` whoever wrote the ones
 * before), or nothing when it already holds `to`. Returns where the table now is for this writer,
 * or `behind` (nothing written) when it went back under it: emptied by another writer that found a
 * position its store does not hold, whose rows this writer's would not continue.
 */
export async function commitForward(
  table: ProjectionTable,
  held: ProjectionCheckpoint,
  to: ProjectionCheckpoint,
  rows: readonly ProjectionRow[],
): Promise<{ held: ProjectionCheckpoint } | { behind: ProjectionCheckpoint }> {
  for (let from = held; ; ) {
    if (await table.commit(from, to, rows)) return { held: to };
    from = await table.checkpoint();
    if (from.position < held.position) return { behind: from };
    if (from.position >= to.position) return { held: from };
  }
}
