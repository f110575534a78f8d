export * from './event-store.js';
export * from './errors.js';
export * from './hash-chain.js';
export * from './append-validation.js';
export * from './projection-table.js';
export * from './snapshot.js';
export { SqliteEventStore, type SqliteEventStoreOptions } from './sqlite/sqlite-event-store.js';
export {
  appendOnClient,
  guardCheckedOutClients,
  openPostgresEventStore,
  PostgresEventStore,
  POSTGRES_DEFAULTS,
  type PostgresAppendSettings,
  type PostgresEventStoreOptions,
  type TransactionOptions,
  withTransaction,
} from './postgres/index.js';
export { openEventStore, parseEventStoreUrl, type EventStoreLocation, type OpenEventStoreOptions } from './open-event-store.js';
