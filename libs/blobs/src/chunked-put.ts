/**
 * Resumable, pipelined writes of one object in the NATS Object Store format.
 *
 * The `@nats-io/obj` client writes an object in one pass: it waits for each chunk's PubAck before
 * sending the next, hashes in pure JavaScript, and on any failure purges what it sent, so an
 * interrupted upload of many gigabytes starts again from zero. This writer produces the same
 * stored layout (chunks on `$O.<bucket>.C.<nuid>`, then a rolled-up record on
 * `$O.<bucket>.M.<name>`), so every Object Store reader (`get`, `info`, `delete`, the `nats`
 * CLI) still works, but:
 *
 * - the chunk subject's `nuid` is derived from the object name (itself `<team>/<sha256>`) and the
 *   chunk size, so a second run of the same upload finds the chunks the first one stored;
 * - chunks are sent with a window of PubAcks in flight (`pipeline`), each carrying its index in a
 *   header (no `Nats-Msg-Id`: a restart after a purge must be able to send the same chunk again
 *   within the server's duplicate window);
 * - a failure leaves the stored chunks in place for the next run; the record is written only
 *   when every byte is stored and the bytes sent hash to the address.
 */
import { createHash } from 'node:crypto';
import { CHUNK_INDEX_HEADER, CHUNK_SHA256_HEADER } from '#contracts';
import { open } from 'node:fs/promises';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type PubAck } from '@nats-io/jetstream';
import { headers, type NatsConnection } from '@nats-io/transport-node';
import type { BlobDigest } from './hash.js';
import type { ProgressListener } from './progress.js';

// A chunk's index travels in a header (contracts/blobs.ts), so a resumed upload knows how many
// chunks an earlier run stored. Chunks stored before this writer compared bytes on resume also
// carry the hex sha256 of their bytes; nothing reads it now.
export { CHUNK_INDEX_HEADER, CHUNK_SHA256_HEADER };

/** Bytes of a chunk message left for its headers: a message (payload + headers) must fit the server's max_payload. */
export const CHUNK_HEADER_ROOM = 4096;

/** The chunk subject token of object `name`: stable across runs, so an interrupted upload can resume. */
export function uploadNuid(bucket: string, name: string, chunkBytes: number): string {
  return createHash('sha256').update(`gpunet-chunked-put/1\0${bucket}\0${name}\0${chunkBytes}`).digest('hex').slice(0, 32);
}

/** What one {@link ChunkedWriter.put} did. */
export interface PutOutcome {
  /** Bytes found already stored by an earlier, interrupted run of the same upload. */
  resumedFromBytes: number;
  /** Bytes sent by this run. */
  bytesSent: number;
  /** sha256 and size of what the file held while it was read for sending. */
  sent: BlobDigest;
}

/** The chunks of an interrupted upload that a new run can keep. */
export interface StoredPrefix {
  chunks: number;
  /** The bytes of the last stored chunk, which a resumed upload compares with the file's; undefined when none is stored. */
  lastChunk: Uint8Array | undefined;
}

/** Writes objects of one bucket in the Object Store layout; see the module comment. */
export class ChunkedWriter {
  private readonly js: JetStreamClient;
  private readonly stream: string;

  private constructor(
    private readonly jsm: JetStreamManager,
    nc: NatsConnection,
    private readonly bucket: string,
    /** Bytes per chunk, already clamped to the server's max_payload. */
    readonly chunkBytes: number,
    private readonly pipeline: number,
    private readonly timeoutMs: number,
  ) {
    this.js = jetstream(nc, { timeout: timeoutMs });
    this.stream = `OBJ_${bucket}`;
  }

  static async open(nc: NatsConnection, bucket: string, options: { chunkBytes: number; pipeline: number; timeoutMs: number }): Promise<ChunkedWriter> {
    const maxPayload = nc.info?.max_payload ?? 1024 * 1024;
    const chunkBytes = Math.max(1024, Math.min(options.chunkBytes, maxPayload - CHUNK_HEADER_ROOM));
    return new ChunkedWriter(await jetstreamManager(nc), nc, bucket, chunkBytes, Math.max(1, options.pipeline), options.timeoutMs);
  }

