export { appendOnClient, type PostgresAppendSettings } from './append.js';
export { guardCheckedOutClients, openPostgresEventStore, PostgresEventStore, POSTGRES_DEFAULTS, type PostgresEventStoreOptions } from './postgres-event-store.js';
export { withTransaction, type TransactionOptions } from './transaction.js';
