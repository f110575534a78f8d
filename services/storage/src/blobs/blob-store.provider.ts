import { BlobStore } from '#blobs';
import { NATS_CONNECTION, SERVICE_CONFIG } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Provider } from '@nestjs/common';
import type { StorageConfig } from '../storage.config.js';

/** Injection token of the service's {@link BlobStore}. */
export const BLOB_STORE = Symbol('gpunet.storage.BLOB_STORE');

/** Opens (creating when missing) the blob bucket on the kit's NATS connection. */
export const blobStoreProvider: Provider = {
  provide: BLOB_STORE,
  inject: [NATS_CONNECTION, SERVICE_CONFIG],
  useFactory: (nc: NatsConnection, config: StorageConfig) => BlobStore.open(nc, { bucket: config.GPUNET_BLOB_BUCKET }),
};
