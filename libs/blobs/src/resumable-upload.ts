/**
 * A blob whose address and size are known before its bytes arrive, written in pieces as they come
 * (e.g. the PATCH requests of an HTTP upload, tus), in the same layout, chunk subject and record
 * as a file upload (`chunked-put.ts`, decision 0010): whole chunks are stored as they fill, so an
 * upload cut off anywhere resumes from the last whole chunk; the record — what makes the blob
 * visible — is written only once every byte is stored and the stored bytes hash to the address.
 */
import { createHash, type Hash } from 'node:crypto';
import type { ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import type { PubAck } from '@nats-io/jetstream';
import { readChunks, type ChunkedWriter } from './chunked-put.js';
import { BlobIntegrityError } from './errors.js';
import type { BlobDigest } from './hash.js';
import { digestToHex } from './names.js';

/** Where an upload stands. */
export interface UploadState {
  /** Bytes stored, always a whole number of chunks (or `size` once complete): where to resume. */
  offset: number;
  /** The blob is stored and visible (its record is written and names this address and size). */
  complete: boolean;
  /** Some chunks are stored (an upload under way or cut off). */
  started: boolean;
}

/** Bytes were sent beyond the size the upload was declared with. */
export class UploadTooLargeError extends Error {
  readonly code = 'too_large';
  readonly retryable = false;
  constructor(message: string) {
    super(message);
    this.name = 'UploadTooLargeError';
  }
}

/** The upload's running sha256 over its stored prefix, kept between pieces by whoever holds the store. */
export interface RunningHash {
  offset: number;
  hash: Hash;
}

/** One blob's resumable upload; get one from `BlobStore.resumableUpload`. */
export class ResumableUpload {
  /** @internal */
  constructor(
    private readonly nc: NatsConnection,
    private readonly bucket: string,
    private readonly os: ObjectStore,
    private readonly writer: ChunkedWriter,
    /** `<team>/<sha256>` */
    readonly name: string,
    readonly digest: BlobDigest,
    private readonly hashes: Map<string, RunningHash>,
  ) {}

  /** Bytes per stored chunk: offsets handed out are multiples of it. */
  get chunkBytes(): number {
    return this.writer.chunkBytes;
  }

  private get nuid(): string {
    return this.writer.nuidOf(this.name);
  }

  private get hashKey(): string {
    return `${this.bucket}/${this.name}`;
  }

  /** Reads where the upload stands from the store itself (nothing is kept elsewhere). */
  async state(): Promise<UploadState> {
    const info = await this.os.info(this.name);
    if (info && !info.deleted && info.size === this.digest.size && digestToHex(info.digest) === this.digest.sha256) return { offset: this.digest.size, complete: true, started: true };
    const prefix = await this.writer.storedPrefix(this.nuid);
    const totalChunks = Math.ceil(this.digest.size / this.chunkBytes);
    if (prefix.chunks > totalChunks) {
      await this.writer.purge(this.nuid);
      return { offset: 0, complete: false, started: false };
    }
    // Every chunk stored but no record (cut off between the two): ask for the last chunk again, whose arrival finishes it.
    const chunks = prefix.chunks === totalChunks && totalChunks > 0 ? totalChunks - 1 : prefix.chunks;
    return { offset: chunks * this.chunkBytes, complete: false, started: prefix.chunks > 0 };
  }

  /**
   * Stores the bytes of `source`, which start at `offset` (where {@link state} says the upload
   * stands). Whole chunks are stored as they fill; when the source ends at the blob's size the
   * last chunk is stored, every stored byte is checked against the address (sha256 and size) and
   * the record written. A source that ends or fails early keeps the whole chunks it brought.
   * Returns the new offset. Throws {@link BlobIntegrityError} (nothing kept) when the bytes do not
   * hash to the address, {@link UploadTooLargeError} for bytes beyond the size.
   */
  async write(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, offset: number): Promise<number> {
    const { size } = this.digest;
    const chunkBytes = this.chunkBytes;
    if (offset % chunkBytes !== 0 && offset !== size) throw new RangeError(`offset ${offset} is not where the upload stands (a multiple of ${chunkBytes})`);
    if (offset === size) return this.finish();
    const subject = this.writer.chunkSubject(this.nuid);
    let running = this.hashes.get(this.hashKey);
    if (running?.offset !== offset) running = offset === 0 ? { offset: 0, hash: createHash('sha256') } : undefined;
    this.hashes.delete(this.hashKey);

    let index = offset / chunkBytes;
    let committed = offset;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const inFlight = new Set<Promise<PubAck>>();
    const failed: { error?: Error } = {};
    const send = async (payload: Buffer) => {
      if (failed.error) throw failed.error;
      running?.hash.update(payload);
      const p = this.writer.publishChunk(subject, index, payload);
      index += 1;
      committed += payload.length;
      const tracked = p.finally(() => inFlight.delete(tracked));
      tracked.catch((err: unknown) => (failed.error ??= err instanceof Error ? err : new Error(String(err))));
      inFlight.add(tracked);
      if (inFlight.size >= 8) await Promise.race(inFlight).catch(() => undefined);
    };
    const take = (n: number): Buffer => {
      const all = Buffer.concat(pending, pendingBytes);
      pending = all.length > n ? [all.subarray(n)] : [];
      pendingBytes = all.length - n;
      return all.subarray(0, n);
    };

    let cutOff = false;
    try {
      for await (const piece of source) {
        if (committed + pendingBytes + piece.length > size) throw new UploadTooLargeError(`${this.name}: more than the ${size} bytes the upload was created with`);
        pending.push(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength));
        pendingBytes += piece.length;
        while (pendingBytes >= chunkBytes) await send(take(chunkBytes));
      }
    } catch (err) {
      if (err instanceof UploadTooLargeError) {
        await Promise.allSettled(inFlight);
        throw err;
      }
      cutOff = true; // the connection dropped: keep the whole chunks
    }
    if (!cutOff && committed + pendingBytes === size && pendingBytes > 0) await send(take(pendingBytes));
    await Promise.allSettled(inFlight);
    if (failed.error) throw failed.error;
    if (committed < size) {
      if (running) this.hashes.set(this.hashKey, { offset: committed, hash: running.hash });
      return committed;
    }
    return this.finish(running);
  }

  /** Removes the chunks stored so far (an upload given up on); a complete blob is left alone. */
  async discard(): Promise<void> {
    this.hashes.delete(this.hashKey);
    if ((await this.state()).complete) return;
    await this.writer.purge(this.nuid);
  }

  /** Every byte is stored: check them against the address, then write the record. */
  private async finish(running?: RunningHash): Promise<number> {
    const { sha256, size } = this.digest;
    const chunks = Math.ceil(size / this.chunkBytes);
    const stored = running ? { sha256: running.hash.digest('hex'), size } : await this.hashStored(chunks);
    if (stored.sha256 !== sha256 || stored.size !== size) {
      await this.writer.purge(this.nuid);
      throw new BlobIntegrityError(`${this.name}: the bytes uploaded hash to ${stored.sha256} (${stored.size} bytes), not to the address they were sent for; nothing was kept, upload the file again`, this.digest, stored);
    }
    await this.writer.writeRecord(this.name, this.nuid, this.digest, chunks);
    return size;
  }

  /** sha256 and size of the chunks stored (read back: the pieces came in several requests, or this process restarted). */
  private async hashStored(chunks: number): Promise<BlobDigest> {
    const hash = createHash('sha256');
    let size = 0;
    const stream = await readChunks(this.nc, this.bucket, this.nuid, chunks);
    try {
      for (;;) {
        const next = await stream.next();
        if (next.done) break;
        hash.update(next.value);
        size += next.value.length;
      }
    } finally {
      await stream.close();
    }
    return { sha256: hash.digest('hex'), size };
  }
}
