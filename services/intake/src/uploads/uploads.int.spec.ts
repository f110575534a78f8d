/**
 * HTTP uploads (tus) against intake booted in-process on a real nats-server: a real HTTP client
 * whose connection is cut in the middle of a PATCH, resumed from where intake says; the bytes
 * land in the team's content-addressed bucket, visible only once they hash to the address; and
 * another team can neither see, resume, overwrite nor remove the upload.
 */
import { BlobStore } from '#blobs';
import { jest } from '@jest/globals';
import { startService, type RunningService } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { until } from '../../../../test/support/poll.js';
import { intakeService } from '../intake.service.js';

jest.setTimeout(60_000);

const KEY_A = 'key-of-team-a-producer-0000000001';
const KEY_B = 'key-of-team-b-producer-0000000003';
const KEY_A_AUDIT = 'key-of-team-a-compliance-00000002';

describe('HTTP uploads (tus) into the team\'s content-addressed blob store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let svc: RunningService;
  let nc: NatsConnection;
  let blobs: BlobStore;
  let url: string;

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-uploads-'));
    await writeFile(
      join(dir, 'keys.yaml'),
      [`- { id: ci-a, key: ${KEY_A}, team: team-a, role: producer }`, `- { id: ci-b, key: ${KEY_B}, team: team-b, role: producer }`, `- { id: audit-a, key: ${KEY_A_AUDIT}, team: team-a, role: compliance }`].join('\n'),
    );
    nc = await connect({ servers: nats.url });
    blobs = await BlobStore.open(nc);
    // The control plane makes each team's bucket with the team.
    for (const team of ['team-a', 'team-b']) await blobs.ensureBucket(team);
    svc = await startService(
      intakeService({
        env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`, GPUNET_LOG_LEVEL: 'silent', GPUNET_HTTP_PORT: '0', GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml') },
      }),
    );
    url = svc.httpUrl!;
  }, 30_000);

  afterAll(async () => {
    await svc?.stop();
    await nc?.close();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const tus = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, 'tus-resumable': '1.0.0', ...extra });
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

  async function create(key: string, sha256: string, size: number) {
    return fetch(`${url}/v1/uploads`, { method: 'POST', headers: tus(key, { 'upload-length': String(size), 'upload-metadata': `sha256 ${b64(sha256)},filename ${b64('data.bin')}` }) });
  }
  async function head(key: string, location: string) {
    return fetch(location, { method: 'HEAD', headers: tus(key) });
  }
  async function patch(key: string, location: string, offset: number, body: Buffer) {
    return fetch(location, { method: 'PATCH', headers: tus(key, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }), body });
  }

  /** A PATCH whose connection is cut after `sendBytes` of the body, as a dropped network would. */
  async function droppedPatch(location: string, offset: number, body: Buffer, sendBytes: number): Promise<void> {
    const req = request(location, { method: 'PATCH', headers: { ...tus(KEY_A, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }), 'content-length': String(body.length) } });
    req.on('error', () => undefined);
    req.flushHeaders();
    let sent = 0;
    while (sent < sendBytes) {
      const piece = body.subarray(sent, Math.min(sent + 64 * 1024, sendBytes));
      if (!req.write(piece)) await once(req, 'drain');
      sent += piece.length;
    }
    // Let the bytes reach intake before the cut.
    await new Promise<void>((resolve) => req.socket!.write('', () => resolve()));
    req.destroy();
  }

  it('resumes after a connection dropped mid-upload, from the whole chunks stored, and stores the blob only once it hashes to its address', async () => {
    const file = randomBytes(3 * 1024 * 1024 + 12_345);
    const sha256 = sha(file);
    const created = await create(KEY_A, sha256, file.length);
    expect(created.status).toBe(201);
    const location = created.headers.get('location')!;
    expect(location).toBe(`${url}/v1/uploads/${sha256}.${file.length}`);

    await droppedPatch(location, 0, file, 2_500_000);
    // Intake stores whole chunks as they fill: wait until it has taken what reached it.
    const chunk = 1024 * 1024 - 4096; // nats-server's max_payload (1 MiB) less room for headers (libs/blobs)
    let offset = 0;
    await until('the chunks sent before the cut to be stored', async () => {
      offset = Number((await head(KEY_A, location)).headers.get('upload-offset'));
      return offset === 2 * chunk;
    }, { timeoutMs: 10_000 }).catch((err: unknown) => {
      throw new Error(`offset ${offset}: ${String(err)}`);
    });
    expect(await blobs.exists('team-a', sha256)).toBe(false); // not visible before every byte is in and checked

    // The same upload, named by another team's key, is that team's own (none): it sees nothing of team a's.
    expect((await head(KEY_B, location)).status).toBe(404);
    expect((await patch(KEY_B, location, offset, file.subarray(offset))).status).toBe(404);
    expect((await fetch(location, { method: 'DELETE', headers: tus(KEY_B) })).status).toBe(404);
    // Team b may upload the same bytes into its own bucket, starting from zero: team a's chunks are not its to resume.
    const theirs = await create(KEY_B, sha256, file.length);
    expect(theirs.status).toBe(201);
    expect((await head(KEY_B, location)).headers.get('upload-offset')).toBe('0');
    expect((await patch(KEY_B, location, 0, randomBytes(chunk + 10))).status).toBe(204); // garbage into its own upload
    expect(Number((await head(KEY_A, location)).headers.get('upload-offset'))).toBe(offset);
    // A key that may not submit jobs may not upload either.
    expect((await create(KEY_A_AUDIT, sha256, file.length)).status).toBe(403);
    expect((await head('not-a-key-anyone-was-given-xxxx', location)).status).toBe(401);

    // Resuming from anywhere else is refused; from the offset intake gave, it completes.
    expect((await patch(KEY_A, location, 0, file)).status).toBe(409);
    const done = await patch(KEY_A, location, offset, file.subarray(offset));
    expect(done.status).toBe(204);
    expect(done.headers.get('upload-offset')).toBe(String(file.length));
    expect(done.headers.get('gpunet-sha256')).toBe(sha256);

    expect(await blobs.exists('team-a', sha256)).toBe(true);
    expect(await blobs.exists('team-b', sha256)).toBe(false);
    await blobs.downloadTo('team-a', sha256, join(dir, 'back.bin'), { size: file.length });
    expect(sha(await readFile(join(dir, 'back.bin')))).toBe(sha256);
    // The same object as a NATS upload: uploading the file over NATS finds it stored.
    await writeFile(join(dir, 'same.bin'), file);
    expect(await blobs.uploadFile('team-a', join(dir, 'same.bin'))).toMatchObject({ skipped: true, bytesSent: 0 });
    // Creating it again finds it complete: nothing to send.
    expect((await create(KEY_A, sha256, file.length)).status).toBe(201);
    expect((await head(KEY_A, location)).headers.get('upload-offset')).toBe(String(file.length));
    // A stored blob is not removed through the upload.
    expect((await fetch(location, { method: 'DELETE', headers: tus(KEY_A) })).status).toBeGreaterThanOrEqual(400);
    expect(await blobs.exists('team-a', sha256)).toBe(true);
  });

  it('keeps nothing when the bytes do not hash to the address the upload was created with (460)', async () => {
    const claimed = randomBytes(200_000);
    const sent = randomBytes(200_000);
    const created = await create(KEY_A, sha(claimed), claimed.length);
    const location = created.headers.get('location')!;
    const res = await patch(KEY_A, location, 0, sent);
    expect(res.status).toBe(460);
    expect(await res.text()).toContain('checksum_mismatch');
    expect(await blobs.exists('team-a', sha(claimed))).toBe(false);
    expect(await blobs.exists('team-a', sha(sent))).toBe(false);
    expect((await head(KEY_A, location)).status).toBe(404);
  });

  it('refuses an upload that does not name its blob, and bytes beyond its length', async () => {
    const noSha = await fetch(`${url}/v1/uploads`, { method: 'POST', headers: tus(KEY_A, { 'upload-length': '10' }) });
    expect(noSha.status).toBe(400);
    expect(await noSha.text()).toContain('sha256');
    const deferred = await fetch(`${url}/v1/uploads`, { method: 'POST', headers: tus(KEY_A, { 'upload-defer-length': '1', 'upload-metadata': `sha256 ${b64('a'.repeat(64))}` }) });
    expect(deferred.status).toBeGreaterThanOrEqual(400);
    const small = randomBytes(100);
    const location = (await create(KEY_A, sha(small), small.length)).headers.get('location')!;
    expect((await patch(KEY_A, location, 0, Buffer.concat([small, small]))).status).toBe(413);
    expect(await blobs.exists('team-a', sha(small))).toBe(false);
  });
});
