import type { JobSubmitted, StoreOutputs, StoreOutputsReply } from '#contracts';
import { mapLimit, type BlobStore } from '#blobs';
import { ConcurrencyError, NotFoundError, ValidationError } from '#errors';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { CLOCK, EVENT_STORE, EVENT_WRITER, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { Logger } from 'pino';
import { BLOB_STORE } from '../blobs/blob-store.provider.js';
import { RemovalLock } from '../retention/removal-lock.js';
import { decideOutputs, intakeJobStreamId, outputBlobs, recordedOutputs, storageJobStreamId, type OutputCheck } from '../domain/index.js';

/** Blobs checked at once. */
const CHECK_CONCURRENCY = 16;
/** Appends tried when other events of the job land between the read and the append. */
const APPEND_ATTEMPTS = 3;

/** Where a request came from, for the event's metadata. */
export interface RequestTrace {
  correlationId?: string;
}

/**
 * Records an attempt's outputs (`gpunet.cmd.StoreOutputs`): the job must be the team's, every
 * blob must be in the object store with the stated size and sha256, and then `OutputsStored`
 * goes to `storage-job-<jobId>`. Once per attempt: the append expects the revision the check
 * read, so of two racing requests one records and the other finds that record (`duplicate`).
 */
@Injectable()
export class OutputsService {
  constructor(
    @Inject(BLOB_STORE) private readonly blobs: BlobStore,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly lock: RemovalLock,
  ) {}

  /** Never beside a removal (see {@link RemovalLock}): the blobs checked stay until the record is in the store. */
  record(cmd: StoreOutputs, trace: RequestTrace, log: Logger): Promise<StoreOutputsReply> {
    return this.lock.run(() => this.recordNow(cmd, trace, log));
  }

  private async recordNow(cmd: StoreOutputs, trace: RequestTrace, log: Logger): Promise<StoreOutputsReply> {
    await this.checkOwner(cmd);
    const stream = storageJobStreamId(cmd.jobId);
    for (let attempt = 1; ; attempt++) {
      const events = await this.store.readStream(stream);
      const existing = recordedOutputs(events, cmd.attemptId);
      if (existing) {
        log.info({ attemptId: cmd.attemptId }, 'outputs of the attempt already recorded');
        return { jobId: cmd.jobId, attemptId: cmd.attemptId, files: existing.files.length, totalBytes: existing.totalBytes, duplicate: true };
      }

      const checks = await mapLimit(outputBlobs(cmd), CHECK_CONCURRENCY, (b) => this.check(cmd.team, b.sha256, b.size));
      const decision = decideOutputs(cmd, checks, this.clock.now());
      if (!decision.ok) {
        throw new ValidationError(`outputs of attempt ${cmd.attemptId} cannot be recorded: ${decision.issues.map((i) => i.message).join('; ')}`, decision.issues);
      }

      const last = events[events.length - 1];
      try {
        await this.writer.append(stream, [{ type: 'OutputsStored', data: decision.data }], {
          expectedRevision: last ? last.revision : 'no_stream',
          ...(trace.correlationId ? { correlationId: trace.correlationId } : {}),
          causationId: trace.correlationId ?? cmd.attemptId,
          team: cmd.team,
        });
      } catch (err) {
        if (!(err instanceof WrongExpectedVersionError)) throw err;
        if (attempt >= APPEND_ATTEMPTS) throw new ConcurrencyError(`storage-job-${cmd.jobId} kept changing while recording outputs; retry the request`, { cause: err });
        continue; // another event of the job landed: read again (it may be this attempt's record)
      }
      log.info({ attemptId: cmd.attemptId, files: decision.data.files.length, totalBytes: decision.data.totalBytes, logs: decision.data.logs.length }, 'outputs recorded');
      return { jobId: cmd.jobId, attemptId: cmd.attemptId, files: decision.data.files.length, totalBytes: decision.data.totalBytes, duplicate: false };
    }
  }

  /** The outputs are addressed in the team's blobs: the job must be that team's. */
  private async checkOwner(cmd: StoreOutputs): Promise<void> {
    const submitted = (await this.store.readStream(intakeJobStreamId(cmd.jobId), { maxCount: 10 })).find((e) => e.type === 'JobSubmitted');
    if (!submitted) throw new NotFoundError(`job ${cmd.jobId} was never submitted; outputs can only be recorded for a submitted job`);
    const owner = (submitted.data as JobSubmitted).team;
    if (owner !== cmd.team) {
      throw new ValidationError(`job ${cmd.jobId} does not belong to team ${cmd.team}`, [{ path: 'team', message: `job ${cmd.jobId} belongs to another team`, fix: 'send the team of the job\'s JobSubmitted' }]);
    }
  }

  private async check(team: string, sha256: string, size: number): Promise<OutputCheck> {
    const stat = await this.blobs.stat(team, sha256);
    if (!stat) return { status: 'missing' };
    if (stat.size !== size) return { status: 'size_mismatch', actual: stat.size };
    if (!stat.digestMatches) return { status: 'checksum_mismatch', recorded: stat.recordedSha256 };
    return { status: 'ok' };
  }
}
