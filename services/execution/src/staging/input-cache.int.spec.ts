import { BlobNotFoundError, BlobStore } from '#blobs';
import type { InputRef } from '#contracts';
import { ValidationError } from '#errors';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { InputCache } from './input-cache.js';

const TEAM = 'team-cache';

let nats: TestNatsServer;
let nc: NatsConnection;
let blobs: BlobStore;
let dir: string;
let inputs: InputRef[];

beforeAll(async () => {
  [nats, dir] = await Promise.all([startNatsServer(), mkdtemp(join(tmpdir(), 'gpunet-cache-'))]);
  nc = await connect({ servers: nats.url });
  blobs = await BlobStore.open(nc);
  const src = join(dir, 'src');
  await mkdir(join(src, 'folder/sub'), { recursive: true });
  await writeFile(join(src, 'file.txt'), 'a file\n');
  await writeFile(join(src, 'folder/a.csv'), 'x,y\n1,2\n');
  await writeFile(join(src, 'folder/sub/b.csv'), 'a file\n'); // same bytes as file.txt: one cached blob
  await writeFile(join(src, 'folder/run.sh'), '#!/bin/sh\necho hi\n', { mode: 0o755 });
  const file = await blobs.uploadFile(TEAM, join(src, 'file.txt'));
  const folder = await blobs.uploadFolder(TEAM, join(src, 'folder'));
  inputs = [
    { name: 'file', path: 'one/file.txt', kind: 'file', sha256: file.sha256, size: file.size },
    { name: 'folder', path: 'data', kind: 'folder', sha256: folder.sha256, size: folder.size },
  ];
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('node input cache', () => {
  it('places files and folders at their paths, and a second job on the node moves no bytes', async () => {
    const cache = new InputCache(blobs, join(dir, 'cache'));
    const first = join(dir, 'run1');
    const second = join(dir, 'run2');
    const r1 = await cache.stage(TEAM, inputs, first);
    expect(r1).toMatchObject({ files: 4 });
    expect(r1.downloadedBytes).toBeGreaterThan(0);
    expect(await readFile(join(first, 'one/file.txt'), 'utf8')).toBe('a file\n');
    expect(await readFile(join(first, 'data/a.csv'), 'utf8')).toBe('x,y\n1,2\n');
    expect(await readFile(join(first, 'data/sub/b.csv'), 'utf8')).toBe('a file\n');
    expect((await stat(join(first, 'data/run.sh'))).mode & 0o777).toBe(0o555);

    const r2 = await cache.stage(TEAM, inputs, second);
    expect(r2).toEqual({ files: 4, bytes: r1.bytes, downloadedBytes: 0 });
    // Hard links to the cached blob, read-only: no copy of the bytes per run.
    const [a, b] = await Promise.all([stat(join(first, 'one/file.txt')), stat(join(second, 'data/sub/b.csv'))]);
    expect(a.ino).toBe(b.ino);
    expect(a.mode & 0o222).toBe(0);
  });

  it('keeps teams apart: another team\'s identical input is fetched from its own blobs', async () => {
    const cache = new InputCache(blobs, join(dir, 'cache'));
    await expect(cache.stage('team-other', inputs.slice(0, 1), join(dir, 'run-other'))).rejects.toThrow(BlobNotFoundError);
  });

  it('refuses an input path that leaves the input directory', async () => {
    const cache = new InputCache(blobs, join(dir, 'cache'));
    await expect(cache.stage(TEAM, [{ ...inputs[0]!, path: '../escape.txt' }], join(dir, 'run3'))).rejects.toThrow(ValidationError);
  });
});
