import { defineService } from '#service-kit';
import { STORAGE_STREAM_PREFIX } from './domain/index.js';
import { StorageConfig } from './storage.config.js';
import { StorageModule } from './storage.module.js';

/**
 * The storage process: one durable consumer `storage` (deploy/topology.yaml) with the kit's
 * durable inbox on the store's database, retrying `GPUNET_STORAGE_MAX_DELIVERIES` times; its
 * relay publishes the `storage-` streams; it answers `gpunet.cmd.StoreOutputs`. Run one or more
 * standbys beside it: only the holder of the `storage` lease consumes, answers and writes; its
 * appends are fenced on its term (decision 0029).
 */
export const storageService = defineService({
  name: 'storage',
  config: StorageConfig,
  module: StorageModule,
  consumers: (ctx) => [{ durable: 'storage', retry: { maxDeliveries: ctx.config.GPUNET_STORAGE_MAX_DELIVERIES } }],
  streamPrefix: () => STORAGE_STREAM_PREFIX,
  leader: { role: 'storage' },
});
