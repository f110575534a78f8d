/** The ledger's pure core: pricing, the price book, usage lines and the charges read model. */
export * from './pricing.js';
export * from './price-list.js';
export * from './usage.js';
export * from './charges.js';
export * from './streams.js';
export * from './months.js';
export * from './billing.js';
export * from './billing-rows.js';
export * from './invoice.js';
export * from './job-end.js';
