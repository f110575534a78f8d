export * from './event-store.js';
export * from './errors.js';
export * from './hash-chain.js';