  /** The chunk subject token of `name` ({@link uploadNuid}). */
  nuidOf(name: string): string {
    return uploadNuid(this.bucket, name, this.chunkBytes);
  }

  chunkSubject(nuid: string): string {
    return `$O.${this.bucket}.C.${nuid}`;
  }

  metaSubject(name: string): string {
    return `$O.${this.bucket}.M.${base64UrlPadded(Buffer.from(name, 'utf8'))}`;
  }

  /**
   * How many chunks of `nuid` are stored as the prefix 0..n-1 an interrupted run leaves: the last
   * one's index header says n-1. Two runs of the same upload at once (two submits of one dataset)
   * each store a prefix, so a chunk may be stored twice, with the same bytes (same address, same
   * chunk size): then there are more messages than n, which is still a whole prefix. Fewer than n
   * means chunks are missing: they are purged and 0 returned.
   */
  async storedPrefix(nuid: string): Promise<StoredPrefix> {
    const subject = this.chunkSubject(nuid);
    // The last chunk first, then the count: another run of the same upload may be storing chunks
    // meanwhile, and a count read first would look short of the last index (a gap that is not one).
    const last = await this.jsm.streams.getMessage(this.stream, { last_by_subj: subject }).catch((err: unknown) => {
      if (isNoMessage(err)) return null;
      throw err;
    });
    if (!last) return { chunks: 0, lastChunk: undefined };
    const info = await this.jsm.streams.info(this.stream, { subjects_filter: subject });
    const count = info.state.subjects?.[subject] ?? 0;
    const indexHeader = last.header?.get(CHUNK_INDEX_HEADER);
    const index = indexHeader ? Number(indexHeader) : NaN;
    if (!Number.isInteger(index) || index < 0 || index + 1 > count) {
      await this.purge(nuid);
      return { chunks: 0, lastChunk: undefined };
    }
    return { chunks: index + 1, lastChunk: last.data };
  }

  /** Removes every chunk stored under `nuid` (an abandoned or refused upload). */
  async purge(nuid: string): Promise<void> {
    await this.jsm.streams.purge(this.stream, { filter: this.chunkSubject(nuid) });
  }

  /**
   * Publishes chunk `index` of an object on its chunk subject, with its index in a header. (A
   * resumed upload compares the last stored chunk's bytes with the file's: a sha256 of every
   * chunk, which this once stored for that check, cost a third pass over every byte uploaded.)
   */
  publishChunk(subject: string, index: number, payload: Uint8Array): Promise<PubAck> {
    const h = headers();
    h.set(CHUNK_INDEX_HEADER, String(index));
    return this.js.publish(subject, payload, { headers: h, timeout: this.timeoutMs });
  }

  /**
   * Writes object `name`'s record (the Object Store's rolled-up meta message): from then on the
   * object is visible to every reader. Only once its `chunks` chunks under `nuid` hold bytes
   * that hash to `digest`.
   */
  async writeRecord(name: string, nuid: string, digest: BlobDigest, chunks: number): Promise<void> {
    const record = {
      name,
      description: '',
      options: { max_chunk_size: this.chunkBytes },
      bucket: this.bucket,
      nuid,
      size: digest.size,
      chunks,
      mtime: new Date().toISOString(),
      digest: `SHA-256=${base64UrlPadded(Buffer.from(digest.sha256, 'hex'))}`,
      deleted: false,
    };
    const rollup = headers();
    rollup.set('Nats-Rollup', 'sub');
    await this.js.publish(this.metaSubject(name), JSON.stringify(record), { headers: rollup, timeout: this.timeoutMs });
  }

