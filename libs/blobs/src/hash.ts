import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
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
 * One buffer is read into again and again: a fresh one per read (a read stream's way) made V8
 * collect garbage every few dozen reads, for the memory outside its heap those buffers held.
 */
export async function hashFile(path: string, options: { onProgress?: ProgressListener } = {}): Promise<BlobDigest> {
  const hash = createHash('sha256');
  let size = 0;
  const handle = await open(path, 'r');
  try {
    const total = options.onProgress ? (await handle.stat()).size : 0;
    const buffer = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      size += bytesRead;
      options.onProgress?.({ phase: 'hashing', bytesDone: size, bytesTotal: Math.max(total, size) });
    }
  } finally {
    await handle.close();
  }
  if (size === 0) options.onProgress?.({ phase: 'hashing', bytesDone: 0, bytesTotal: 0 });
  return { sha256: hash.digest('hex'), size };
}

/** sha256 and size of bytes in memory. */
export function hashBytes(bytes: Uint8Array): BlobDigest {
  return { sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
}
