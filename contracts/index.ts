/**
 * gpunet contracts: every command, event and query as a zod schema with its version and NATS
 * subject, the job spec, the bus envelopes and header names. Imports nothing but zod.
 * Producers in other languages use `contracts/generated/` (JSON Schema + AsyncAPI 3.0) instead.
 */
export * from './audit.js';
export * from './billing.js';
export * from './blobs.js';
export * from './budget-rule.js';
export * from './budgets.js';
export * from './commands.js';
export * from './digests.js';
export * from './duration.js';
export * from './envelope.js';
export * from './error-codes.js';
export * from './events/data.js';
export * from './events/estimates.js';
export * from './events/job.js';
export * from './events/ledger.js';
export * from './events/nodes.js';
export * from './events/leadership.js';
export * from './events/reports.js';
export * from './feed.js';
export * from './folder-manifest.js';
export * from './gang.js';
export * from './retry.js';
export * from './http-replies.js';
export * from './issues.js';
export * from './job-spec.js';
export * from './keys.js';
export * from './logs.js';
export * from './message.js';
export * from './node-admin.js';
export * from './primitives.js';
export * from './principal.js';
export * from './queries.js';
export * from './quotas.js';
export * from './registry.js';
export * from './reports.js';
export * from './subjects.js';
