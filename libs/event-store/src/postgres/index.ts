export { appendOnClient, type PostgresAppendSettings } from './append.js';
export { openPostgresEventStore, PostgresEventStore, POSTGRES_DEFAULTS, type PostgresEventStoreOptions } from './postgres-event-store.js';