  /**
   * Stores the file at `path` as object `name` whose address is `digest`: keeps the chunks an
   * earlier run stored (after checking the last one against the file), sends the rest with
   * `pipeline` PubAcks in flight, then writes the object record. When the bytes read while
   * sending do not hash to `digest` (the file changed), the chunks are purged, no record is
   * written, and the outcome's `sent` says what was read.
   */
  async put(name: string, path: string, digest: BlobDigest, options: { onProgress?: ProgressListener; signal?: AbortSignal; previousNuid?: string } = {}): Promise<PutOutcome & { stored: boolean }> {
    const nuid = this.nuidOf(name);
    const subject = this.chunkSubject(nuid);
    const chunkBytes = this.chunkBytes;
    const totalChunks = Math.ceil(digest.size / chunkBytes);
    const hash = createHash('sha256');
    const handle = await open(path, 'r');
    try {
      let prefix = await this.storedPrefix(nuid);
      if (prefix.chunks > totalChunks) {
        await this.purge(nuid);
        prefix = { chunks: 0, lastChunk: undefined };
      }
      // The chunks an earlier run stored are read from the file (not sent) so the hash covers the whole file.
      let offset = 0;
      const buffer = Buffer.allocUnsafe(chunkBytes);
      for (let i = 0; i < prefix.chunks; i++) {
        const { bytesRead } = await handle.read(buffer, 0, chunkBytes, offset);
        const chunk = buffer.subarray(0, bytesRead);
        hash.update(chunk);
        offset += bytesRead;
        if (i === prefix.chunks - 1 && !chunk.equals(prefix.lastChunk!)) {
          // What is stored is not this file's: start over.
          await this.purge(nuid);
          return this.put(name, path, digest, options);
        }
      }
      const resumedFromBytes = offset;
      if (resumedFromBytes > 0) options.onProgress?.({ phase: 'uploading', bytesDone: offset, bytesTotal: digest.size });

      const inFlight = new Set<Promise<PubAck>>();
      // A holder rather than a `let`: it is set from callbacks, which narrowing does not see.
      const failed: { error?: Error } = {};
      const rethrow = () => {
        if (failed.error) throw failed.error;
      };
      const track = (p: Promise<PubAck>) => {
        const tracked = p.finally(() => inFlight.delete(tracked));
        tracked.catch((err: unknown) => (failed.error ??= err instanceof Error ? err : new Error(String(err))));
        inFlight.add(tracked);
      };
      let index = prefix.chunks;
      // A chunk's buffer is read into again once its PubAck came (the server has every byte of
      // it): a fresh buffer per chunk made V8 collect garbage every few dozen chunks, for the
      // memory outside its heap they held. At most `pipeline` chunks are on their way, and the
      // one being read makes one more.
      const free: Buffer[] = [buffer];
      for (;;) {
        options.signal?.throwIfAborted();
        rethrow();
        const chunk = free.pop() ?? Buffer.allocUnsafe(chunkBytes);
        const { bytesRead } = await handle.read(chunk, 0, chunkBytes, offset);
        if (bytesRead === 0) break;
        const payload = chunk.subarray(0, bytesRead);
        hash.update(payload);
        const published = this.publishChunk(subject, index, payload);
        published.then(() => free.push(chunk), () => undefined);
        track(published);
        index += 1;
        offset += bytesRead;
        if (inFlight.size >= this.pipeline) await Promise.race(inFlight).catch(() => undefined);
        options.onProgress?.({ phase: 'uploading', bytesDone: offset, bytesTotal: Math.max(digest.size, offset) });
      }
      await Promise.allSettled(inFlight);
      rethrow();
      if (digest.size === 0) options.onProgress?.({ phase: 'uploading', bytesDone: 0, bytesTotal: 0 });

      const sent = { sha256: hash.digest('hex'), size: offset };
      const outcome = { resumedFromBytes, bytesSent: offset - resumedFromBytes, sent };
      if (sent.sha256 !== digest.sha256 || sent.size !== digest.size) {
        await this.purge(nuid);
        return { ...outcome, stored: false };
      }
      await this.writeRecord(name, nuid, { sha256: digest.sha256, size: offset }, index);
      // A record written before by another client pointed at other chunks: they are garbage now.
      if (options.previousNuid && options.previousNuid !== nuid) await this.purge(options.previousNuid).catch(() => undefined);
      return { ...outcome, stored: true };
    } finally {
      await handle.close();
    }
  }
/**
   * Stores object `name` from chunks read elsewhere (another bucket: {@link BlobStore.copyFrom}),
   * cut again to this writer's chunk size, with `pipeline` PubAcks in flight. Chunks an earlier,
   * interrupted copy left are purged first (a copy does not resume: its source is not at hand to
   * check them against). The record is written only when the bytes hash to `digest` and have its
   * size; otherwise the chunks are purged and `stored` is false.
   */
  async putFrom(name: string, next: () => Promise<IteratorResult<Uint8Array>>, digest: BlobDigest, options: { previousNuid?: string } = {}): Promise<PutOutcome & { stored: boolean }> {
    const nuid = this.nuidOf(name);
    const subject = this.chunkSubject(nuid);
    await this.purge(nuid);
    const hash = createHash('sha256');
    const inFlight = new Set<Promise<PubAck>>();
    const failed: { error?: Error } = {};
    const track = (p: Promise<PubAck>) => {
      const tracked = p.finally(() => inFlight.delete(tracked));
      tracked.catch((err: unknown) => (failed.error ??= err instanceof Error ? err : new Error(String(err))));
      inFlight.add(tracked);
    };
    let index = 0;
    let size = 0;
    const send = async (payload: Uint8Array) => {
      if (failed.error) throw failed.error;
      track(this.publishChunk(subject, index, payload));
      index += 1;
      if (inFlight.size >= this.pipeline) await Promise.race(inFlight).catch(() => undefined);
    };
    // Source chunks of this writer's size pass through as they are; others are cut again.
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    try {
      for (;;) {
        const chunk = await next();
        if (chunk.done) break;
        hash.update(chunk.value);
        size += chunk.value.length;
        if (size > digest.size) break; // more than the record says: refused below
        if (pendingBytes === 0 && chunk.value.length === this.chunkBytes) {
          await send(chunk.value);
          continue;
        }
        pending.push(Buffer.from(chunk.value.buffer, chunk.value.byteOffset, chunk.value.length));
        pendingBytes += chunk.value.length;
        while (pendingBytes >= this.chunkBytes) {
          const all = Buffer.concat(pending, pendingBytes);
          await send(all.subarray(0, this.chunkBytes));
          const rest = all.subarray(this.chunkBytes);
          pending = rest.length > 0 ? [rest] : [];
          pendingBytes = rest.length;
        }
      }
      if (pendingBytes > 0 && size <= digest.size) await send(Buffer.concat(pending, pendingBytes));
      await Promise.allSettled(inFlight);
      if (failed.error) throw failed.error;
    } catch (err) {
      await Promise.allSettled(inFlight);
      await this.purge(nuid).catch(() => undefined);
      throw err;
    }
    const sent = { sha256: hash.digest('hex'), size };
    const outcome = { resumedFromBytes: 0, bytesSent: size, sent };
    if (sent.sha256 !== digest.sha256 || sent.size !== digest.size) {
      await this.purge(nuid);
      return { ...outcome, stored: false };
    }
    await this.writeRecord(name, nuid, digest, index);
    if (options.previousNuid && options.previousNuid !== nuid) await this.purge(options.previousNuid).catch(() => undefined);
    return { ...outcome, stored: true };
  }
}

