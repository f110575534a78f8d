/**
 * Uploading inputs over HTTP: intake's tus endpoint (`/v1/uploads`), with `tus-js-client`. Each
 * blob is hashed first and its upload named by address and size (`/v1/uploads/<sha256>.<size>`),
 * so an interrupted upload — a dropped connection, a killed process — resumes from what intake
 * stored, and a blob the team holds is not sent again. The bytes land in the same
 * content-addressed bucket as NATS uploads; needs only the API key.
 */
import { FolderManifest, encodeFolderManifest, type FolderManifestEntry } from '#contracts';
import { FolderInputError, hashBytes, hashFile, listFolder, mapLimit, type BlobDigest, type TransferProgress } from '#blobs';
import { createReadStream } from 'node:fs';
import { GpunetApiError, GpunetUnreachableError } from './errors.js';

/** What one file upload did (the shape `BlobStore.uploadFile` answers). */
export interface HttpUploadResult extends BlobDigest {
  skipped: boolean;
  bytesSent: number;
  resumedFromBytes: number;
}

/** What one folder upload did (the shape `BlobStore.uploadFolder` answers). */
export interface HttpFolderUploadResult extends BlobDigest {
  skipped: boolean;
  manifest: FolderManifest;
  files: number;
  totalBytes: number;
  bytesUploaded: number;
}

/** Options of {@link HttpUploader}. */
export interface HttpUploaderOptions {
  baseUrl: string;
  apiKey: string;
  /** Files uploaded at once in a folder. Default 4. */
  concurrency?: number;
  /** Delays between retries of a failed request (tus-js-client resumes from the stored offset). Default 0, 1, 3, 5, 10 s. */
  retryDelays?: number[];
  /** The fetch used to ask where an upload stands. Default the global one. */
  fetch?: typeof fetch;
}

type Progress = (p: TransferProgress) => void;

/** Uploads files and folders to intake's tus endpoint; see the module comment. */
export class HttpUploader {
  private readonly endpoint: string;

