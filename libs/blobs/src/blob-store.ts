import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { encodeFolderManifest, FolderManifest, type FolderManifestEntry } from '#contracts';
import { GpunetError } from '#errors';
import { Objm, setSha256Backend, StorageType, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { ChunkedWriter, readChunks, type ChunkStream } from './chunked-put.js';
import { ResumableUpload, type RunningHash } from './resumable-upload.js';
import { BlobIntegrityError, BlobNotFoundError, BlobStoreUnavailableError, FolderInputError, ManifestInvalidError } from './errors.js';
import { listFolder } from './folder.js';
import { hashBytes, hashFile, type BlobDigest } from './hash.js';
import { BLOB_BUCKET, blobBucket, blobName, digestToHex, isSha256, nodeBucket } from './names.js';
import { mapLimit } from './pool.js';
import { PhaseCounter, type ProgressListener } from './progress.js';

/** Options of {@link BlobStore.open}. */
export interface BlobStoreOptions {
  /**
   * Prefix of the buckets: a team's blobs live in bucket `<bucket>-<team>` (stream
   * `OBJ_<bucket>-<team>`), so NATS permissions can give a team its own bucket and nothing else.
   * Default `gpunet-blobs` ({@link BLOB_BUCKET}).
   */
  bucket?: string;
  /**
   * A node's view: every team's blobs are addressed in this node's own bucket
   * `gpunet-node-<node>` ({@link nodeBucket}), under the same `<team>/<sha256>` names. An
   * execution agent opens its blobs this way: it may touch no team's bucket (storage copies
   * between them, {@link BlobStore.copyFrom}). Default: none (team buckets).
   */
  node?: string;
  /**
   * Create a team's bucket when it does not exist (file storage). Default `true`. Producers and
   * nodes open with `false`: creating a stream is the control plane's (see deploy/nats-permissions.yaml).
   */
  create?: boolean;
  /** Replicas of a bucket this call creates. Default 3 when the server is in a cluster (its INFO names one), else 1 (as `replicas: auto` in deploy/topology.yaml). */
  replicas?: number;
  /** Most bytes the bucket may hold (a bucket this call creates); -1 = no limit. Default -1. */
  maxBytes?: number;
  /** Bytes per stored chunk (one JetStream message each); the client clamps it to the server's `max_payload`. Default 1 MiB. */
  chunkBytes?: number;
  /** Files a folder upload or download moves at once. Default 4. */
  concurrency?: number;
  /** Chunks of one upload whose PubAck may be outstanding at once. Default 8. */
  pipeline?: number;
  /** How long one chunk's PubAck may take. Default 30 s. */
  publishTimeoutMs?: number;
  /** Largest blob {@link BlobStore.readBytes} holds in memory (e.g. a folder manifest). Default 64 MiB. */
  maxInMemoryBytes?: number;
  /**
   * A download that receives nothing for this long fails (retryable) instead of waiting forever:
   * the client waits for chunks that a damaged record may point at but that do not exist. Default 30 s.
   */
  stallTimeoutMs?: number;
}

const DEFAULTS = { bucket: BLOB_BUCKET, node: undefined as string | undefined, create: true, replicas: 1, maxBytes: -1, chunkBytes: 1024 * 1024, concurrency: 4, pipeline: 8, publishTimeoutMs: 30_000, maxInMemoryBytes: 64 * 1024 * 1024, stallTimeoutMs: 30_000 };

/** Result of an upload: the blob's address and whether its bytes were already stored. */
export interface UploadResult extends BlobDigest {
  /** True when the team already held this blob (same name, size and digest): no bytes moved. */
  skipped: boolean;
  /** Bytes this call sent: 0 when skipped, less than `size` when an interrupted upload was resumed. */
  bytesSent: number;
  /** Bytes an earlier, interrupted upload of the same blob had stored, kept rather than sent again. */
  resumedFromBytes: number;
}

/** Result of a folder upload. `sha256`/`size` are the manifest blob's: the folder input's address. */
export interface FolderUploadResult extends UploadResult {
  manifest: FolderManifest;
  /** Number of files in the folder. */
  files: number;
  /** Sum of the file sizes. */
  totalBytes: number;
  /** Bytes actually sent (files not already stored, plus the manifest when it was new). */
  bytesUploaded: number;
}

/** What the store knows of a blob without reading it. */
export interface BlobStat extends BlobDigest {
  /** When the object was last written (ISO-8601). */
  storedAt: string;
  /** Digest the uploader recorded, as hex; undefined when the object has none we can read. */
  recordedSha256: string | undefined;
  /** True when the recorded digest equals the address: the name does not lie about the bytes. */
  digestMatches: boolean;
}

/** An input to materialize: a file, or a folder by its manifest, placed at `path` under the destination. */
export interface InputBlobRef {
  kind: 'file' | 'folder';
  sha256: string;
  size: number;
  /** Relative path under the destination directory, e.g. `data/train`. */
  path: string;
}

/** What {@link BlobStore.downloadInput} wrote. */
export interface MaterializedInput {
  /** Absolute path of the file or folder. */
  path: string;
  files: number;
  /** Bytes of file content written (the manifest not counted). */
  bytes: number;
}

interface ProgressOption {
  onProgress?: ProgressListener;
}

/** What {@link BlobStore.copyFrom} did. */
export interface CopyResult extends BlobDigest {
  /** Bytes copied: 0 when the destination held the blob already. */
  copiedBytes: number;
}

/** Options of {@link BlobStore.uploadFile}. */
export interface UploadOptions extends ProgressOption {
  /** Aborting stops sending between chunks; what was stored stays for the next upload of the same file to resume from. */
  signal?: AbortSignal;
}

/**
 * Content-addressed blobs on the NATS Object Store (nats-server 2.6.3 or later; JetStream on).
 *
 * Every blob is stored in its team's own bucket (`gpunet-blobs-<team>`, {@link blobBucket}) under
 * `<team>/<sha256>` (see {@link blobName}): a team only ever addresses its own objects, so nothing tells it whether another team stored the same bytes.
 * Uploads hash first and skip a blob the team already holds; downloads verify sha256 and size
 * while writing and never leave a partial file. Errors: {@link BlobNotFoundError},
 * {@link BlobIntegrityError}, {@link ManifestInvalidError}, {@link FolderInputError}, and
 * {@link BlobStoreUnavailableError} (retryable) when the store does not answer.
 */
export class BlobStore {
  /** Each team's bucket, opened on first use. */
  private readonly buckets = new Map<string, Promise<TeamBucket>>();
  /** Running hashes of resumable uploads between their pieces (a restart only costs a read-back). */
  private readonly runningHashes = new Map<string, RunningHash>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly options: typeof DEFAULTS,
  ) {}

  /**
   * A blob store on a connection the caller owns and closes. Nothing is opened yet: each team's
   * bucket is opened (by default created) on its first use.
   */
  static async open(nc: NatsConnection, options: BlobStoreOptions = {}): Promise<BlobStore> {
    const o = { ...DEFAULTS, replicas: nc.info?.cluster ? 3 : 1, ...definedOnly(options) };
    // Downloads verify sha256 as they go; the client's default pure-JS hash runs at a few dozen MB/s.
    setSha256Backend('native');
    return Promise.resolve(new BlobStore(nc, o));
  }

  /** The bucket of `team`'s blobs: `<bucket>-<team>`. */
  bucketOf(team: string): string {
    if (this.options.node !== undefined) {
      blobBucket(team); // the team must still be a team id: it names the objects
      return nodeBucket(this.options.node);
    }
    return blobBucket(team, this.options.bucket);
  }

  /**
   * Opens `team`'s bucket, creating it when missing (with `create`, the default) and returns its
   * name. The control plane calls it when a team is made, so that the team's producers (who may
   * not create streams) find it.
   */
  async ensureBucket(team: string): Promise<string> {
    return (await this.team(team)).bucket;
  }

  /** Opens (or creates, with `create`) `team`'s bucket; the answer is kept, a failure is not. */
  private team(team: string): Promise<TeamBucket> {
    const bucket = this.bucketOf(team);
    let opened = this.buckets.get(bucket);
    if (!opened) {
      const o = this.options;
      opened = (async () => {
        const objm = new Objm(this.nc);
        const os = await guard(`open bucket ${bucket}`, () =>
          o.create ? objm.create(bucket, { storage: StorageType.File, replicas: o.replicas, max_bytes: o.maxBytes }) : objm.open(bucket),
        ).catch((err: unknown) => {
          if (!o.create && /not found|does not exist/i.test(String((err as Error)?.message))) {
            if (o.node !== undefined) throw new BlobStoreUnavailableError(`node ${o.node} has no blob bucket (${bucket}); storage creates it at the node's first staging request`, { cause: err });
            throw new BlobStoreUnavailableError(`team ${team} has no blob bucket (${bucket}); the control plane creates it with the team (\`gpunet up\`, or storage at start)`, { cause: err });
          }
          throw err;
        });
        const writer = await guard(`open bucket ${bucket}`, () => ChunkedWriter.open(this.nc, bucket, { chunkBytes: o.chunkBytes, pipeline: o.pipeline, timeoutMs: o.publishTimeoutMs }));
        return { bucket, os, writer };
      })();
      opened.catch(() => this.buckets.delete(bucket));
      this.buckets.set(bucket, opened);
    }
    return opened;
  }

  /**
   * The resumable upload of `team`'s blob `sha256` of `size` bytes, whose bytes come in pieces
   * (an HTTP upload): see {@link ResumableUpload}. Same object name, chunk subject and record as
   * {@link uploadFile}, so either finishes what the other began.
   */
  async resumableUpload(team: string, sha256: string, size: number): Promise<ResumableUpload> {
    if (!isSha256(sha256)) throw new RangeError(`not a sha256: ${sha256}`);
    if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`not a size: ${size}`);
    const { bucket, os, writer } = await this.team(team);
    return new ResumableUpload(this.nc, bucket, os, writer, blobName(team, sha256), { sha256, size }, this.runningHashes);
  }

  /** Streamed sha256 and size of a local file (the address it would be stored under). */
  hashFile(path: string, options: ProgressOption = {}): Promise<BlobDigest> {
    return hashFile(path, options);
  }

  /**
   * Stores a file as a team blob: hashes it (`hashing` progress), and unless the team already
   * holds an intact object of that name and size, streams it in chunks (`uploading` progress).
   * A file that changes between hashing and sending is detected: the object is deleted and a
   * {@link BlobIntegrityError} thrown.
   */
  async uploadFile(team: string, path: string, options: UploadOptions = {}): Promise<UploadResult> {
    const digest = await hashFile(path, options);
    return this.uploadHashed(team, path, digest, options);
  }

  /** Stores bytes held in memory (small blobs such as manifests), skipping them when already held. */
  async uploadBytes(team: string, bytes: Uint8Array): Promise<UploadResult> {
    const digest = hashBytes(bytes);
    const name = blobName(team, digest.sha256);
    const { os } = await this.team(team);
    if (await this.holds(os, name, digest)) return { ...digest, skipped: true, bytesSent: 0, resumedFromBytes: 0 };
    const info = await guard(`put ${name}`, () => os.putBlob(this.meta(name), bytes));
    await this.checkStored(os, name, info, digest);
    return { ...digest, skipped: false, bytesSent: digest.size, resumedFromBytes: 0 };
  }

  /**
   * Stores every file of a folder, then its manifest ({@link encodeFolderManifest}, canonical so
   * equal folders get equal addresses); the manifest's sha256 and size address the folder input.
   * Progress: `hashing` over all bytes, then `uploading` over the bytes not already stored.
   */
  async uploadFolder(team: string, dir: string, options: ProgressOption = {}): Promise<FolderUploadResult> {
    blobName(team, '0'.repeat(64)); // refuse a bad team before reading gigabytes
    const files = await listFolder(dir);
    const totalBytes = files.reduce((n, f) => n + f.size, 0);
    const { concurrency } = this.options;

    const hashing = new PhaseCounter('hashing', totalBytes, options.onProgress);
    const digests = await mapLimit(files, concurrency, (f) => hashFile(f.absolutePath, { onProgress: hashing.forFile(f.path) }));
    if (files.length === 0) hashing.add(0);

    // Identical files are stored once; which of them is read does not matter.
    const bySha = new Map<string, { absolutePath: string; path: string; digest: BlobDigest }>();
    files.forEach((f, i) => bySha.set(digests[i]!.sha256, { absolutePath: f.absolutePath, path: f.path, digest: digests[i]! }));
    const unique = [...bySha.values()];
    const bucket = await this.team(team);
    const held = await mapLimit(unique, concurrency, (u) => this.holds(bucket.os, blobName(team, u.digest.sha256), u.digest));
    const toSend = unique.filter((_, i) => !held[i]);
    const sendBytes = toSend.reduce((n, u) => n + u.digest.size, 0);

    const uploading = new PhaseCounter('uploading', sendBytes, options.onProgress);
    await mapLimit(toSend, concurrency, (u) => this.putFile(bucket, blobName(team, u.digest.sha256), u.absolutePath, u.digest, { onProgress: uploading.forFile(u.path) }));
    if (toSend.length === 0) uploading.add(0);

    const entries: FolderManifestEntry[] = files.map((f, i) => ({
      path: f.path,
      sha256: digests[i]!.sha256,
      size: digests[i]!.size,
      ...(f.executable ? { executable: true } : {}),
    }));
    let encoded: string;
    try {
      encoded = encodeFolderManifest(entries);
    } catch (err) {
      throw new FolderInputError(`${dir} cannot be described as a folder input: ${(err as Error).message}`, [], { cause: err });
    }
    const manifest = FolderManifest.parse(JSON.parse(encoded));
    const stored = await this.uploadBytes(team, Buffer.from(encoded, 'utf8'));
    return {
      ...stored,
      manifest,
      files: files.length,
      totalBytes,
      bytesUploaded: sendBytes + (stored.skipped ? 0 : stored.size),
    };
  }

  /** True when the team holds an intact blob with this address (its recorded digest equals the address). */
  async exists(team: string, sha256: string): Promise<boolean> {
    return (await this.stat(team, sha256))?.digestMatches === true;
  }

  /** What the store records of the team's blob, or undefined when it holds none. Reads no content. */
  async stat(team: string, sha256: string): Promise<BlobStat | undefined> {
    const name = blobName(team, sha256);
    const { os } = await this.team(team);
    const info = await guard(`stat ${name}`, () => os.info(name));
    if (info === null || info.deleted) return undefined;
    const recordedSha256 = digestToHex(info.digest);
    return { sha256, size: info.size, storedAt: info.mtime, recordedSha256, digestMatches: recordedSha256 === sha256 };
  }

  /**
   * Writes the team's blob to `destPath`, hashing as it writes: the bytes go to a temporary file
   * beside the destination and are renamed into place only when sha256 (and `size`, if given)
   * match, so a reader never sees a partial or wrong file. `mode` sets the file's permission bits.
   */
  async downloadTo(team: string, sha256: string, destPath: string, options: ProgressOption & { size?: number; mode?: number } = {}): Promise<BlobDigest> {
    const name = blobName(team, sha256);
    const { os, bucket } = await this.team(team);
    const info = await guard(`stat ${name}`, () => os.info(name));
    if (info === null || info.deleted) throw new BlobNotFoundError(team, sha256);
    const recorded = digestToHex(info.digest);
    const sizeWrong = options.size !== undefined && info.size !== options.size;
    if (recorded !== sha256 || sizeWrong) {
      // Known wrong from the record alone: move no bytes.
      throw integrityError(name, { sha256, ...(options.size === undefined ? {} : { size: options.size }) }, { ...(recorded ? { sha256: recorded } : {}), size: info.size });
    }
    const chunks = await guard(`get ${name}`, () => readChunks(this.nc, bucket, info.nuid, info.size === 0 ? 0 : info.chunks, READ_AHEAD, this.options.stallTimeoutMs));
    return writeVerified(chunks, destPath, { sha256, ...(options.size === undefined ? {} : { size: options.size }) }, { ...options, name, stallTimeoutMs: this.options.stallTimeoutMs, total: info.size });
  }

  /**
   * `team`'s blob `sha256` for someone else to read (storage answering a node's read, decision
   * 0036): its size and chunk count from the record, and `forward(seq, replyTo)`, which asks
   * nats-server for the blob's chunk at or after stream sequence `seq` by a direct get restricted
   * to this blob's chunk subject (`next_by_subj`) and has the server answer `replyTo` directly:
   * the bytes never pass through this process, and no other bytes of the bucket can be asked for
   * through it. The answer is the server's direct get reply (the chunk with `Nats-Sequence` and
   * its stored headers, or status 404 past the last chunk). The bytes are not hashed here: the
   * reader verifies them.
   *
   * @throws BlobNotFoundError, BlobIntegrityError (the record names other bytes or another size), BlobStoreUnavailableError
   */
  async chunkSource(team: string, sha256: string, options: { size?: number } = {}): Promise<{ size: number; chunks: number; forward: (seq: number, replyTo: string) => void }> {
    const name = blobName(team, sha256);
    const { os, bucket } = await this.team(team);
    const info = await guard(`stat ${name}`, () => os.info(name));
    if (info === null || info.deleted) throw new BlobNotFoundError(team, sha256);
    const recorded = digestToHex(info.digest);
    if (recorded !== sha256 || (options.size !== undefined && info.size !== options.size)) {
      throw integrityError(name, { sha256, ...(options.size === undefined ? {} : { size: options.size }) }, { ...(recorded ? { sha256: recorded } : {}), size: info.size });
    }
    const api = `$JS.API.DIRECT.GET.OBJ_${bucket}`;
    const subject = `$O.${bucket}.C.${info.nuid}`;
    const forward = (seq: number, replyTo: string) => {
      if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`not a stream sequence: ${seq}`);
      this.nc.publish(api, JSON.stringify({ seq, next_by_subj: subject }), { reply: replyTo });
    };
    return { size: info.size, chunks: info.size === 0 ? 0 : info.chunks, forward };
  }

  /**
   * Reads a whole blob into memory, verified against its address. For small blobs only: refuses
   * (ValidationError) one larger than `maxInMemoryBytes`.
   */
  async readBytes(team: string, sha256: string, options: { size?: number } = {}): Promise<Uint8Array> {
    const name = blobName(team, sha256);
    const { os, bucket } = await this.team(team);
    const info = await guard(`stat ${name}`, () => os.info(name));
    if (info === null || info.deleted) throw new BlobNotFoundError(team, sha256);
    if (options.size !== undefined && info.size !== options.size) throw integrityError(name, { sha256, size: options.size }, { size: info.size });
    if (info.size > this.options.maxInMemoryBytes) {
      throw new BlobIntegrityError(`${name} is ${info.size} bytes, more than the ${this.options.maxInMemoryBytes} read into memory`, { sha256 }, { size: info.size });
    }
    // Read by direct gets (no consumer), as downloads are: a reader needs no right to make consumers.
    const chunks = await guard(`get ${name}`, () => readChunks(this.nc, bucket, info.nuid, info.size === 0 ? 0 : info.chunks, 8, this.options.stallTimeoutMs));
    const parts: Uint8Array[] = [];
    for (;;) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await withStallTimeout(chunks.next(), this.options.stallTimeoutMs, () => {
          void chunks.close();
          return new BlobStoreUnavailableError(`reading ${name}: no data for ${this.options.stallTimeoutMs} ms`);
        });
      } catch (err) {
        if (err instanceof GpunetError) throw err;
        throw new BlobStoreUnavailableError(`reading ${name} from the object store failed: ${(err as Error)?.message}`, { cause: err });
      }
      if (chunk.done) break;
      parts.push(chunk.value);
    }
    const bytes = Buffer.concat(parts);
    const actual = hashBytes(bytes);
    if (actual.sha256 !== sha256) throw integrityError(name, { sha256 }, actual);
    return bytes;
  }

  /**
   * Reads and validates a folder manifest blob. Throws {@link ManifestInvalidError} naming what is
   * wrong when the bytes are not a `gpunet.folder/1` manifest.
   */
  async readFolderManifest(team: string, sha256: string, options: { size?: number } = {}): Promise<FolderManifest> {
    const bytes = await this.readBytes(team, sha256, options);
    return parseFolderManifest(bytes, sha256);
  }

  /**
   * Materializes an input under `destDir` at `ref.path`: a file blob, or every file of a folder
   * manifest (executable entries get mode 0755). Paths that would leave `destDir` are refused.
   * Progress: `downloading` over the bytes of all files.
   */
  async downloadInput(team: string, ref: InputBlobRef, destDir: string, options: ProgressOption = {}): Promise<MaterializedInput> {
    const root = resolve(destDir);
    // A folder may fill the whole input directory (`path: .`); a file needs a name of its own.
    const target = inside(root, ref.path, ref.kind === 'folder');
    if (ref.kind === 'file') {
      const digest = await this.downloadTo(team, ref.sha256, target, { size: ref.size, ...(options.onProgress ? { onProgress: options.onProgress } : {}) });
      return { path: target, files: 1, bytes: digest.size };
    }
    const manifest = await this.readFolderManifest(team, ref.sha256, { size: ref.size });
    await mkdir(target, { recursive: true });
    const bytes = manifest.entries.reduce((n, e) => n + e.size, 0);
    const downloading = new PhaseCounter('downloading', bytes, options.onProgress);
    // A blob listed under several paths moves once and is copied locally for the others.
    const groups = new Map<string, FolderManifestEntry[]>();
    for (const entry of manifest.entries) groups.set(entry.sha256, [...(groups.get(entry.sha256) ?? []), entry]);
    await mapLimit([...groups.values()], this.options.concurrency, async ([first, ...rest]) => {
      const firstPath = inside(target, first!.path);
      await this.downloadTo(team, first!.sha256, firstPath, { size: first!.size, mode: first!.executable ? 0o755 : 0o644, onProgress: downloading.forFile(first!.path) });
      for (const entry of rest) {
        const path = inside(target, entry.path);
        await mkdir(dirname(path), { recursive: true });
        await copyFile(firstPath, path);
        const handle = await open(path, 'r');
        await handle.chmod(entry.executable ? 0o755 : 0o644).finally(() => handle.close());
        downloading.add(entry.size, entry.path);
      }
    });
    if (manifest.entries.length === 0) downloading.add(0);
    return { path: target, files: manifest.entries.length, bytes };
  }

  /**
   * Copies `team`'s blob `sha256` from `source` (another view of the object store: a team's
   * bucket, a node's bucket) into this store's bucket, chunk by chunk with PubAcks pipelined,
   * hashing as it goes: the record is written only when the bytes copied hash to the address and
   * have the size asked for (when given); otherwise what was copied is purged and a
   * {@link BlobIntegrityError} thrown. A source whose record already names other bytes or size
   * moves nothing. Skipped (`copiedBytes: 0`) when this bucket holds the blob already.
   *
   * @throws BlobNotFoundError (the source holds no such blob), BlobIntegrityError, BlobStoreUnavailableError
   */
  async copyFrom(source: BlobStore, team: string, sha256: string, options: { size?: number } = {}): Promise<CopyResult> {
    const name = blobName(team, sha256);
    const from = await source.team(team);
    const info = await guard(`stat ${from.bucket}/${name}`, () => from.os.info(name));
    if (info === null || info.deleted) throw new BlobNotFoundError(team, sha256);
    const recorded = digestToHex(info.digest);
    if (recorded !== sha256 || (options.size !== undefined && info.size !== options.size)) {
      throw integrityError(`${from.bucket}/${name}`, { sha256, ...(options.size === undefined ? {} : { size: options.size }) }, { ...(recorded ? { sha256: recorded } : {}), size: info.size });
    }
    const to = await this.team(team);
    const digest = { sha256, size: info.size };
    if (await this.holds(to.os, name, digest)) return { ...digest, copiedBytes: 0 };
    const chunks = await guard(`get ${from.bucket}/${name}`, () => readChunks(source.nc, from.bucket, info.nuid, info.size === 0 ? 0 : info.chunks, READ_AHEAD, source.options.stallTimeoutMs));
    const stall = source.options.stallTimeoutMs;
    const next = async (): Promise<IteratorResult<Uint8Array>> => {
      try {
        return await withStallTimeout(chunks.next(), stall, () => {
          void chunks.close();
          return new BlobStoreUnavailableError(`reading ${from.bucket}/${name}: no data for ${stall} ms`);
        });
      } catch (err) {
        if (err instanceof GpunetError) throw err;
        throw new BlobStoreUnavailableError(`reading ${from.bucket}/${name} from the object store failed: ${(err as Error)?.message}`, { cause: err });
      }
    };
    const previous = await guard(`stat ${to.bucket}/${name}`, () => to.os.info(name));
    const outcome = await guard(`copy ${name} into ${to.bucket}`, () =>
      to.writer.putFrom(name, next, digest, previous && !previous.deleted ? { previousNuid: previous.nuid } : {}),
    ).finally(() => chunks.close());
    if (!outcome.stored) throw integrityError(`${from.bucket}/${name}`, digest, outcome.sent);
    return { ...digest, copiedBytes: outcome.bytesSent };
  }

  /** Deletes the team's blob; true when there was one. Other teams' copies of the same bytes are untouched. */
  async remove(team: string, sha256: string): Promise<boolean> {
    const name = blobName(team, sha256);
    const { os } = await this.team(team);
    const info = await guard(`stat ${name}`, () => os.info(name));
    if (info === null || info.deleted) return false;
    await guard(`delete ${name}`, () => os.delete(name));
    return true;
  }

  private meta(name: string) {
    return { name, options: { max_chunk_size: this.options.chunkBytes } };
  }

  /** True when `name` holds exactly these bytes by its record: same size and recorded digest. */
  private async holds(os: ObjectStore, name: string, digest: BlobDigest): Promise<boolean> {
    const info = await guard(`stat ${name}`, () => os.info(name));
    return info !== null && !info.deleted && info.size === digest.size && digestToHex(info.digest) === digest.sha256;
  }

  private async uploadHashed(team: string, path: string, digest: BlobDigest, options: UploadOptions): Promise<UploadResult> {
    const name = blobName(team, digest.sha256);
    const bucket = await this.team(team);
    if (await this.holds(bucket.os, name, digest)) return { ...digest, skipped: true, bytesSent: 0, resumedFromBytes: 0 };
    const { bytesSent, resumedFromBytes } = await this.putFile(bucket, name, path, digest, options);
    return { ...digest, skipped: false, bytesSent, resumedFromBytes };
  }

  /**
   * Streams a file into `name` ({@link ChunkedWriter}: resumes what an interrupted run stored,
   * pipelines the rest). The bytes sent must hash to the digest computed before, or nothing is kept.
   */
  private async putFile({ os, writer }: TeamBucket, name: string, path: string, digest: BlobDigest, options: UploadOptions): Promise<{ bytesSent: number; resumedFromBytes: number }> {
    const previous = await guard(`stat ${name}`, () => os.info(name));
    const outcome = await guard(`put ${name}`, () =>
      writer.put(name, path, digest, { ...options, ...(previous && !previous.deleted ? { previousNuid: previous.nuid } : {}) }),
    ).catch((err: unknown) => {
      // An abort is the caller's, not the store's: report it as such.
      throw options.signal?.aborted ? options.signal.reason : err;
    });
    if (!outcome.stored) {
      throw new BlobIntegrityError(
        `${name}: the file changed while it was uploaded (hashed ${digest.size} bytes as ${digest.sha256}, sent ${outcome.sent.size} bytes as ${outcome.sent.sha256}); upload it again once it is no longer being written`,
        digest,
        outcome.sent,
      );
    }
    return outcome;
  }

  /** A put whose bytes differ from the hash they are named by must not stay under that name. */
  private async checkStored(os: ObjectStore, name: string, info: ObjectInfo, digest: BlobDigest): Promise<void> {
    const stored = digestToHex(info.digest);
    if (stored === digest.sha256 && info.size === digest.size) return;
    await guard(`delete ${name}`, () => os.delete(name)).catch(() => undefined);
    throw new BlobIntegrityError(
      `${name}: the file changed while it was uploaded (hashed ${digest.size} bytes as ${digest.sha256}, sent ${info.size} bytes as ${stored}); upload it again once it is no longer being written`,
      digest,
      { ...(stored ? { sha256: stored } : {}), size: info.size },
    );
  }
}

