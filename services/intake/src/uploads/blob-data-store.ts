import { BlobIntegrityError, UploadTooLargeError, type BlobStore } from '#blobs';
import { DataStore, ERRORS, Upload } from '@tus/utils';
import type { Readable } from 'node:stream';
import { parseUploadId, type UploadRef } from './upload-id.js';

/** An error `@tus/server` answers with: its `status_code` and `body`. */
export class TusError extends Error {
  constructor(
    readonly status_code: number,
    readonly body: string,
  ) {
    super(body);
    this.name = 'TusError';
  }
}

/** A tus error answer: status and a JSON body in intake's error shape. */
export function tusError(status: number, code: string, message: string): TusError {
  return new TusError(status, `${JSON.stringify({ error: { code, message, retryable: status >= 500 } })}\n`);
}

/** tus's own "no such upload" (404). */
const notFound = () => new TusError(ERRORS.FILE_NOT_FOUND.status_code, ERRORS.FILE_NOT_FOUND.body);

/**
 * The tus data store of intake's HTTP uploads: each upload is one content-addressed blob of the
 * caller's team, written straight into the team's bucket by `ResumableUpload` (libs/blobs, the
 * same chunks and record as a NATS upload). Where an upload stands is read from the bucket
 * itself, so any intake (or a restarted one) resumes it; the blob becomes visible only once its
 * bytes hash to its address.
 */
export class BlobDataStore extends DataStore {
  /** Uploads created here and not yet holding a chunk (after a restart they are simply created again). */
  private readonly created = new Set<string>();

  constructor(private readonly blobs: () => Promise<BlobStore>) {
    super();
    this.extensions = ['creation', 'creation-with-upload', 'termination'];
  }

  override async create(upload: Upload): Promise<Upload> {
    const ref = this.ref(upload.id);
    const blob = await this.upload(ref);
    // An empty blob has no bytes to send: it is stored (checked and recorded) as it is created.
    if (ref.size === 0) await blob.write([], 0);
    const state = await blob.state();
    if (!state.started && !state.complete) this.created.add(upload.id);
    upload.offset = state.offset;
    upload.creation_date = new Date().toISOString();
    return upload;
  }

  override async getUpload(id: string): Promise<Upload> {
    const ref = this.ref(id);
    const state = await (await this.upload(ref)).state();
    if (!state.started && !state.complete && !this.created.has(id)) throw notFound();
    return new Upload({ id, size: ref.size, offset: state.offset, metadata: { sha256: ref.sha256 } });
  }

  override async write(stream: Readable, id: string, offset: number): Promise<number> {
    const ref = this.ref(id);
    try {
      const written = await (await this.upload(ref)).write(stream, offset);
      if (written > 0) this.created.delete(id);
      return written;
    } catch (err) {
      if (err instanceof BlobIntegrityError) {
        this.created.delete(id);
        throw tusError(460, 'checksum_mismatch', err.message);
      }
      if (err instanceof UploadTooLargeError) throw tusError(413, 'too_large', err.message);
      throw err;
    }
  }

  override async remove(id: string): Promise<void> {
    const ref = this.ref(id);
    this.created.delete(id);
    await (await this.upload(ref)).discard();
  }

  private ref(id: string): UploadRef {
    const ref = parseUploadId(id);
    if (!ref) throw notFound();
    return ref;
  }

  private async upload(ref: UploadRef) {
    return (await this.blobs()).resumableUpload(ref.team, ref.sha256, ref.size);
  }
}
