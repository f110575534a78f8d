/**
 * gpunet messaging: the JetStream transport the services talk through.
 * - topology: streams and durable pull consumers as data, `provision()` at start;
 * - consumer: JetStreamConsumerRunner (explicit ack, per-job order, inbox, backoff, dead letters);
 * - query: request/reply with a `{ ok, data | error }` envelope validated by contracts;
 * - outbox: OutboxRelay from the event store to JetStream;
 * - nest: JetStreamServer (transport strategy) and JetStreamClient (ClientProxy).
 * Needs nats-server 2.9 or later; uses `filter_subjects` from 2.10.
 */
export * from './conventions.js';
export * from './errors.js';
export { defaultMessagingLogger, messageLogger, type Logger, type MessageLogFields } from './logging.js';
export { parseDurationMs } from './duration.js';
export { toFieldIssues, describeIssues } from './zod-issues.js';
export { checkSchemaVersion, UnsupportedSchemaVersionError } from './schema-version.js';
export { decodeEvent, defaultEventSubject, encodeEvent, eventSchemaVersion, type BusEvent, type EncodedEvent, type EventSubjectOf } from './bus-event.js';

export * from './topology/topology.js';
export { loadTopologyFile } from './topology/topology-file.js';
export { autoReplicas, CLUSTER_REPLICAS, commonWildcard, missingConsumers, provision, supportsMultipleFilters, type ProvisionAction, type ProvisionOptions, type ProvisionReport } from './topology/provision.js';

export * from './consumer/consumer-runner.js';
export * from './consumer/outcome.js';
export { deadLetterOf, publishDeadLetter, type DeadLetter } from './consumer/dead-letter.js';

export type { Inbox } from './inbox/inbox.js';
export { MemoryInbox } from './inbox/memory-inbox.js';
export { SqliteInbox, type SqliteInboxOptions } from './inbox/sqlite-inbox.js';
export { PostgresInbox } from './inbox/postgres-inbox.js';

export * from './query/envelope.js';
export { requestQuery, type QueryOptions } from './query/query-client.js';
export { answer, serveQuery, type QueryContext, type QueryHandler, type ServeQueryOptions } from './query/query-responder.js';

export { OutboxRelay, type OutboxRelayOptions, type OutboxRelayStats } from './outbox/outbox-relay.js';

export { JETSTREAM_TRANSPORT, JetStreamServer, type ConsumerBinding, type JetStreamServerOptions } from './nest/jetstream.server.js';
export { BusRecord, JetStreamClient, type BusRecordOptions, type JetStreamClientOptions } from './nest/jetstream.client.js';
export { JetStreamContext, NatsQueryContext } from './nest/jetstream.context.js';
export { JetStreamExceptionFilter, JetStreamTransportModule } from './nest/jetstream-exception.filter.js';