/**
 * Direct gets of a blob's chunks in flight at once (downloads and copies). Each waits a round
 * trip to the server and its read of the chunk; 16 (16 MiB at the default chunk size) keeps the
 * connection busy where 8 left it waiting.
 */
const READ_AHEAD = 16;

/**
 * Writes `chunks` to `destPath`, hashing as it writes: the bytes go to a temporary file beside the
 * destination and are renamed into place only when sha256 (and `size`, if given) match, so a
 * reader never sees a partial or wrong file. A chunk that does not come within `stallTimeoutMs`
 * fails the write (retryable). `name` names the blob in errors; `total` (when known) is the
 * progress total. The stream is closed on failure.
 *
 * @throws BlobIntegrityError, BlobStoreUnavailableError, or what a chunk's read threw (a GpunetError)
 */
export async function writeVerified(
  chunks: ChunkStream,
  destPath: string,
  expected: { sha256: string; size?: number },
  options: ProgressOption & { name: string; stallTimeoutMs: number; mode?: number; total?: number },
): Promise<BlobDigest> {
  const { name, stallTimeoutMs } = options;
  const total = options.total ?? expected.size ?? 0;
  let handle: FileHandle | undefined;
  const temp = `${destPath}.${randomBytes(6).toString('hex')}.part`;
  let writer: OverlappedWriter | undefined;
  try {
    await mkdir(dirname(destPath), { recursive: true });
    handle = await open(temp, 'wx', options.mode ?? 0o644);
    writer = new OverlappedWriter(handle);
    const hash = createHash('sha256');
    let done = 0;
    for (;;) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await withStallTimeout(chunks.next(), stallTimeoutMs, () => {
          void chunks.close();
          return new BlobStoreUnavailableError(`reading ${name}: no data for ${stallTimeoutMs} ms (${done} of ${total} bytes received)`);
        });
      } catch (err) {
        if (err instanceof GpunetError) throw err;
        throw new BlobStoreUnavailableError(`reading ${name} from the object store failed: ${(err as Error)?.message}`, { cause: err });
      }
      if (chunk.done) break;
      hash.update(chunk.value);
      await writer.write(chunk.value);
      done += chunk.value.length;
      options.onProgress?.({ phase: 'downloading', bytesDone: done, bytesTotal: total });
    }
    await writer.end();
    if (total === 0) options.onProgress?.({ phase: 'downloading', bytesDone: 0, bytesTotal: 0 });
    const actual = { sha256: hash.digest('hex'), size: done };
    if (actual.sha256 !== expected.sha256 || (expected.size !== undefined && actual.size !== expected.size)) {
      throw integrityError(name, expected, actual);
    }
    if (options.mode !== undefined) await handle.chmod(options.mode); // the umask may have narrowed the open mode
    await handle.close();
    handle = undefined;
    await rename(temp, destPath);
    return actual;
  } catch (err) {
    await chunks.close();
    await writer?.abandon();
    await handle?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}

