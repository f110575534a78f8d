// Pure core of the execution agent: the attempt state machine, the node's GPUs, launch planning
// and recovery. No framework and no I/O (enforced by the boundary check).
export * from './attempt.js';
export * from './container.js';
export * from './launch.js';
export * from './node.js';
export * from './recovery.js';
export * from './streams.js';
export * from './report.js';
export * from './staging-fault.js';
