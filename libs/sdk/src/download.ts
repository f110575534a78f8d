/** Writing a downloaded body to disk: hashed while written, renamed into place only when it matches. */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { OutputIntegrityError } from './errors.js';

/** Bytes moved so far, for a progress bar (`bytesTotal` is the size the job recorded). */
export interface DownloadProgress {
  phase: 'downloading';
  bytesDone: number;
  bytesTotal: number;
  /** The output path being downloaded. */
  file: string;
}

/**
 * Streams `body` into `dest`: the bytes go to a temporary file beside it, are hashed on the way,
 * and the file is renamed into place only when sha256 and size equal `expected`, so `dest` never
 * holds a partial or wrong file. Throws {@link OutputIntegrityError} otherwise.
 */
export async function writeVerified(
  body: AsyncIterable<Uint8Array>,
  dest: string,
  expected: { path: string; sha256: string; size: number },
  onProgress?: (p: DownloadProgress) => void,
): Promise<{ sha256: string; size: number }> {
  await mkdir(dirname(dest), { recursive: true });
  const temp = `${dest}.${randomBytes(6).toString('hex')}.part`;
  let handle: FileHandle | undefined = await open(temp, 'wx', 0o644);
  try {
    const hash = createHash('sha256');
    let done = 0;
    onProgress?.({ phase: 'downloading', bytesDone: 0, bytesTotal: expected.size, file: expected.path });
    for await (const chunk of body) {
      hash.update(chunk);
      await handle.write(chunk);
      done += chunk.length;
      onProgress?.({ phase: 'downloading', bytesDone: done, bytesTotal: expected.size, file: expected.path });
    }
    const actual = { sha256: hash.digest('hex'), size: done };
    if (actual.sha256 !== expected.sha256 || actual.size !== expected.size) {
      throw new OutputIntegrityError(expected.path, { sha256: expected.sha256, size: expected.size }, actual);
    }
    await handle.close();
    handle = undefined;
    await rename(temp, dest);
    return actual;
  } catch (err) {
    await handle?.close().catch(() => undefined);
    await unlink(temp).catch(() => undefined);
    throw err;
  }
}
