import { defineService } from '#service-kit';
import { RELEASED_CONSUMER, STORAGE_CONSUMER } from './consumers.js';
import { STORAGE_STREAM_PREFIX } from './domain/index.js';
import { StorageConfig } from './storage.config.js';
import { StorageModule } from './storage.module.js';

/**
 * The storage process: two durable consumers (deploy/topology.yaml), each given only the events
 * it handles by the server's filter (decision 0054): `storage` the jobs submitted (staging),
 * `storage-released` the computes released (removing inputs no job needs). Each with the kit's
 * durable inbox on the store's database, retrying `GPUNET_STORAGE_MAX_DELIVERIES` times. Its
 * relay publishes the `storage-` streams; it answers `gpunet.cmd.StoreOutputs`. Run one or more
 * standbys beside it: only the holder of the `storage` lease consumes, answers and writes; its
 * appends are fenced on its term (decision 0029).
 */
export const storageService = defineService({
  name: 'storage',
  config: StorageConfig,
  module: StorageModule,
  // Each handler names its durable (`@EventPattern(type, { consumer })`); one that named none would be the first's.
  consumers: (ctx) => [STORAGE_CONSUMER, RELEASED_CONSUMER].map((durable) => ({ durable, retry: { maxDeliveries: ctx.config.GPUNET_STORAGE_MAX_DELIVERIES } })),
  streamPrefix: () => STORAGE_STREAM_PREFIX,
  leader: { role: 'storage' },
});
