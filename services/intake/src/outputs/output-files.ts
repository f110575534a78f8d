import { BlobStore } from '#blobs';
import { NotFoundError } from '#errors';
import { NATS_CONNECTION } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Inject, Injectable } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OutputFile } from '#contracts';

/** A downloaded, verified output file on local disk; `release()` removes it. */
export interface LocalOutput {
  file: OutputFile;
  path: string;
  release(): Promise<void>;
}

/**
 * Output files from the NATS Object Store (the team's bucket `gpunet-blobs-<team>`, object `<team>/<sha256>`).
 * A file is downloaded to a temporary file and verified against its sha256 and size before a
 * byte is sent, so a client never receives a partial or wrong file as a success.
 */
@Injectable()
export class OutputFiles {
  private blobs: Promise<BlobStore> | undefined;

  constructor(@Inject(NATS_CONNECTION) private readonly nc: NatsConnection) {}

  /** The stored output at `path` of a job, from its view's file list. */
  static find(jobId: string, files: readonly OutputFile[], path: string): OutputFile {
    const file = files.find((f) => f.path === path);
    if (!file) throw new NotFoundError(`job ${jobId} has no stored output \`${path}\`; list them at /v1/jobs/${jobId}/outputs`);
    return file;
  }

  async fetch(team: string, file: OutputFile): Promise<LocalOutput> {
    // Open lazily: the bucket is storage's, and intake should start even before it exists.
    this.blobs ??= BlobStore.open(this.nc, { create: false }).catch((err: unknown) => {
      this.blobs = undefined;
      throw err;
    });
    const blobs = await this.blobs;
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-intake-out-'));
    const path = join(dir, 'blob');
    const release = () => rm(dir, { recursive: true, force: true });
    try {
      await blobs.downloadTo(team, file.sha256, path, { size: file.size });
    } catch (err) {
      await release();
      throw err;
    }
    return { file, path, release };
  }
}
