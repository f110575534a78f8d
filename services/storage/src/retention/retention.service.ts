import type { BlobRef } from '#contracts';
import { BlobIntegrityError, BlobNotFoundError, ManifestInvalidError, mapLimit, type BlobStore } from '#blobs';
import { TransientError } from '#errors';
import { IdempotencyConflictError } from '#event-store';
import { CLOCK, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { foldersToRead, planRemovals, storageJobStreamId, teamsWithFinalJobs, type Removal } from '../domain/index.js';
import type { StorageConfig } from '../storage.config.js';
import { DataRefsFeed } from './data-refs.feed.js';
import { RemovalLock } from './removal-lock.js';

/** How long a handler waits for the reference model to reach the store's head before retrying. */
const CATCH_UP_MS = 10_000;
/** Blobs deleted at once. */
const REMOVE_CONCURRENCY = 8;

/**
 * Removes staged inputs nobody needs any more: at a job's release (`job_released`) and, every
 * sweep interval, those whose keep has passed (`retention_expired`). Plans come from the
 * reference model; one removal runs at a time and waits until the model has its own DataRemoved,
 * so the next plan never removes or records the same blob again.
 */
@Injectable()
export class RetentionService implements OnApplicationBootstrap, OnApplicationShutdown {
  /** Files of each folder manifest read so far, by `<team>/<sha256>`; manifests never change. */
  private readonly manifests = new Map<string, readonly BlobRef[]>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly feed: DataRefsFeed,
    private readonly lock: RemovalLock,
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: StorageConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => {
      this.sweeping ??= this.sweep()
        .then(() => undefined)
        .catch((err: unknown) => this.logger.error({ err }, 'retention sweep failed; trying again at the next interval'))
        .finally(() => (this.sweeping = undefined));
    }, this.config.GPUNET_STORAGE_SWEEP_INTERVAL);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** After `jobId` released its compute: removes its inputs that no job needs now. */
  async onReleased(jobId: string, log: Logger): Promise<Removal[]> {
    return this.serially(async () => {
      await this.catchUp();
      const removals = await this.plan(jobId);
      if (removals.length === 0) log.info('released: no staged input to remove now (still needed, kept, or already removed)');
      return this.execute(removals, log);
    });
  }

  /** Removes every input whose keep has passed and that no job needs. */
  async sweep(): Promise<Removal[]> {
    return this.serially(async () => {
      await this.catchUp();
      return this.execute(await this.plan(), this.logger);
    });
  }

  private async plan(only?: string): Promise<Removal[]> {
    const model = this.feed.model;
    const folders = foldersToRead(model, teamsWithFinalJobs(model, only));
    await mapLimit(folders, REMOVE_CONCURRENCY, (f) => this.loadManifest(f.team, f.sha256, f.size));
    return planRemovals(model, this.clock.now().getTime(), (team, sha) => this.manifests.get(`${team}/${sha}`) ?? [], only);
  }

  private async execute(removals: Removal[], log: Logger): Promise<Removal[]> {
    for (const removal of removals) {
      await mapLimit(removal.blobs, REMOVE_CONCURRENCY, (b) => this.blobs.remove(removal.team, b.sha256));
      let position: bigint | undefined;
      try {
        const result = await this.writer.append(
          storageJobStreamId(removal.jobId),
          [
            {
              type: 'DataRemoved',
              data: { jobId: removal.jobId, scope: 'inputs', blobs: removal.blobs, reason: removal.reason, removedAt: this.clock.now().toISOString() },
              discriminator: removal.discriminator,
            },
          ],
          { cause: removal.cause, team: removal.team },
        );
        position = result.position;
      } catch (err) {
        // The same removal was recorded already (another storage process, or a retry): it stands.
        if (!(err instanceof IdempotencyConflictError)) throw err;
      }
      for (const b of removal.blobs) this.manifests.delete(`${removal.team}/${b.sha256}`);
      log.info({ jobId: removal.jobId, team: removal.team, reason: removal.reason, blobs: removal.blobs.length, bytes: removal.blobs.reduce((n, b) => n + b.size, 0) }, 'staged inputs removed');
      if (position !== undefined && !(await this.feed.waitFor(position, CATCH_UP_MS))) {
        throw new TransientError(`the reference model did not reach position ${position} within ${CATCH_UP_MS} ms`);
      }
    }
    return removals;
  }

  private async loadManifest(team: string, sha256: string, size: number | undefined): Promise<void> {
    const key = `${team}/${sha256}`;
    if (this.manifests.has(key)) return;
    try {
      const manifest = await this.blobs.readFolderManifest(team, sha256, size === undefined ? {} : { size });
      this.manifests.set(key, manifest.entries.map((e) => ({ sha256: e.sha256, size: e.size })));
    } catch (err) {
      // A manifest that is gone or unusable cannot be materialized: no file is needed through it.
      if (!(err instanceof BlobNotFoundError || err instanceof ManifestInvalidError || err instanceof BlobIntegrityError)) throw err;
      this.manifests.set(key, []);
    }
  }

  private async catchUp(): Promise<void> {
    if (!(await this.feed.catchUp(CATCH_UP_MS))) throw new TransientError(`the reference model did not catch up with the store within ${CATCH_UP_MS} ms`);
  }

  /** Runs removals one at a time (two plans made at once could both record the same blob), and never beside an outputs record. */
  private serially<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.run(fn);
  }
}
