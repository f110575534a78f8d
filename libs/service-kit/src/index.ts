/**
 * The service kit: what every gpunet service process shares — typed config from the
 * environment, pino logger, event store, NATS, topology provisioning, the Nest app on the
 * JetStream transport, the outbox relay, the health query and clean shutdown.
 */
export * from './clock.js';
export * from './config.js';
export * from './event-writer.js';
export * from './ids.js';
export { elect, LEASE_BUCKET, LeaderLease, leaderRoleOf, leadershipStreamId, NotLeaderError, type LeaderOptions, type LeaseTiming } from './leadership.js';
export * from './run-service.js';
export * from './tokens.js';
export * from './store-follower.js';
export { defaultTopologyFile, eventPartitionsOf, topologyFor } from './topology.js';
export { JetStreamContext, JetStreamTransportModule, NatsQueryContext } from '#messaging';
