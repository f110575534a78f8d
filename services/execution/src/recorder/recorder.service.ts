import { defineService } from '#service-kit';
import { RecorderConfig } from './recorder.config.js';
import { RecorderModule } from './recorder.module.js';
import { EXECUTION_STREAM_PREFIX } from './recorder.streams.js';

/**
 * The recorder: the central part of the execution service, beside the store (instance
 * `recorder`, identity `svc-recorder`). It alone writes the nodes' streams
 * (`execution-<nodeId>-…`) from their signed reports, and its own (`execution-recorder-…`); its
 * outbox relay publishes all of them. It consumes nothing from the bus: its work dispatcher
 * follows the store.
 *
 * One recorder records at a time (decision 0029, role `recorder`): others started beside it wait
 * as standbys for its lease and take over when it dies; every append of the leader — a node's
 * report, a refusal, an enrollment — is fenced on its term in the store. So reports of one attempt
 * are judged and recorded in one process, one after another, and the work checkpoint has one
 * writer.
 */
export const recorderService = defineService({
  name: 'execution',
  config: RecorderConfig,
  module: RecorderModule,
  instance: () => 'recorder',
  consumers: () => [],
  streamPrefix: () => EXECUTION_STREAM_PREFIX,
  leader: { role: 'recorder' },
});