  constructor(private readonly options: HttpUploaderOptions) {
    this.endpoint = new URL('v1/uploads', options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`).href;
  }

  /** The upload URL of a blob: the same for every run, so a new run resumes the last one. */
  urlOf(digest: BlobDigest): string {
    return `${this.endpoint}/${digest.sha256}.${digest.size}`;
  }

  /** Bytes intake holds of the blob's upload (its size once stored), 0 when none. */
  async storedBytes(digest: BlobDigest): Promise<number> {
    const res = await this.ask(this.urlOf(digest), 'HEAD');
    if (res.status === 404) return 0;
    if (!res.ok) throw new GpunetApiError(res.status, res.status === 401 ? 'unauthorized' : res.status === 403 ? 'forbidden' : 'upload_failed', `HEAD ${this.urlOf(digest)} answered ${res.status}`);
    return Number(res.headers.get('upload-offset') ?? '0');
  }

  /** Hashes the file, then uploads what intake does not hold yet. The team is the API key's (`team` is for the shape only). */
  async uploadFile(_team: string, path: string, options: { onProgress?: Progress } = {}): Promise<HttpUploadResult> {
    const digest = await hashFile(path, options.onProgress ? { onProgress: options.onProgress } : {});
    return this.uploadHashed(digest, () => createReadStream(path), options.onProgress);
  }

  /** Uploads bytes held in memory (a folder's manifest). */
  async uploadBytes(_team: string, bytes: Uint8Array): Promise<HttpUploadResult> {
    return this.uploadHashed(hashBytes(bytes), () => Buffer.from(bytes));
  }

  /**
   * Uploads a folder as its files (each once) and its canonical manifest, as `BlobStore.uploadFolder`
   * does over NATS: the folder's address is the manifest's.
   */
  async uploadFolder(team: string, dir: string, options: { onProgress?: Progress } = {}): Promise<HttpFolderUploadResult> {
    const files = await listFolder(dir);
    const totalBytes = files.reduce((n, f) => n + f.size, 0);
    const digests = await mapLimit(files, this.options.concurrency ?? 4, (f) => hashFile(f.absolutePath));
    const unique = new Map<string, { path: string; digest: BlobDigest }>();
    files.forEach((f, i) => unique.set(digests[i]!.sha256, { path: f.absolutePath, digest: digests[i]! }));
    let sent = 0;
    const total = [...unique.values()].reduce((n, u) => n + u.digest.size, 0);
    const results = await mapLimit([...unique.values()], this.options.concurrency ?? 4, (u) =>
      this.uploadHashed(u.digest, () => createReadStream(u.path), options.onProgress ? (p) => options.onProgress!({ ...p, bytesDone: sent + p.bytesDone, bytesTotal: total }) : undefined).then((r) => {
        sent += u.digest.size;
        return r;
      }),
    );
    const entries: FolderManifestEntry[] = files.map((f, i) => ({ path: f.path, sha256: digests[i]!.sha256, size: digests[i]!.size, ...(f.executable ? { executable: true } : {}) }));
    let encoded: string;
    try {
      encoded = encodeFolderManifest(entries);
    } catch (err) {
      throw new FolderInputError(`${dir} cannot be described as a folder input: ${(err as Error).message}`, [], { cause: err });
    }
    const stored = await this.uploadBytes(team, Buffer.from(encoded, 'utf8'));
    const bytesUploaded = results.reduce((n, r) => n + r.bytesSent, 0) + stored.bytesSent;
    return { sha256: stored.sha256, size: stored.size, skipped: bytesUploaded === 0, manifest: FolderManifest.parse(JSON.parse(encoded)), files: files.length, totalBytes, bytesUploaded };
  }

  private async uploadHashed(digest: BlobDigest, source: () => NodeJS.ReadableStream | Buffer, onProgress?: Progress): Promise<HttpUploadResult> {
    const stored = await this.storedBytes(digest);
    if (stored === digest.size && digest.size > 0) return { ...digest, skipped: true, bytesSent: 0, resumedFromBytes: 0 };
    // Loaded on first use: the CLI's other commands need not pay for it at start.
    const { Upload } = await import('tus-js-client');
    await new Promise<void>((resolve, reject) => {
      const upload = new Upload(source() as never, {
        endpoint: this.endpoint,
        uploadUrl: stored > 0 ? this.urlOf(digest) : null,
        uploadSize: digest.size,
        metadata: { sha256: digest.sha256 },
        headers: { authorization: `Bearer ${this.options.apiKey}` },
        retryDelays: this.options.retryDelays ?? [0, 1000, 3000, 5000, 10_000],
        storeFingerprintForResuming: false,
        removeFingerprintOnSuccess: true,
        onUploadUrlAvailable: () => undefined,
        onProgress: (bytesSent, bytesTotal) => {
          onProgress?.({ phase: 'uploading', bytesDone: bytesSent, bytesTotal: bytesTotal ?? digest.size });
        },
        onSuccess: () => resolve(),
        onError: (err) => reject(toError(err, this.endpoint)),
      });
      upload.start();
    });
    const resumedFromBytes = Math.min(stored, digest.size);
    return { ...digest, skipped: false, bytesSent: digest.size - resumedFromBytes, resumedFromBytes };
  }

  private async ask(url: string, method: 'HEAD'): Promise<Response> {
    try {
      return await (this.options.fetch ?? fetch)(url, { method, headers: { authorization: `Bearer ${this.options.apiKey}`, 'tus-resumable': '1.0.0' } });
    } catch (err) {
      throw new GpunetUnreachableError(url, `cannot reach ${url}: ${(err as Error).message}`, { cause: err });
    }
  }
}

function toError(err: Error, endpoint: string): Error {
  const status = (err as { originalResponse?: { getStatus(): number; getBody(): string } | null }).originalResponse;
  if (!status) return new GpunetUnreachableError(endpoint, `upload to ${endpoint} failed: ${err.message}`, { cause: err });
  const code = status.getStatus();
  let body = status.getBody();
  try {
    body = (JSON.parse(body) as { error?: { message?: string } }).error?.message ?? body;
  } catch {
    // not JSON: keep the text
  }
  return new GpunetApiError(code, code === 460 ? 'checksum_mismatch' : code === 401 ? 'unauthorized' : code === 403 ? 'forbidden' : 'upload_failed', `upload to ${endpoint} failed (${code}): ${body}`);
}
