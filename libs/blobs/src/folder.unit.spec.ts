import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeFolderManifest } from '#contracts';
import { parseFolderManifest } from './blob-store.js';
import { FolderInputError, ManifestInvalidError } from './errors.js';
import { listFolder } from './folder.js';

describe('listFolder', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpunet-folder-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('given nested files, lists regular files sorted by `/` path with size and execute bit', async () => {
    await mkdir(join(dir, 'b/c'), { recursive: true });
    await mkdir(join(dir, 'empty-dir'));
    await writeFile(join(dir, 'b/c/z.txt'), 'zz');
    await writeFile(join(dir, 'a.sh'), '#!/bin/sh\n');
    await chmod(join(dir, 'a.sh'), 0o750);
    await writeFile(join(dir, 'b/y.txt'), '');

    const files = await listFolder(dir);

    expect(files.map(({ path, size, executable }) => ({ path, size, executable }))).toEqual([
      { path: 'a.sh', size: 10, executable: true },
      { path: 'b/c/z.txt', size: 2, executable: false },
      { path: 'b/y.txt', size: 0, executable: false },
    ]);
    expect(files[1]!.absolutePath).toBe(join(dir, 'b/c/z.txt'));
  });

  it('given a symlink to a file, lists it as that file', async () => {
    await writeFile(join(dir, 'target.bin'), 'abc');
    await symlink(join(dir, 'target.bin'), join(dir, 'link.bin'));
    expect((await listFolder(dir)).map((f) => [f.path, f.size])).toEqual([
      ['link.bin', 3],
      ['target.bin', 3],
    ]);
  });

  it('given a symlink to a directory, refuses it by name', async () => {
    await mkdir(join(dir, 'real'));
    await symlink(join(dir, 'real'), join(dir, 'loop'));
    await expect(listFolder(dir)).rejects.toThrow(FolderInputError);
    await expect(listFolder(dir)).rejects.toThrow(/loop is a symlink to a directory/);
  });

  it('given a dangling symlink, refuses it', async () => {
    await symlink(join(dir, 'nowhere'), join(dir, 'dangling'));
    await expect(listFolder(dir)).rejects.toThrow(/dangling symlink/);
  });

  it('given a file instead of a folder, says so', async () => {
    await writeFile(join(dir, 'f'), 'x');
    await expect(listFolder(join(dir, 'f'))).rejects.toThrow(/is not a directory/);
  });
});

describe('parseFolderManifest', () => {
  const entry = { path: 'a.txt', sha256: 'ab'.repeat(32), size: 3 };

  it('given canonical manifest bytes, returns the manifest', () => {
    const bytes = Buffer.from(encodeFolderManifest([entry]));
    expect(parseFolderManifest(bytes)).toEqual({ format: 'gpunet.folder/1', entries: [entry] });
  });

  it('given bytes that are not JSON, throws ManifestInvalidError with a fix', () => {
    const error = (() => {
      try {
        parseFolderManifest(Buffer.from('{not json'), 'cafe');
      } catch (err) {
        return err as ManifestInvalidError;
      }
    })();
    expect(error).toBeInstanceOf(ManifestInvalidError);
    expect(error?.message).toMatch(/cafe is not JSON/);
    expect(error?.issues[0]?.fix).toMatch(/upload the folder again/);
  });

  it('given JSON that is not a manifest, names the bad field', () => {
    const bytes = Buffer.from(JSON.stringify({ format: 'gpunet.folder/1', entries: [{ ...entry, path: '../x' }] }));
    expect(() => parseFolderManifest(bytes)).toThrow(/entries\.0\.path/);
  });
});
