export * from './event-store.js';
export * from './errors.js';
export * from './hash-chain.js';
export * from './append-validation.js';
export { SqliteEventStore, type SqliteEventStoreOptions } from './sqlite/sqlite-event-store.js';
