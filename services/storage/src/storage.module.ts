import { Module } from '@nestjs/common';
import { blobStoreProvider } from './blobs/blob-store.provider.js';
import { OutputsController } from './outputs/outputs.controller.js';
import { OutputsService } from './outputs/outputs.service.js';
import { DataRefsFeed } from './retention/data-refs.feed.js';
import { RetentionController } from './retention/retention.controller.js';
import { RemovalLock } from './retention/removal-lock.js';
import { RetentionService } from './retention/retention.service.js';
import { StagingController } from './staging/staging.controller.js';
import { StagingService } from './staging/staging.service.js';

/** Storage: stages inputs, records outputs, removes inputs no job needs. */
@Module({
  controllers: [StagingController, OutputsController, RetentionController],
  providers: [blobStoreProvider, StagingService, OutputsService, DataRefsFeed, RemovalLock, RetentionService],
})
export class StorageModule {}
