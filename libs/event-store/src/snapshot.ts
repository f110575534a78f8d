/**
 * Snapshots: one serialized state per name, kept in the store's own database with the store
 * position it is the fold of, so a restarted service reads the snapshot and the events after it
 * instead of the whole store (decision 0037).
 *
 * A snapshot is a projection table (`projection_snapshot_<name>`, both adapters) of one row: the
 * position moves with the state in one transaction, only forward and only from where the writer
 * read it, so two writers (a leader and a deposed one still running) cannot make it regress.
 * The state's format is written inside the row, not as the table's version, so releases that
 * write different formats never empty each other's table: a reader of another format ignores it.
 */
import type { EventStore } from './event-store.js';
import { projectionTablesOf, trustedCheckpoint, type ProjectionCheckpoint, type ProjectionTable } from './projection-table.js';

/** The table's layout version (the row's shape), not the state's format. */
const SNAPSHOT_TABLE_VERSION = 1;
const ROW_KEY = 'snapshot';
const HEADER = 'gpunet-snapshot ';

/** A trusted snapshot: the state as the writer serialized it, and the position it holds. */
export interface Snapshot {
  checkpoint: ProjectionCheckpoint;
  /** The serialized state (opaque to the store). */
  state: string;
}

/** Why a stored snapshot was not used (`load` tells its caller, to log). */
export interface SnapshotIgnored {
  reason: 'not_in_store' | 'other_format' | 'unreadable';
  /** What was found, in words, for the log line. */
  detail: string;
  checkpoint: ProjectionCheckpoint;
}

/** The snapshot of one name in one store. Open with {@link openSnapshotSlot}. */
export class SnapshotSlot {
  private constructor(
    private readonly store: EventStore,
    private readonly table: ProjectionTable,
    /** The format this reader and writer speak. */
    readonly format: number,
  ) {}

  /**
   * The snapshot `name` of `store` in format `format` (a whole number ≥ 1; bump it whenever the
   * serialized state changes shape or meaning). Undefined for a store without projection tables
   * (a test double): the caller folds from zero.
   */
  static async open(store: EventStore, name: string, format: number): Promise<SnapshotSlot | undefined> {
    const host = projectionTablesOf(store);
    if (!host) return undefined;
    if (!Number.isInteger(format) || format < 1) throw new RangeError(`snapshot ${name}: format must be a whole number ≥ 1, got ${format}`);
    const table = await host.openProjectionTable({ name: `snapshot_${name}`, version: SNAPSHOT_TABLE_VERSION, columns: [], indexes: [] });
    return new SnapshotSlot(store, table, format);
  }

  /** The position the stored snapshot holds (0 when there is none), unchecked. */
  checkpoint(): Promise<ProjectionCheckpoint> {
    return this.table.checkpoint();
  }

  /**
   * The stored snapshot, if it can be trusted: the store holds the event at its position with that
   * id (else the table is emptied, so no later reader trusts it either), and it is of this format.
   * Otherwise undefined, after `ignored` is told why: the caller folds from zero.
   */
  async load(ignored: (why: SnapshotIgnored) => void): Promise<Snapshot | undefined> {
    const checkpoint = await trustedCheckpoint(this.store, this.table, (held, found) =>
      ignored({
        reason: 'not_in_store',
        detail: `it holds position ${held.position} (event ${held.eventId}) but the store has ${found === null ? 'no event there' : `event ${found} there`}: a store restored from an older backup, or another store's database`,
        checkpoint: held,
      }),
    );
    if (checkpoint.position === 0n) return undefined;
    // The row and its position from one read snapshot: another writer may have moved both since.
    const answer = await this.table.query({});
    if (answer.checkpoint.position !== checkpoint.position) return this.load(ignored);
    const doc = answer.rows.find((r) => r.key === ROW_KEY)?.doc;
    // The row and the position are written in one transaction: a position without a row is a table
    // someone edited by hand.
    if (doc === undefined) {
      ignored({ reason: 'unreadable', detail: 'its position is set but it holds no state', checkpoint });
      return undefined;
    }
    const newline = doc.indexOf('\n');
    const format = doc.startsWith(HEADER) && newline > 0 ? Number(doc.slice(HEADER.length, newline)) : NaN;
    if (format !== this.format) {
      ignored({ reason: 'other_format', detail: `its format is ${Number.isNaN(format) ? 'unknown' : format}, this release reads ${this.format}`, checkpoint });
      return undefined;
    }
    return { checkpoint, state: doc.slice(newline + 1) };
  }

  /**
   * Replaces the snapshot with `state`, the fold of every event up to `to` (an event the store
   * holds), only while the stored one is still at `from` and `to` is past it. False, writing
   * nothing, when it is not: another writer moved it (or it is already further).
   */
  save(from: ProjectionCheckpoint, to: ProjectionCheckpoint, state: string): Promise<boolean> {
    return this.table.commit(from, to, [{ key: ROW_KEY, doc: `${HEADER}${this.format}\n${state}`, values: {} }]);
  }
}

/** {@link SnapshotSlot.open}. */
export function openSnapshotSlot(store: EventStore, name: string, format: number): Promise<SnapshotSlot | undefined> {
  return SnapshotSlot.open(store, name, format);
}
