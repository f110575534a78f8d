/**
 * Snapshots: one serialized state per name, kept in the store's own database with the store
 * position it is the fold of, so a restarted service reads the snapshot and the events after it
 * instead of the whole store (decision 0037).
 *
 * A snapshot is a projection table (`projection_snapshot_<name>`, both adapters): the position
 * moves with the state in one transaction, only forward and only from where the writer read it,
 * so two writers (a leader and a deposed one still running) cannot make it regress. The state's
 * format is written inside the row, not as the table's version, so releases that write different
 * formats never empty each other's table: a reader of another format ignores it.
 *
 * A state may be written in parts (decision 0039): a large state is longer than one string can be
 * (V8: about 512 MiB), and a part at a time is what its writer can encode and its reader decode
 * between turns of the event loop. The first part is in the row `snapshot` with the header, which
 * says how many parts there are and their generation; part i (from 1) is the row
 * `snapshot.<generation>.i` (`snapshot.i` in a header without one, as earlier releases wrote).
 *
 * A save writes the other parts first, a few to a transaction with a turn of the event loop
 * between them, under a generation of its own that no reader looks for yet; then the header row
 * and the position in one small transaction, by compare and set; then it deletes the parts of the
 * generation it replaced. A state of hundreds of megabytes written in one transaction held a
 * SQLite writer's event loop past its leader lease (decision 0046). A save that loses the compare
 * and set deletes its own parts; a process that dies in between leaves them, unread.
 */
import { randomBytes } from 'node:crypto';
import { setImmediate as turn } from 'node:timers/promises';
import type { EventStore } from './event-store.js';
import { projectionTablesOf, trustedCheckpoint, type ProjectionCheckpoint, type ProjectionTable } from './projection-table.js';

/** The table's layout version (the row's shape), not the state's format. */
const SNAPSHOT_TABLE_VERSION = 1;
const ROW_KEY = 'snapshot';
const HEADER = 'gpunet-snapshot ';
/** Part rows read per query when loading, and written per transaction when saving. */
const PARTS_PER_READ = 4;
/** The header line: the format, and the number of parts and their generation when more than one. */
const HEADER_LINE = /^gpunet-snapshot (\d+)(?: parts=(\d+))?(?: gen=([0-9a-z]+))?$/;

/** A trusted snapshot: the state as the writer serialized it, and the position it holds. */
export interface Snapshot {
  checkpoint: ProjectionCheckpoint;
  /** The serialized state (opaque to the store), in the parts it was saved in: one for a state saved as one string. */
  parts: string[];
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
    // The rows and their position from one read snapshot: another writer may have moved both since.
    const answer = await this.table.query({ where: [{ column: 'key', op: '=', value: ROW_KEY }] });
    if (answer.checkpoint.position !== checkpoint.position) return this.load(ignored);
    const doc = answer.rows[0]?.doc;
    // The row and the position are written in one transaction: a position without a row is a table
    // someone edited by hand.
    if (doc === undefined) {
      ignored({ reason: 'unreadable', detail: 'its position is set but it holds no state', checkpoint });
      return undefined;
    }
    const newline = doc.indexOf('\n');
    const header = HEADER_LINE.exec(newline > 0 ? doc.slice(0, newline) : '');
    const format = header ? Number(header[1]) : NaN;
    if (format !== this.format) {
      ignored({ reason: 'other_format', detail: `its format is ${Number.isNaN(format) ? 'unknown' : format}, this release reads ${this.format}`, checkpoint });
      return undefined;
    }
    const count = header?.[2] === undefined ? 1 : Number(header[2]);
    const generation = header?.[3];
    const parts = [doc.slice(newline + 1)];
    // The other parts a few at a time, with a turn of the event loop between reads (SQLite's are
    // synchronous, and a large state is hundreds of megabytes). Every write moves the position, so
    // rows read at the same position are of the same state.
    for (let first = 1; first < count; first += PARTS_PER_READ) {
      const keys = Array.from({ length: Math.min(PARTS_PER_READ, count - first) }, (_, i) => partKey(first + i, generation));
      const rest = await this.table.query({ where: [{ column: 'key', op: 'in', values: keys }] });
      if (rest.checkpoint.position !== checkpoint.position) return this.load(ignored);
      const byKey = new Map(rest.rows.map((r) => [r.key, r.doc]));
      for (const key of keys) {
        const part = byKey.get(key);
        if (part === undefined) {
          ignored({ reason: 'unreadable', detail: `its header says ${count} parts but the row ${key} is missing`, checkpoint });
          return undefined;
        }
        parts.push(part);
      }
      await turn();
    }
    return { checkpoint, parts };
  }

  /**
   * Replaces the snapshot with `state` (one string, or its parts in order), the fold of every
   * event up to `to` (an event the store holds), only while the stored one is still at `from` and
   * `to` is past it. False, writing nothing, when it is not: another writer moved it (or it is
   * already further).
   */
  save(from: ProjectionCheckpoint, to: ProjectionCheckpoint, state: string | readonly string[]): Promise<boolean> {
    const parts = typeof state === 'string' ? [state] : state;
    if (parts.length === 0) throw new RangeError('a snapshot has at least one part');
    return this.write(from, to, parts);
  }

  private async write(from: ProjectionCheckpoint, to: ProjectionCheckpoint, parts: readonly string[]): Promise<boolean> {
    // The parts the header at `from` names: deleted once this save replaced them.
    const replaced = partKeysOf((await this.table.get([ROW_KEY])).get(ROW_KEY));
    const generation = parts.length === 1 ? undefined : randomBytes(6).toString('hex');
    const header = generation === undefined ? `${HEADER}${this.format}` : `${HEADER}${this.format} parts=${parts.length} gen=${generation}`;
    const staged = parts.slice(1).map((doc, i) => ({ key: partKey(i + 1, generation), doc, values: {} }));
    let committed = false;
    try {
      for (let i = 0; i < staged.length; i += PARTS_PER_READ) {
        await this.table.put(staged.slice(i, i + PARTS_PER_READ));
        await turn();
      }
      committed = await this.table.commit(from, to, [{ key: ROW_KEY, doc: `${header}\n${parts[0]}`, values: {} }]);
    } finally {
      // Either this save's parts (it did not commit) or those it replaced are read by no one now.
      const unread = committed ? replaced : staged.map((r) => r.key);
      for (let i = 0; i < unread.length; i += 100) await this.table.put([], unread.slice(i, i + 100)).catch(() => undefined);
    }
    return committed;
  }
}

/** The part rows (from 1) a header row names; none for a state of one part or no row. */
function partKeysOf(doc: string | undefined): string[] {
  if (doc === undefined) return [];
  const newline = doc.indexOf('\n');
  const header = HEADER_LINE.exec(newline > 0 ? doc.slice(0, newline) : '');
  const count = header?.[2] === undefined ? 1 : Number(header[2]);
  return Array.from({ length: count - 1 }, (_, i) => partKey(i + 1, header?.[3]));
}

/** The row of part i (from 1): of its generation, or of a header without one. */
function partKey(i: number, generation?: string): string {
  return generation === undefined ? `${ROW_KEY}.${i}` : `${ROW_KEY}.${generation}.${i}`;
}

/** {@link SnapshotSlot.open}. */
export function openSnapshotSlot(store: EventStore, name: string, format: number): Promise<SnapshotSlot | undefined> {
  return SnapshotSlot.open(store, name, format);
}