/**
 * Writes chunks to a file in order, each while the next ones are received and hashed: one write
 * under way at a time, so the disk and the connection work at once and at most one chunk waits
 * beyond the read-ahead. (Gathering chunks into 4 MiB writes measured no faster, often slower.)
 * An error of a write surfaces at the next `write` or at `end`.
 */
class OverlappedWriter {
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly handle: FileHandle) {}

  /** Waits for the write before, then starts writing `chunk`. */
  async write(chunk: Uint8Array): Promise<void> {
    await this.writing;
    this.writing = writeAll(this.handle, [chunk]);
    this.writing.catch(() => undefined); // observed by the next write or by end
  }

  /** Waits for the last write. */
  async end(): Promise<void> {
    await this.writing;
  }

  /** Waits for the write under way, ignoring its outcome (the file is being given up). */
  async abandon(): Promise<void> {
    await this.writing.catch(() => undefined);
  }
}

/** Writes every byte of `parts` at the handle's position (a short write is continued). */
async function writeAll(handle: FileHandle, parts: Uint8Array[]): Promise<void> {
  let rest = parts;
  while (rest.length > 0) {
    let { bytesWritten } = await handle.writev(rest);
    const next: Uint8Array[] = [];
    for (const part of rest) {
      if (bytesWritten >= part.length) bytesWritten -= part.length;
      else {
        next.push(part.subarray(bytesWritten));
        bytesWritten = 0;
      }
    }
    rest = next;
  }
}

