import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ValidationError } from '#errors';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { BlobStore } from './blob-store.js';
import { CHUNK_HEADER_ROOM, CHUNK_INDEX_HEADER, CHUNK_SHA256_HEADER, uploadNuid } from './chunked-put.js';
import { BlobIntegrityError, BlobNotFoundError, FolderInputError } from './errors.js';
import { blobBucket } from './names.js';

const BUCKET_A = blobBucket('team-a');
const BUCKET_C = blobBucket('team-c');
import type { TransferProgress } from './progress.js';

const MiB = 1024 * 1024;
const sha = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('BlobStore against a real nats-server', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let blobs: BlobStore;
  let dir: string;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    blobs = await BlobStore.open(nc);
    dir = await mkdtemp(join(tmpdir(), 'gpunet-blobs-'));
  });

  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function file(name: string, bytes: Uint8Array): Promise<string> {
    const path = join(dir, name);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(path, bytes);
    return path;
  }

  /** Bytes this connection sent while `fn` ran (client-side counter of the NATS protocol). */
  async function bytesSentDuring<T>(fn: () => Promise<T>): Promise<{ result: T; sent: number }> {
    await nc.flush();
    const before = nc.stats().outBytes;
    const result = await fn();
    await nc.flush();
    return { result, sent: nc.stats().outBytes - before };
  }

  it('copies a blob between a team\'s bucket and a node\'s, verified; a second copy moves nothing; bytes that lie about their address are refused and nothing is kept', async () => {
    const node = await BlobStore.open(nc, { node: 'node-x' });
    expect(node.bucketOf('team-a')).toBe('gpunet-node-node-x');
    const bytes = randomBytes(2 * MiB + 777);
    const up = await blobs.uploadFile('team-a', await file('copy-src.bin', bytes));
    expect(await node.copyFrom(blobs, 'team-a', up.sha256, { size: up.size })).toEqual({ sha256: up.sha256, size: up.size, copiedBytes: up.size });
    expect(await node.copyFrom(blobs, 'team-a', up.sha256)).toMatchObject({ copiedBytes: 0 });
    expect(Buffer.from(await node.readBytes('team-a', up.sha256)).equals(bytes)).toBe(true);
    await expect(node.copyFrom(blobs, 'team-a', 'ab'.repeat(32))).rejects.toThrow(BlobNotFoundError);
    await expect(blobs.copyFrom(node, 'team-a', up.sha256, { size: up.size + 1 })).rejects.toThrow(BlobIntegrityError);

    // A node writes a record naming an address its chunks do not hash to: the copy refuses it.
    const claimed = sha(randomBytes(16));
    const { ChunkedWriter } = await import('./chunked-put.js');
    const writer = await ChunkedWriter.open(nc, 'gpunet-node-node-x', { chunkBytes: MiB, pipeline: 2, timeoutMs: 10_000 });
    const name = `team-a/${claimed}`;
    const nuid = writer.nuidOf(name);
    const forged = randomBytes(5000);
    await writer.publishChunk(writer.chunkSubject(nuid), 0, forged);
    await writer.writeRecord(name, nuid, { sha256: claimed, size: forged.length }, 1);
    await expect(blobs.copyFrom(node, 'team-a', claimed)).rejects.toThrow(BlobIntegrityError);
    expect(await blobs.stat('team-a', claimed)).toBeUndefined();
    const info = await (await jetstreamManager(nc)).streams.info(`OBJ_${BUCKET_A}`, { subjects_filter: `$O.${BUCKET_A}.C.${uploadNuid(BUCKET_A, name, Math.min(MiB, (nc.info?.max_payload ?? MiB) - CHUNK_HEADER_ROOM))}` });
    expect(info.state.subjects ?? {}).toEqual({});
  });

  it('round-trips a multi-chunk file and reports progress up to the total', async () => {
    const bytes = randomBytes(3 * MiB + 12345);
    const path = await file('round-trip.bin', bytes);
    const seen: TransferProgress[] = [];

    const up = await blobs.uploadFile('team-a', path, { onProgress: (p) => seen.push(p) });

    expect(up).toEqual({ sha256: sha(bytes), size: bytes.length, skipped: false, bytesSent: bytes.length, resumedFromBytes: 0 });
    const uploading = seen.filter((p) => p.phase === 'uploading');
    expect(seen.filter((p) => p.phase === 'hashing').at(-1)).toEqual({ phase: 'hashing', bytesDone: bytes.length, bytesTotal: bytes.length });
    expect(uploading.length).toBeGreaterThanOrEqual(4);
    expect(uploading.at(-1)).toEqual({ phase: 'uploading', bytesDone: bytes.length, bytesTotal: bytes.length });
    expect(uploading.map((p) => p.bytesDone)).toEqual([...uploading.map((p) => p.bytesDone)].sort((a, b) => a - b));

    const dest = join(dir, 'out', 'round-trip.bin');
    const downloading: TransferProgress[] = [];
    const down = await blobs.downloadTo('team-a', up.sha256, dest, { size: up.size, onProgress: (p) => downloading.push(p) });

    expect(down).toEqual({ sha256: up.sha256, size: up.size });
    expect(Buffer.compare(await readFile(dest), bytes)).toBe(0);
    expect(downloading.at(-1)).toEqual({ phase: 'downloading', bytesDone: bytes.length, bytesTotal: bytes.length });
    expect(await blobs.stat('team-a', up.sha256)).toMatchObject({ sha256: up.sha256, size: up.size, digestMatches: true });
  });

  it('skips a blob the team already holds: the second upload moves no content bytes', async () => {
    const bytes = randomBytes(2 * MiB);
    const path = await file('skip.bin', bytes);

    const first = await bytesSentDuring(() => blobs.uploadFile('team-a', path));
    const phases: string[] = [];
    const second = await bytesSentDuring(() => blobs.uploadFile('team-a', path, { onProgress: (p) => phases.push(p.phase) }));

    expect(first.result.skipped).toBe(false);
    expect(first.sent).toBeGreaterThan(bytes.length);
    expect(second.result).toEqual({ sha256: sha(bytes), size: bytes.length, skipped: true, bytesSent: 0, resumedFromBytes: 0 });
    expect(second.sent).toBeLessThan(4096); // one info request, no chunk
    expect(phases).not.toContain('uploading');
  });

  it('detects a blob whose stored bytes differ from its address and leaves no file behind', async () => {
    const original = randomBytes(300_000);
    const address = sha(original);
    const originalPath = await file('original.bin', original);
    const raw = await new Objm(nc).open(BUCKET_A);
    const dest = join(dir, 'tampered', 'x.bin');
    // Someone writes other bytes under the name: the record's digest no longer matches the name.
    await raw.putBlob({ name: `team-a/${address}` }, randomBytes(300_000));

    await expect(blobs.downloadTo('team-a', address, dest)).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(stat(dest)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await blobs.exists('team-a', address)).toBe(false);
    expect(await blobs.stat('team-a', address)).toMatchObject({ digestMatches: false });
    // Uploading the original repairs the name: a mismatching record is not taken as "held".
    expect((await blobs.uploadFile('team-a', originalPath)).skipped).toBe(false);
    await blobs.downloadTo('team-a', address, dest);
    expect(Buffer.compare(await readFile(dest), original)).toBe(0);

    // Worse: the record claims the right digest but the chunks hold other bytes. Only hashing
    // the bytes while writing catches this.
    await raw.putBlob({ name: `team-a/${address}` }, randomBytes(300_000));
    const metaToken = Buffer.from(`team-a/${address}`).toString('base64').replaceAll('+', '-').replaceAll('/', '_'); // padded base64url, as the client names it
    const metaSubject = `$O.${BUCKET_A}.M.${metaToken}`;
    const jsm = await jetstreamManager(nc);
    const record = (await jsm.streams.getMessage(`OBJ_${BUCKET_A}`, { last_by_subj: metaSubject }))!.json<Record<string, unknown>>();
    const h = headers();
    h.set('Nats-Rollup', 'sub');
    await jetstream(nc).publish(metaSubject, JSON.stringify({ ...record, digest: `SHA-256=${Buffer.from(address, 'hex').toString('base64')}` }), { headers: h });
    expect(await blobs.stat('team-a', address)).toMatchObject({ digestMatches: true });

    const tamperedDest = join(dir, 'tampered', 'y.bin');
    await expect(blobs.downloadTo('team-a', address, tamperedDest)).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(stat(tamperedDest)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await readdir(join(dir, 'tampered'))).filter((n) => n.endsWith('.part'))).toEqual([]);
  });

  it('downloads a blob of many chunks with its writes overlapping the reads, in order; bytes that differ from the address by one byte, or a chunk out of place, are refused and leave no file', async () => {
    // 64 KiB chunks: 9 MiB is 144 chunks, many times the read-ahead.
    const small = await BlobStore.open(nc, { chunkBytes: 64 * 1024 });
    const bytes = randomBytes(9 * MiB + 4321);
    const up = await small.uploadFile('team-c', await file('batched.bin', bytes));
    const dest = join(dir, 'batched', 'out.bin');
    expect(await small.downloadTo('team-c', up.sha256, dest, { size: up.size })).toEqual({ sha256: up.sha256, size: up.size });
    expect(Buffer.compare(await readFile(dest), bytes)).toBe(0);
    // Copied into a node's bucket and back (chunks re-cut to another size on the way), still whole.
    const node = await BlobStore.open(nc, { node: 'node-batched' });
    expect(await node.copyFrom(small, 'team-c', up.sha256, { size: up.size })).toMatchObject({ copiedBytes: up.size });
    const back = join(dir, 'batched', 'back.bin');
    await node.downloadTo('team-c', up.sha256, back, { size: up.size });
    expect(Buffer.compare(await readFile(back), bytes)).toBe(0);

    const { ChunkedWriter } = await import('./chunked-put.js');
    const writer = await ChunkedWriter.open(nc, BUCKET_C, { chunkBytes: 64 * 1024, pipeline: 2, timeoutMs: 10_000 });
    // A record naming bytes that differ from its chunks by one byte in the middle: every chunk
    // arrives whole and in order and is written, and only the sha256 at the end refuses it.
    const flipped = Buffer.from(bytes);
    flipped[4 * MiB + 1] = flipped[4 * MiB + 1]! ^ 0xff;
    const liar = `team-c/${sha(flipped)}`;
    await writer.writeRecord(liar, writer.nuidOf(`team-c/${up.sha256}`), { sha256: sha(flipped), size: bytes.length }, Math.ceil(bytes.length / (64 * 1024)));
    // The error names the sha256 of all the bytes read: every chunk came, the hash refused them.
    await expect(node.copyFrom(small, 'team-c', sha(flipped))).rejects.toThrow(new RegExp(`found sha256 ${up.sha256}`));
    expect(await node.stat('team-c', sha(flipped))).toBeUndefined();
    const lied = join(dir, 'batched', 'lied.bin');
    await expect(small.downloadTo('team-c', sha(flipped), lied, { size: bytes.length })).rejects.toThrow(new RegExp(`found sha256 ${up.sha256}`));
    await expect(stat(lied)).rejects.toMatchObject({ code: 'ENOENT' });
    // Chunk 70 of the team's copy deleted, and other bytes published as chunk 70 after the last one.
    const subject = writer.chunkSubject(writer.nuidOf(`team-c/${up.sha256}`));
    const jsm = await jetstreamManager(nc);
    const first = await jsm.streams.getMessage(`OBJ_${BUCKET_C}`, { seq: 1, next_by_subj: subject } as never);
    await jsm.streams.deleteMessage(`OBJ_${BUCKET_C}`, first!.seq + 70, false);
    await writer.publishChunk(subject, 70, randomBytes(64 * 1024));
    const refused = join(dir, 'batched', 'refused.bin');
    await expect(small.downloadTo('team-c', up.sha256, refused, { size: up.size })).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(stat(refused)).rejects.toMatchObject({ code: 'ENOENT' });

    expect((await readdir(join(dir, 'batched'))).filter((n) => n.endsWith('.part'))).toEqual([]);

    // The copy's chunks carry their index and no sha256 (nothing reads one): an upload that later
    // finds them without a record keeps them once the last one's bytes are the file's.
    const nodeWriter = await ChunkedWriter.open(nc, 'gpunet-node-node-batched', { chunkBytes: MiB, pipeline: 2, timeoutMs: 10_000 });
    const copied = nodeWriter.nuidOf(`team-c/${up.sha256}`);
    const last = await jsm.streams.getMessage('OBJ_gpunet-node-node-batched', { last_by_subj: nodeWriter.chunkSubject(copied) });
    const chunks = Math.ceil(bytes.length / nodeWriter.chunkBytes);
    expect(last?.header?.get(CHUNK_INDEX_HEADER)).toBe(String(chunks - 1));
    expect(last?.header?.get(CHUNK_SHA256_HEADER)).toBe('');
    const prefix = await nodeWriter.storedPrefix(copied);
    expect(prefix.chunks).toBe(chunks);
    expect(Buffer.from(prefix.lastChunk!).equals(bytes.subarray((chunks - 1) * nodeWriter.chunkBytes))).toBe(true);
  });

  it('fails at once, never waiting, on a record whose chunks are gone: the blob must be uploaded again', async () => {
    const bytes = randomBytes(5000);
    const up = await blobs.uploadFile('team-c', await file('stalled.bin', bytes));
    // Damage the record: it now points at chunks that do not exist.
    const metaSubject = `$O.${BUCKET_C}.M.${Buffer.from(`team-c/${up.sha256}`).toString('base64').replaceAll('+', '-').replaceAll('/', '_')}`;
    const jsm = await jetstreamManager(nc);
    const record = (await jsm.streams.getMessage(`OBJ_${BUCKET_C}`, { last_by_subj: metaSubject }))!.json<Record<string, unknown>>();
    const h = headers();
    h.set('Nats-Rollup', 'sub');
    await jetstream(nc).publish(metaSubject, JSON.stringify({ ...record, nuid: 'no-such-chunks' }), { headers: h });

    const impatient = await BlobStore.open(nc, { stallTimeoutMs: 300 });
    const dest = join(dir, 'stalled-out.bin');
    await expect(impatient.downloadTo('team-c', up.sha256, dest)).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(stat(dest)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a download whose size differs from the one asked for, before moving bytes', async () => {
    const bytes = randomBytes(1000);
    const up = await blobs.uploadFile('team-a', await file('sized.bin', bytes));
    await expect(blobs.downloadTo('team-a', up.sha256, join(dir, 'sized-out.bin'), { size: 999 })).rejects.toBeInstanceOf(BlobIntegrityError);
    await expect(stat(join(dir, 'sized-out.bin'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('keeps teams apart: another team neither sees, skips on, nor removes a team\'s blob', async () => {
    const bytes = randomBytes(500_000);
    const path = await file('isolated.bin', bytes);
    const a = await blobs.uploadFile('team-a', path);

    expect(await blobs.exists('team-b', a.sha256)).toBe(false);
    expect(await blobs.stat('team-b', a.sha256)).toBeUndefined();
    await expect(blobs.downloadTo('team-b', a.sha256, join(dir, 'b.bin'))).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await blobs.remove('team-b', a.sha256)).toBe(false);

    // Team b uploading the same bytes moves them: a skip would tell b that someone holds them.
    const b = await bytesSentDuring(() => blobs.uploadFile('team-b', path));
    expect(b.result.skipped).toBe(false);
    expect(b.sent).toBeGreaterThan(bytes.length);

    expect(await blobs.remove('team-b', a.sha256)).toBe(true);
    expect(await blobs.exists('team-b', a.sha256)).toBe(false);
    expect(await blobs.exists('team-a', a.sha256)).toBe(true);
    expect(await blobs.remove('team-b', a.sha256)).toBe(false);
  });

  it('keeps each team in a bucket of its own, which a reader that may not create one must find made', async () => {
    const bytes = randomBytes(2000);
    await blobs.uploadFile('team-e', await file('own-bucket.bin', bytes));
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(`OBJ_${blobBucket('team-e')}`);
    expect(info.config.subjects).toEqual(expect.arrayContaining([`$O.${blobBucket('team-e')}.C.>`, `$O.${blobBucket('team-e')}.M.>`]));
    expect(info.state.messages).toBeGreaterThan(0);
    const reader = await BlobStore.open(nc, { create: false });
    expect(await reader.exists('team-e', sha(bytes))).toBe(true);
    await expect(reader.exists('team-nobody', sha(bytes))).rejects.toThrow(/team team-nobody has no blob bucket \(gpunet-blobs-team-nobody\)/);
    await expect(jsm.streams.info(`OBJ_${blobBucket('team-nobody')}`)).rejects.toThrow(/not found/);
  });

  it('answers a team asking for another team\'s hash exactly as for a hash nobody has', async () => {
    const path = await file('secret.bin', randomBytes(200_000));
    const held = (await blobs.uploadFile('team-a', path)).sha256;
    const nobody = sha(randomBytes(32));
    const probe = async (sha256: string) => {
      const download = (await blobs.downloadTo('team-b', sha256, join(dir, 'probe.bin')).catch((e: unknown) => e)) as BlobNotFoundError;
      const manifest = (await blobs.readFolderManifest('team-b', sha256).catch((e: unknown) => e)) as BlobNotFoundError;
      const scrub = (e: BlobNotFoundError) => ({ type: e.constructor.name, code: e.code, message: e.message.replace(sha256, '<sha>') });
      return { exists: await blobs.exists('team-b', sha256), stat: await blobs.stat('team-b', sha256), removed: await blobs.remove('team-b', sha256), download: scrub(download), manifest: scrub(manifest) };
    };
    const forHeld = await probe(held);
    expect(forHeld).toEqual(await probe(nobody));
    expect(forHeld.download.type).toBe('BlobNotFoundError');
    expect(await blobs.exists('team-a', held)).toBe(true);
  });

  it('resumes an interrupted upload: the second run sends only what the first did not store', async () => {
    const bytes = randomBytes(12 * MiB + 777);
    const path = await file('resume.bin', bytes);
    const abort = new AbortController();
    const first = await blobs
      .uploadFile('team-a', path, { signal: abort.signal, onProgress: (p) => p.phase === 'uploading' && p.bytesDone >= 5 * MiB && abort.abort(new Error('interrupted')) })
      .catch((e: unknown) => e);
    expect(first).toEqual(new Error('interrupted'));
    expect(await blobs.exists('team-a', sha(bytes))).toBe(false);

    const seen: TransferProgress[] = [];
    const second = await bytesSentDuring(() => blobs.uploadFile('team-a', path, { onProgress: (p) => p.phase === 'uploading' && seen.push(p) }));
    expect(second.result).toMatchObject({ sha256: sha(bytes), size: bytes.length, skipped: false });
    expect(second.result.resumedFromBytes).toBeGreaterThanOrEqual(4 * MiB);
    expect(second.result.bytesSent).toBe(bytes.length - second.result.resumedFromBytes);
    expect(second.sent).toBeLessThan(bytes.length - 4 * MiB + 64 * 1024);
    expect(seen[0]!.bytesDone).toBe(second.result.resumedFromBytes); // the bar starts where the last run stopped

    const dest = join(dir, 'resumed-out.bin');
    await blobs.downloadTo('team-a', sha(bytes), dest, { size: bytes.length });
    expect(Buffer.compare(await readFile(dest), bytes)).toBe(0);
  });

  it('keeps a blob whole when two uploads of the same new file run at once (two submits of one dataset)', async () => {
    const bytes = randomBytes(10 * MiB + 4321);
    const path = await file('concurrent.bin', bytes);
    // Separate connections, as two `gpunet submit` processes would have.
    const other = await connect({ servers: server.url });
    try {
      const second = await BlobStore.open(other);
      const [a, b] = await Promise.all([blobs.uploadFile('team-c', path), second.uploadFile('team-c', path)]);
      expect([a.sha256, b.sha256]).toEqual([sha(bytes), sha(bytes)]);
      for (const [i, store] of [blobs, second].entries()) {
        const dest = join(dir, `concurrent-out-${i}.bin`);
        await store.downloadTo('team-c', sha(bytes), dest, { size: bytes.length });
        expect(Buffer.compare(await readFile(dest), bytes)).toBe(0);
      }
      // A third upload finds the blob whole and moves nothing.
      const third = await blobs.uploadFile('team-c', path);
      expect(third.skipped).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('starts over when the stored chunks of an interrupted upload are not this file\'s', async () => {
    const bytes = randomBytes(4 * MiB);
    const path = await file('tampered.bin', bytes);
    const abort = new AbortController();
    await blobs
      .uploadFile('team-a', path, { signal: abort.signal, onProgress: (p) => p.phase === 'uploading' && p.bytesDone >= 2 * MiB && abort.abort(new Error('interrupted')) })
      .catch(() => undefined);
    // Another file with the same address would be a sha256 collision; instead, damage what is
    // stored. The last chunk even carries the sha256 of the file's own chunk 1 in the header an
    // older writer stored and checked: the resume compares bytes, and these are not the file's.
    const name = `team-a/${sha(bytes)}`;
    const chunkBytes = MiB - CHUNK_HEADER_ROOM;
    const nuid = uploadNuid(BUCKET_A, name, chunkBytes);
    const h = headers();
    h.set('Gpunet-Chunk', '1');
    h.set('Gpunet-Chunk-Sha256', sha(bytes.subarray(chunkBytes, 2 * chunkBytes)));
    const jsm = await jetstreamManager(nc);
    await jsm.streams.purge(`OBJ_${BUCKET_A}`, { filter: `$O.${BUCKET_A}.C.${nuid}` });
    const js = jetstream(nc);
    const h0 = headers();
    h0.set('Gpunet-Chunk', '0');
    h0.set('Gpunet-Chunk-Sha256', sha(Buffer.alloc(1000)));
    await js.publish(`$O.${BUCKET_A}.C.${nuid}`, Buffer.alloc(1000), { headers: h0 });
    await js.publish(`$O.${BUCKET_A}.C.${nuid}`, Buffer.alloc(1000), { headers: h });

    const again = await blobs.uploadFile('team-a', path);
    expect(again).toMatchObject({ resumedFromBytes: 0, bytesSent: bytes.length });
    const dest = join(dir, 'tampered-out.bin');
    await blobs.downloadTo('team-a', sha(bytes), dest, { size: bytes.length });
    expect(Buffer.compare(await readFile(dest), bytes)).toBe(0);
  });

  it('refuses a team id or hash that could address outside the team', async () => {
    await expect(blobs.exists('team-a/../team-b', 'a'.repeat(64))).rejects.toBeInstanceOf(ValidationError);
    await expect(blobs.exists('team-a', 'A'.repeat(64))).rejects.toBeInstanceOf(ValidationError);
  });

  it('round-trips a folder: files, nesting, an executable, an empty file, duplicates stored once', async () => {
    const src = join(dir, 'dataset');
    const shared = randomBytes(200_000);
    await file('dataset/train/part-0.bin', randomBytes(1.5 * MiB));
    await file('dataset/train/part-1.bin', shared);
    await file('dataset/copy-of-part-1.bin', shared);
    await file('dataset/empty.txt', new Uint8Array(0));
    await chmod(await file('dataset/run.sh', Buffer.from('#!/bin/sh\necho hi\n')), 0o755);
    const total = 1.5 * MiB + 2 * 200_000 + 18;

    const phases: TransferProgress[] = [];
    const up = await blobs.uploadFolder('team-a', src, { onProgress: (p) => phases.push(p) });

    expect(up.files).toBe(5);
    expect(up.totalBytes).toBe(total);
    expect(up.bytesUploaded).toBe(total - 200_000 + up.size); // the duplicate moved once
    expect(up.manifest.entries.map((e) => e.path)).toEqual(['copy-of-part-1.bin', 'empty.txt', 'run.sh', 'train/part-0.bin', 'train/part-1.bin']);
    expect(up.manifest.entries.find((e) => e.path === 'run.sh')?.executable).toBe(true);
    expect(phases.filter((p) => p.phase === 'hashing').at(-1)).toMatchObject({ bytesDone: total, bytesTotal: total });
    expect(phases.filter((p) => p.phase === 'uploading').at(-1)).toMatchObject({ bytesDone: total - 200_000, bytesTotal: total - 200_000 });
    // The folder's address is its manifest blob.
    expect(sha(await blobs.readBytes('team-a', up.sha256))).toBe(up.sha256);

    const inputs = join(dir, 'inputs');
    const got = await blobs.downloadInput('team-a', { kind: 'folder', sha256: up.sha256, size: up.size, path: 'data/ds' }, inputs);
    expect(got).toEqual({ path: join(inputs, 'data/ds'), files: 5, bytes: total });
    for (const entry of up.manifest.entries) {
      expect(sha(await readFile(join(inputs, 'data/ds', entry.path)))).toBe(entry.sha256);
    }
    expect((await stat(join(inputs, 'data/ds/run.sh'))).mode & 0o111).not.toBe(0);
    expect((await stat(join(inputs, 'data/ds/empty.txt'))).mode & 0o111).toBe(0);

    const again = await bytesSentDuring(() => blobs.uploadFolder('team-a', src));
    expect(again.result).toMatchObject({ sha256: up.sha256, skipped: true, bytesUploaded: 0 });
    expect(again.sent).toBeLessThan(16 * 1024);
  });

  it('materializes a file input and refuses a path that leaves the input directory', async () => {
    const bytes = randomBytes(4096);
    const up = await blobs.uploadFile('team-a', await file('input.bin', bytes));
    const inputs = join(dir, 'inputs-file');
    const got = await blobs.downloadInput('team-a', { kind: 'file', sha256: up.sha256, size: up.size, path: 'a/b/input.bin' }, inputs);
    expect(got).toEqual({ path: join(inputs, 'a/b/input.bin'), files: 1, bytes: 4096 });
    await expect(blobs.downloadInput('team-a', { kind: 'file', sha256: up.sha256, size: up.size, path: '../escape.bin' }, inputs)).rejects.toBeInstanceOf(FolderInputError);
  });

  it('refuses to keep a file that changed between hashing and sending', async () => {
    // Twelve chunks with at most eight in flight: once the first is acknowledged the last is not
    // read yet, so changing it then is a change between hashing and sending, on any machine.
    const size = 12 * 1024 * 1024;
    const path = await file('changing.bin', randomBytes(size));
    let changed = false;
    const error = await blobs
      .uploadFile('team-a', path, {
        onProgress: (p) => {
          if (p.phase === 'uploading' && !changed) {
            changed = true;
            const fd = openSync(path, 'r+');
            writeSync(fd, Buffer.from('edit'), 0, 4, size - 4);
            closeSync(fd);
          }
        },
      })
      .catch((e: unknown) => e);
    expect(changed).toBe(true);
    expect(error).toBeInstanceOf(BlobIntegrityError);
    const hashedAs = (error as BlobIntegrityError).expected.sha256;
    expect(await blobs.stat('team-a', hashedAs)).toBeUndefined();
  });


  it('removes a blob; removing it again says there was none', async () => {
    const up = await blobs.uploadFile('team-a', await file('gone.bin', randomBytes(10_000)));
    expect(await blobs.remove('team-a', up.sha256)).toBe(true);
    expect(await blobs.exists('team-a', up.sha256)).toBe(false);
    expect(await blobs.remove('team-a', up.sha256)).toBe(false);
    await expect(blobs.downloadTo('team-a', up.sha256, join(dir, 'gone-out.bin'))).rejects.toBeInstanceOf(BlobNotFoundError);
  });
});
