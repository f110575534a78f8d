export * from './data-refs.js';
export * from './outputs.js';
export * from './staging.js';
export * from './streams.js';
export * from './node-data.js';
