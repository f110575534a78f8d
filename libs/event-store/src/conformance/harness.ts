import type { EventStore } from '../event-store.js';
import type { ChainedFields } from '../hash-chain.js';

/** A row as the adapter stores it (the chained fields and their hash), for tampering behind the store's back. */
export interface RawEventRow extends ChainedFields {
  hash: string;
}

/**
 * What an adapter provides so that the one conformance suite can run against it.
 * Each `setup()` gives a fresh, empty database of the test's own.
 */
export interface ConformanceHarness {
  /** Adapter name shown in test titles, e.g. `sqlite`, `postgres`. */
  readonly name: string;
  setup(): Promise<ConformanceContext>;
}

export interface ConformanceContext {
  /** The store under test, on a fresh database. */
  readonly store: EventStore;
  /**
   * The HMAC chain key the context's stores were opened with, if any. The suite recomputes
   * hashes with `computeEventHash(prev, fields, chainKey)`, so both adapters chain identically.
   */
  readonly chainKey?: string;
  /** Another store instance with its own connection(s) on the same database (concurrency tests). */
  openAnother(): Promise<EventStore>;
  /** Closes `store` and returns a new instance on the same database, as after a process restart. */
  reopen(): Promise<EventStore>;
  /** Direct SQL with the append-only guards disabled for the statement, then re-enabled. */
  tamper: {
    alterData(position: bigint, data: unknown): Promise<void>;
    deleteAt(position: bigint): Promise<void>;
    insertRow(row: RawEventRow): Promise<void>;
  };
  /** Plain SQL, guards in place: must reject (the database refuses), never resolve. */
  plainSql: {
    updateAt(position: bigint): Promise<void>;
    deleteAt(position: bigint): Promise<void>;
  };
  /** Closes every store opened through this context and removes the database. */
  dispose(): Promise<void>;
}
