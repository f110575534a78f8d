import { lstat, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FolderInputError } from './errors.js';

/** One regular file of a folder input. */
export interface FolderFile {
  /** Path inside the folder, `/`-separated. */
  path: string;
  /** Where it is on this machine. */
  absolutePath: string;
  size: number;
  /** Any execute bit set: the file is materialized executable. */
  executable: boolean;
}

/**
 * Every regular file under `dir`, sorted by path. A symlink to a file counts as that file (a
 * dataset of links reads as its targets); a symlink to a directory is refused, since following
 * it could loop or leave the folder, and so are sockets, FIFOs and devices. Empty directories
 * are not part of a folder input.
 */
export async function listFolder(dir: string): Promise<FolderFile[]> {
  const top = await stat(dir);
  if (!top.isDirectory()) throw new FolderInputError(`${dir} is not a directory`, [{ path: dir, message: 'not a directory', fix: 'pass a folder, or upload it as a file input' }]);
  const files: FolderFile[] = [];
  async function walk(relative: string): Promise<void> {
    const entries = await readdir(join(dir, relative), { withFileTypes: true });
    for (const entry of entries) {
      const rel = relative === '' ? entry.name : `${relative}/${entry.name}`;
      const absolutePath = join(dir, rel);
      if (entry.isDirectory()) {
        await walk(rel);
        continue;
      }
      const info = entry.isSymbolicLink() ? await stat(absolutePath).catch(() => undefined) : await lstat(absolutePath);
      if (info?.isFile()) {
        files.push({ path: rel, absolutePath, size: info.size, executable: (info.mode & 0o111) !== 0 });
        continue;
      }
      const what = entry.isSymbolicLink() ? (info?.isDirectory() ? 'a symlink to a directory' : 'a dangling symlink') : 'not a regular file';
      throw new FolderInputError(`${absolutePath} is ${what}`, [
        { path: rel, message: what, fix: 'replace it by the files themselves, or remove it from the folder' },
      ]);
    }
  }
  await walk('');
  return files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
