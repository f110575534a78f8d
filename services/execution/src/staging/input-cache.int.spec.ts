import { BlobNotFoundError, BlobStore } from '#blobs';
import type { InputRef } from '#contracts';
import { ValidationError } from '#errors';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { InputCache, type CacheRemoval } from './input-cache.js';

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
  it('through the node\'s own bucket: asks for what it lacks (manifests first, then their files), reads only that bucket, leaves nothing in it', async () => {
    const node = await BlobStore.open(nc, { node: 'node-cache' });
    const asked: string[][] = [];
    const cache = new InputCache(node, join(dir, 'cache-node'), {
      // Storage's part (decision 0025): copy from the team's bucket into the node's.
      prepare: async (team, attempt, shas) => {
        expect(attempt).toEqual({ attemptId: 'job-n-a1', jobId: 'job-n' });
        asked.push(shas);
        for (const sha of shas) await node.copyFrom(blobs, team, sha);
      },
    });
    const folderFiles = [...new Set((await blobs.readFolderManifest(TEAM, inputs[1]!.sha256)).entries.map((e) => e.sha256))];
    const r1 = await cache.stage(TEAM, inputs, join(dir, 'run-node1'), undefined, { attemptId: 'job-n-a1', jobId: 'job-n' });
    expect(r1).toMatchObject({ files: 4 });
    expect(await readFile(join(dir, 'run-node1', 'data/a.csv'), 'utf8')).toBe('x,y\n1,2\n');
    // The file input and the manifest, then the folder's files the cache did not get with the file input.
    expect(asked[0]!.sort()).toEqual([inputs[0]!.sha256, inputs[1]!.sha256].sort());
    expect(asked[1]!.sort()).toEqual(folderFiles.filter((f) => f !== inputs[0]!.sha256).sort());
    for (const sha of [...asked[0]!, ...asked[1]!]) expect(await node.stat(TEAM, sha)).toBeUndefined();
    // A second job on the node asks for nothing (storage then only checks the attempt) and moves no bytes.
    const r2 = await cache.stage(TEAM, inputs, join(dir, 'run-node2'), undefined, { attemptId: 'job-n-a1', jobId: 'job-n' });
    expect(r2.downloadedBytes).toBe(0);
    expect(asked.slice(2)).toEqual([[]]);
  });

  it('reading through storage: reads each blob it lacks with its attempt, copies nothing into the node\'s bucket, and a second job reads nothing', async () => {
    const node = await BlobStore.open(nc, { node: 'node-read' });
    const prepared: string[][] = [];
    const reads: { attemptId: string; sha256: string; mode: number }[] = [];
    const cache = new InputCache(node, join(dir, 'cache-read'), {
      prepare: async (_team, _attempt, shas) => void prepared.push(shas),
      // Storage's part (decision 0036) stood in for by a verified download from the team's bucket.
      read: async (team, attempt, blob, dest, mode) => {
        reads.push({ attemptId: attempt.attemptId, sha256: blob.sha256, mode });
        await blobs.downloadTo(team, blob.sha256, dest, { size: blob.size, mode });
      },
    });
    const folderFiles = [...new Set((await blobs.readFolderManifest(TEAM, inputs[1]!.sha256)).entries.map((e) => e.sha256))];
    const r1 = await cache.stage(TEAM, inputs, join(dir, 'run-read1'), undefined, { attemptId: 'job-r-a1', jobId: 'job-r' });
    expect(r1).toMatchObject({ files: 4 });
    expect(await readFile(join(dir, 'run-read1', 'data/a.csv'), 'utf8')).toBe('x,y\n1,2\n');
    expect(reads.map((r) => r.sha256).sort()).toEqual([...new Set([inputs[0]!.sha256, inputs[1]!.sha256, ...folderFiles])].sort());
    expect(reads.every((r) => r.attemptId === 'job-r-a1' && r.mode === 0o444)).toBe(true);
    // Storage is asked once per attempt for nothing (it checks the attempt and opens the node's bucket for outputs).
    expect(prepared).toEqual([[]]);
    for (const sha of reads.map((r) => r.sha256)) expect(await node.stat(TEAM, sha)).toBeUndefined();
    const r2 = await cache.stage(TEAM, inputs, join(dir, 'run-read2'), undefined, { attemptId: 'job-r2-a1', jobId: 'job-r2' });
    expect(r2.downloadedBytes).toBe(0);
    expect(reads).toHaveLength(folderFiles.length + 1);
  });

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

  it('removes cached inputs once no attempt on the node needs them, keeps what asks to be kept, and reports each removal', async () => {
    let clock = 1_000_000;
    const removals: CacheRemoval[] = [];
    const cache = new InputCache(blobs, join(dir, 'cache-release'), { now: () => clock, onRemoved: async (r) => void removals.push(r) });
    const [file, folder] = inputs as [InputRef, InputRef];
    const kept = { ...file, keepMs: 60_000 };
    await cache.stage(TEAM, [folder], join(dir, 'rel-1'), undefined, { attemptId: 'a1', jobId: 'job-1' });
    await cache.stage(TEAM, [folder], join(dir, 'rel-2'), undefined, { attemptId: 'a2', jobId: 'job-2' });
    await cache.stage(TEAM, [kept], join(dir, 'rel-3'), undefined, { attemptId: 'a3', jobId: 'job-3' });
    const cachedNow = () => cache.held().map((h) => h.sha256).sort();
    const folderBlobs = cachedNow().length;

    expect(await cache.release('a1')).toEqual([]); // job-2 on this node still uses the folder
    const second = await cache.release('a2');
    expect(second).toHaveLength(1);
    expect(second[0]).toMatchObject({ team: TEAM, jobId: 'job-2', reason: 'job_released' });
    // The folder's manifest and its files, except file.txt's bytes, which the kept input holds.
    expect(second[0]!.blobs.map((b) => b.sha256)).toContain(folder.sha256);
    expect(second[0]!.blobs).toHaveLength(folderBlobs - 1);
    await expect(stat(cache.pathOf(TEAM, folder.sha256))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await readFile(join(dir, 'rel-2', 'data', 'a.csv'), 'utf8')).toBe('x,y\n1,2\n'); // a run's own link outlives the cache entry

    expect(await cache.release('a3')).toEqual([]); // keep: 60 s
    expect(cachedNow()).toEqual([file.sha256]);
    clock += 60_000;
    const later = await cache.release('none');
    expect(later).toEqual([{ team: TEAM, reason: 'retention_expired', blobs: [{ sha256: file.sha256, size: file.size }] }]);
    expect(cachedNow()).toEqual([]);
    expect(removals).toEqual([...second, ...later]);
  });

  it('keeps a named dataset, and a requeued attempt\'s inputs, after release', async () => {
    const clock = 5_000_000;
    const cache = new InputCache(blobs, join(dir, 'cache-keep'), { now: () => clock });
    const [file, folder] = inputs as [InputRef, InputRef];
    await cache.stage(TEAM, [{ ...file, dataset: 'reference' }], join(dir, 'keep-1'), undefined, { attemptId: 'b1', jobId: 'job-b1' });
    await cache.stage(TEAM, [folder], join(dir, 'keep-2'), undefined, { attemptId: 'b2', jobId: 'job-b2' });
    expect(await cache.release('b1')).toEqual([]);
    expect(await cache.release('b2', { requeued: true })).toEqual([]);
    expect(cache.held().map((h) => h.sha256)).toContain(file.sha256);
    expect(cache.held().map((h) => h.sha256)).toContain(folder.sha256);
  });
});