/** base64url with `=` padding, as the Object Store names subjects and digests. */
export function base64UrlPadded(bytes: Buffer): string {
  const text = bytes.toString('base64url');
  return text + '='.repeat((4 - (text.length % 4)) % 4);
}

/** The chunks of one object as they arrive; `close` stops reading at any time, even while a `next` waits. */
export interface ChunkStream {
  next(): Promise<IteratorResult<Uint8Array>>;
  close(): Promise<void>;
}

/** One stored chunk as a direct get (or storage, for a node) hands it out. */
export interface StoredChunk {
  /** Its stream sequence. */
  seq: number;
  data: Uint8Array;
  /** Its index in the object, when the writer stored one ({@link CHUNK_INDEX_HEADER}); the Object Store client's chunks have none. */
  index: number | undefined;
  /** How many chunks the object has, when the source says so. */
  chunks?: number;
}

/**
 * The object's chunk at or after stream sequence `seq`, restricted to its chunk subject; null
 * when there is none.
 */
export type ChunkGetter = (seq: number) => Promise<StoredChunk | null>;

/**
 * The chunks of an object, in order, by direct gets (`next_by_subj`; nats-server 2.9+, a bucket
 * with `allow_direct`, as Object Store buckets are). No consumer is created, so a download given
 * up on leaves nothing behind. See {@link chunkStream} for the order and the gaps.
 */
