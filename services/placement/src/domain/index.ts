/**
 * Placement's pure core: state folded by `evolve`, decisions of one pass by `decide`, the gang
 * fitting and the policy it uses. No framework, no I/O, clock injected.
 */
export * from './attempt-id.js';
export * from './capacity.js';
export * from './deadlines.js';
export * from './decide.js';
export * from './estimate.js';
export * from './evolve.js';
export * from './forecast.js';
export * from './node-admin.js';
export * from './plan.js';
export * from './policy.js';
export * from './predict.js';
export * from './priority.js';
export * from './quotas.js';
export * from './quotes.js';
export * from './queue-view.js';
export * from './state.js';
export * from './streams.js';
