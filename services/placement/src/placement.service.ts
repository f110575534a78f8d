import { defineService } from '#service-kit';
import { PLACEMENT_STREAM_PREFIX } from './domain/index.js';
import { PlacementConfig } from './placement.config.js';
import { PlacementModule } from './placement.module.js';

/**
 * The placement process: one durable consumer `placement` (deploy/topology.yaml) handling every
 * event in stream order, one at a time (one ordering key), because placement's state is global (every GPU of every node) and two passes
 * must never race for a GPU. Its relay publishes the `placement-` streams.
 *
 * Run two or more per network: one leads (holds the `placement` lease), the others wait as
 * standbys and take over when the leader dies; the leader's every append is fenced on its term,
 * so two placements never decide at once (decision 0029).
 */
export const placementService = defineService({
  name: 'placement',
  config: PlacementConfig,
  module: PlacementModule,
  // One ordering key: every event in stream order, one at a time.
  consumers: () => [{ durable: 'placement', keyOf: () => 'placement', concurrency: 1 }],
  streamPrefix: () => PLACEMENT_STREAM_PREFIX,
  // A standby neither consumes, nor checks nodes, nor relays: it starts all of that once it leads.
  leader: { role: 'placement' },
  // The leader of the network, and it sees every node: its /metrics also reports every consumer's lag and
  // the dead letters, so a stopped service's backlog is still visible (decision 0021).
  busMetrics: true,
});
