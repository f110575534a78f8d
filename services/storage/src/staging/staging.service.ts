import type { JobSubmitted } from '#contracts';
import { BlobIntegrityError, BlobNotFoundError, ManifestInvalidError, mapLimit, type BlobStore } from '#blobs';
import { isRetryable } from '#errors';
import { IdempotencyConflictError, type EventStore } from '#event-store';
import type { BusEvent } from '#messaging';
import { CLOCK, EVENT_STORE, EVENT_WRITER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { decideStaging, stagingDecided, storageJobStreamId, type InputCheck, type StagingDecision } from '../domain/index.js';
import type { StorageConfig } from '../storage.config.js';

/** Inputs checked at once, and files of one folder checked at once. */
const INPUT_CONCURRENCY = 4;
const FILE_CONCURRENCY = 16;

type JobInput = JobSubmitted['spec']['data']['inputs'][number];

/**
 * Stages a submitted job: checks every input in the object store (the CLI uploaded them before
 * submitting) and records `InputsStaged` or `StagingFailed` in `storage-job-<jobId>`.
 *
 * Once per job: a job whose staging is already recorded is left alone, and the event id derives
 * from the JobSubmitted event, so a handler racing this one cannot record a second decision.
 */
@Injectable()
export class StagingService {
  constructor(
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: StorageConfig,
  ) {}

  async onJobSubmitted(job: JobSubmitted, event: BusEvent, deliveryCount: number, log: Logger): Promise<StagingDecision | undefined> {
    const stream = storageJobStreamId(job.jobId);
    if (stagingDecided(await this.store.readStream(stream))) {
      log.info('staging already recorded');
      return undefined;
    }

    let decision: StagingDecision;
    try {
      decision = decideStaging(job, await this.check(job), this.clock.now());
    } catch (err) {
      // The object store kept failing: on the last delivery the job fails rather than waiting forever.
      if (!isRetryable(err) || deliveryCount < this.config.GPUNET_STORAGE_MAX_DELIVERIES) throw err;
      log.error({ err, deliveryCount }, 'object store unavailable on the last delivery: staging fails');
      decision = {
        type: 'StagingFailed',
        data: {
          jobId: job.jobId,
          reason: 'storage_error',
          message: `The object store did not answer after ${deliveryCount} attempts (${(err as Error).message}). Nothing was billed; submit the job again later.`.slice(0, 2000),
          failedAt: this.clock.now().toISOString(),
        },
      };
    }

    try {
      await this.writer.append(stream, [decision], { cause: event, team: job.team });
    } catch (err) {
      if (!(err instanceof IdempotencyConflictError)) throw err;
      log.info('staging recorded meanwhile by another handler');
      return undefined;
    }
    if (decision.type === 'InputsStaged') log.info({ inputs: decision.data.inputs.length, totalBytes: decision.data.totalBytes }, 'inputs staged');
    else log.warn({ reason: decision.data.reason, inputName: decision.data.inputName, message: decision.data.message }, 'staging failed');
    return decision;
  }

  /** One check per file input; for a folder, one for its manifest or one per file. */
  private async check(job: JobSubmitted): Promise<InputCheck[]> {
    const perInput = await mapLimit(job.spec.data.inputs, INPUT_CONCURRENCY, (input) => this.checkInput(job.team, input));
    return perInput.flat();
  }

  private async checkInput(team: string, input: JobInput): Promise<InputCheck[]> {
    const own = await this.checkBlob(team, input.name, input.sha256, input.size);
    if (own.status !== 'ok' || input.kind === 'file') return [own];
    let entries;
    try {
      entries = (await this.blobs.readFolderManifest(team, input.sha256, { size: input.size })).entries;
    } catch (err) {
      if (err instanceof ManifestInvalidError) return [{ input: input.name, status: 'manifest_invalid', sha256: input.sha256, detail: err.message }];
      if (err instanceof BlobIntegrityError) return [{ input: input.name, status: 'checksum_mismatch', sha256: input.sha256, recorded: err.actual.sha256 }];
      if (err instanceof BlobNotFoundError) return [{ input: input.name, status: 'missing', sha256: input.sha256, size: input.size }];
      throw err;
    }
    return mapLimit(entries, FILE_CONCURRENCY, (e) => this.checkBlob(team, input.name, e.sha256, e.size, e.path));
  }

  private async checkBlob(team: string, input: string, sha256: string, size: number, file?: string): Promise<InputCheck> {
    const where = file === undefined ? {} : { file };
    const stat = await this.blobs.stat(team, sha256);
    if (!stat) return { input, status: 'missing', sha256, size, ...where };
    if (stat.size !== size) return { input, status: 'size_mismatch', sha256, expected: size, actual: stat.size, ...where };
    if (!stat.digestMatches) return { input, status: 'checksum_mismatch', sha256, recorded: stat.recordedSha256, ...where };
    return { input, status: 'ok' };
  }
}
