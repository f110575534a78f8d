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
 */
export const recorderService = defineService({
  name: 'execution',
  config: RecorderConfig,
  module: RecorderModule,
  instance: () => 'recorder',
  consumers: () => [],
  streamPrefix: () => EXECUTION_STREAM_PREFIX,
});
