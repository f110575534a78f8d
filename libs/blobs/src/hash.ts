import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { ProgressListener } from './progress.js';

/** A blob's content address and size. */
export interface BlobDigest {
  /** Lower-case hex sha256 of the bytes. */
  sha256: string;
  size: number;
}

/** Read size for hashing and uploads: large reads keep a 2-core machine near disk speed. */
export const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * Streams a file through sha256 without holding it in memory. Reports `hashing` progress per
 * chunk read; `bytesTotal` is the size at open (a file that grows meanwhile is hashed as read).
 */
export async function hashFile(path: string, options: { onProgress?: ProgressListener } = {}): Promise<BlobDigest> {
  const hash = createHash('sha256');
  let size = 0;
  const total = options.onProgress ? (await stat(path)).size : 0;
  for await (const chunk of createReadStream(path, { highWaterMark: READ_CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
    options.onProgress?.({ phase: 'hashing', bytesDone: size, bytesTotal: Math.max(total, size) });
  }
  if (size === 0) options.onProgress?.({ phase: 'hashing', bytesDone: 0, bytesTotal: 0 });
  return { sha256: hash.digest('hex'), size };
}

/** sha256 and size of bytes in memory. */
export function hashBytes(bytes: Uint8Array): BlobDigest {
  return { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
}
