// The run engine of the execution node agent: directories, one isolated process per attempt,
// output collection and GPU discovery. Framework-free; the agent service wires it to the bus.
export * from './cgroups.js';
export * from './clock.js';
export * from './confine.js';
export * from './dirs.js';
export * from './env.js';
export * from './errors.js';
export * from './gpus.js';
export * from './limits.js';
export * from './log-capture.js';
export * from './outcome.js';
export * from './outputs.js';
export * from './process-group.js';
export * from './run-process.js';