export async function readChunks(nc: NatsConnection, bucket: string, nuid: string, chunks: number, window = 8, timeoutMs?: number): Promise<ChunkStream> {
  return chunkStream(await directChunkGetter(nc, bucket, nuid, timeoutMs), chunks, window);
}

/** Direct gets of one object's chunks (`next_by_subj` of its chunk subject only). */
export async function directChunkGetter(nc: NatsConnection, bucket: string, nuid: string, timeoutMs?: number): Promise<ChunkGetter> {
  // One get may wait behind a busy server's writes (a copy writes while it reads): give it the caller's stall timeout.
  const jsm = await jetstreamManager(nc, timeoutMs === undefined ? {} : { timeout: timeoutMs });
  const stream = `OBJ_${bucket}`;
  const subject = `$O.${bucket}.C.${nuid}`;
  return async (seq) => {
    const m = await jsm.direct.getMessage(stream, { seq, next_by_subj: subject });
    if (m === null) return null;
    const index = m.header?.get(CHUNK_INDEX_HEADER);
    return { seq: m.seq, data: m.data, index: index !== undefined && index !== '' ? Number(index) : undefined };
  };
}

/**
 * An object's chunks in order from `get`. Chunks one writer sent are usually neighbours in the
 * stream, so after the first one up to `window` gets are in flight for the following sequences; a
 * gap (another upload's chunks in between) drops them and starts again from the chunk found. A
 * chunk whose index says it was handed out already (two runs of the same upload stored it twice)
 * is skipped; a chunk the record counts but the stream lacks ends the stream early, and the
 * caller's size and sha256 checks refuse the result. `chunks` undefined: a chunk's `chunks` tells,
 * else the object ends where `get` finds no more (null).
 */
export function chunkStream(getChunk: ChunkGetter, chunks: number | undefined, window = 8): ChunkStream {
  const get = (seq: number) => {
    const p = getChunk(seq);
    p.catch(() => undefined); // awaited in order below; one dropped after a gap must not reject unobserved
    return p;
  };
  let total = chunks;
  let yielded = 0;
  let lastSeq = -1; // stream sequence of the last chunk handed out
  let known = false; // whether neighbouring sequences may be asked for ahead
  let pending: { seq: number; result: ReturnType<typeof get> }[] = [];
  let closed = false;
  const fill = () => {
    const ahead = known ? window : 1;
    let seq = pending.at(-1) ? pending.at(-1)!.seq + 1 : lastSeq + 1;
    while (pending.length < ahead && yielded + pending.length < (total ?? Infinity)) pending.push({ seq, result: get(seq++) });
  };
  return {
    async next() {
      for (;;) {
        if (closed || (total !== undefined && yielded >= total)) return { done: true, value: undefined };
        fill();
        const head = pending.shift()!;
        const m = await head.result;
        if (m === null) return { done: true, value: undefined };
        if (total === undefined && m.chunks !== undefined) total = m.chunks;
        lastSeq = m.seq;
        if (m.seq === head.seq) known = true;
        else {
          // A gap: what was asked for ahead may be this chunk again. Ask afresh from here.
          pending = [];
          known = false;
        }
        if (m.index !== undefined && m.index < yielded) continue; // a second copy of a chunk handed out
        if (m.index !== undefined && m.index > yielded) return { done: true, value: undefined }; // a chunk is missing
        yielded += 1;
        return { done: false, value: m.data };
      }
    },
    close() {
      closed = true;
      pending = [];
      return Promise.resolve();
    },
  };
}

/** The server's answer for a subject with no message (JetStream API error 10037). */
function isNoMessage(err: unknown): boolean {
  const e = err as { code?: unknown; api_error?: { err_code?: number }; message?: string };
  return e?.api_error?.err_code === 10037 || /no message found/i.test(String(e?.message));
}
