import { defineService } from '#service-kit';
import { PLACEMENT_STREAM_PREFIX } from './domain/index.js';
import { PlacementConfig } from './placement.config.js';
import { PlacementModule } from './placement.module.js';

/**
 * The placement process: one durable consumer `placement` (deploy/topology.yaml) handling every
 * event in stream order, one at a time (one ordering key), because placement's state is global (every GPU of every node) and two passes
 * must never race for a GPU. Its relay publishes the `placement-` streams. Run one per network.
 */
export const placementService = defineService({
  name: 'placement',
  config: PlacementConfig,
  module: PlacementModule,
  // One ordering key: every event in stream order, one at a time.
  consumers: () => [{ durable: 'placement', keyOf: () => 'placement', concurrency: 1 }],
  streamPrefix: () => PLACEMENT_STREAM_PREFIX,
  // One per network, and it sees every node: its /metrics also reports every consumer's lag and
  // the dead letters, so a stopped service's backlog is still visible (decision 0021).
  busMetrics: true,
});
