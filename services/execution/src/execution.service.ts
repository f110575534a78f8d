import { defineService } from '#service-kit';
import { agentStreamPrefix } from './domain/index.js';
import { ExecutionConfig } from './execution.config.js';
import { ExecutionModule } from './execution.module.js';

/**
 * One execution agent process per node: instance = node id, durable consumer
 * `execution-<nodeId>` (from the `execution-{instance}` template of deploy/topology.yaml), and
 * a relay that publishes this node's streams (`execution-<nodeId>-`).
 */
export const executionService = defineService({
  name: 'execution',
  // A node uses the streams the control plane made; it may not change them (deploy/nats-permissions.yaml).
  manageStreams: false,
  config: ExecutionConfig,
  module: ExecutionModule,
  instance: (config) => config.GPUNET_NODE_ID,
  consumers: (ctx) => [{ durable: `execution-${ctx.config.GPUNET_NODE_ID}` }],
  streamPrefix: (ctx) => agentStreamPrefix(ctx.config.GPUNET_NODE_ID),
});