describe('node input cache under a size cap', () => {
  it('evicts blobs no attempt uses, least recently used first, never one in use, and reports each as evicted', async () => {
    const src = join(dir, 'cap-src');
    await mkdir(src, { recursive: true });
    const refs: InputRef[] = [];
    for (const n of [1, 2, 3]) {
      await writeFile(join(src, `d${n}.bin`), Buffer.alloc(1000, n));
      const up = await blobs.uploadFile(TEAM, join(src, `d${n}.bin`));
      refs.push({ name: `d${n}`, path: `d${n}.bin`, kind: 'file', sha256: up.sha256, size: up.size });
    }
    const removed: CacheRemoval[] = [];
    let clock = 1_000;
    const cache = new InputCache(blobs, join(dir, 'cap-cache'), { maxBytes: 2_000, now: () => clock++, onRemoved: async (r) => void removed.push(r) });
    const user = (n: number) => ({ attemptId: `a${n}`, jobId: `j${n}` });
    const keep = (ref: InputRef): InputRef => ({ ...ref, keepMs: 3_600_000 });

    // d1 and d2 are kept after their jobs (keep: 1h); together they fill the cap.
    await cache.stage(TEAM, [keep(refs[0]!)], join(dir, 'cap-run1'), undefined, user(1));
    await cache.release('a1');
    await cache.stage(TEAM, [keep(refs[1]!)], join(dir, 'cap-run2'), undefined, user(2));
    // d1 is used again by a running attempt: it is now the most recently used and in use.
    await cache.stage(TEAM, [keep(refs[0]!)], join(dir, 'cap-run3'), undefined, user(3));
    await cache.release('a2');
    expect(cache.bytesHeld).toBe(2_000);

    // d3 needs room: d2 (idle) goes, d1 (in use by a3) stays.
    const r = await cache.stage(TEAM, [refs[2]!], join(dir, 'cap-run4'), undefined, user(4));
    expect(r.downloadedBytes).toBe(1_000);
    expect(removed).toEqual([{ team: TEAM, reason: 'evicted', blobs: [{ sha256: refs[1]!.sha256, size: 1_000 }] }]);
    expect(cache.held().map((b) => b.sha256).sort()).toEqual([refs[0]!.sha256, refs[2]!.sha256].sort());
    await expect(stat(cache.pathOf(TEAM, refs[1]!.sha256))).rejects.toThrow();
    expect(cache.bytesHeld).toBe(2_000);

    // Nothing idle to evict: the cache goes over its cap rather than touching data in use.
    await cache.stage(TEAM, [refs[1]!], join(dir, 'cap-run5'), undefined, user(5));
    expect(cache.bytesHeld).toBe(3_000);
    expect(removed).toHaveLength(1);
  });
});
