import type { EventStore } from '#event-store';

/** One row as a raw writer inserts it: the same columns and sizes the store writes, prepared by the caller. */
export interface RawBenchRow {
  streamId: string;
  revision: bigint;
  eventId: string;
  type: string;
  dataJson: string;
  metadataJson: string;
  jobId: string | null;
  team: string | null;
  recordedAt: string;
  /** A 64-character placeholder: the raw limit computes no hash. */
  hash: string;
}

/** What the ready database of one benchmark run gives the driver. */
export interface BenchTarget {
  /** The adapter under test, on a fresh database. */
  readonly store: EventStore;
  /**
   * The raw limit's unit of work: a plain INSERT of `rows` in one transaction into the same kind
   * of database (same server or pragmas, same table and indexes), without the store's logic.
   */
  rawInsert(rows: readonly RawBenchRow[]): Promise<void>;
  /** One line for the table: pragmas, server version, where the files are. */
  readonly notes: string;
  /** Closes connections and removes the databases it created. */
  close(): Promise<void>;
}

/**
 * A backend the store benchmark measures. Figures are named `store.<name>.batch<k>`.
 * To add one, write `<name>.bench-adapter.ts` beside this file and list it in `store.bench.ts`.
 */
export interface BenchAdapter {
  readonly name: string;
  /** Fresh database(s) of the benchmark's own. Throws with a clear message when the backend is missing. */
  open(): Promise<BenchTarget>;
}