/** One team's bucket, opened. */
interface TeamBucket {
  bucket: string;
  os: ObjectStore;
  writer: ChunkedWriter;
}

/** Parses manifest bytes; the error names each problem. */
export function parseFolderManifest(bytes: Uint8Array, sha256 = 'manifest'): FolderManifest {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch (err) {
    throw new ManifestInvalidError(`folder manifest ${sha256} is not JSON: ${(err as Error).message}`, [{ path: sha256, message: 'not JSON', fix: 'upload the folder again with `gpunet` so its manifest is written for you' }], { cause: err });
  }
  const parsed = FolderManifest.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.join('.') || sha256, message: i.message }));
    throw new ManifestInvalidError(
      `folder manifest ${sha256} is not a valid folder manifest: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      issues.map((i) => ({ ...i, fix: 'upload the folder again with `gpunet` so its manifest is written for you' })),
    );
  }
  return parsed.data;
}

function integrityError(name: string, expected: { sha256: string; size?: number }, actual: { sha256?: string; size?: number }, cause?: unknown): BlobIntegrityError {
  const got = [actual.sha256 && `sha256 ${actual.sha256}`, actual.size !== undefined && `${actual.size} bytes`].filter(Boolean).join(', ');
  const want = [`sha256 ${expected.sha256}`, expected.size !== undefined && `${expected.size} bytes`].filter(Boolean).join(', ');
  return new BlobIntegrityError(
    `${name} does not hold the bytes its address names (expected ${want}${got ? `, found ${got}` : ''}); upload the original file again`,
    expected,
    actual,
    cause === undefined ? undefined : { cause },
  );
}

/** `relativePath` resolved under `root`; refuses anything that would leave it. */
function inside(root: string, relativePath: string, rootItself = false): string {
  const path = resolve(root, relativePath);
  const rel = relative(root, path);
  if (isAbsolute(relativePath) || (rel === '' && !rootItself) || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) {
    throw new FolderInputError(`input path \`${relativePath}\` leaves ${root}`, [{ path: relativePath, message: 'leaves the input directory', fix: 'use a relative path without `..`' }]);
  }
  return path;
}

/** Runs an object store call; a failure that is not already ours becomes retryable. */
async function guard<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof GpunetError) throw err;
    throw new BlobStoreUnavailableError(`object store: ${what} failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

/** `promise`, or the error `onStall` makes when it takes longer than `ms`. */
async function withStallTimeout<T>(promise: Promise<T>, ms: number, onStall: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onStall()), ms);
  });
  try {
    return await Promise.race([promise, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
