import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { BlobStore } from '#blobs';
import { connect } from '@nats-io/transport-node';
import { GpunetClient } from './client.js';
import { GpunetApiError, GpunetProtocolError, GpunetUnreachableError, OutputIntegrityError, WaitTimeoutError } from './errors.js';

/**
 * The client against a real HTTP server speaking intake's documented API (routes, bearer auth,
 * `{ error: { code, message, issues } }`), and against a real nats-server for uploads. The
 * server here is scripted per test: what the client must do with each answer is the subject.
 */

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const KEY = 'k'.repeat(32);
const SHA = (text: string) => createHash('sha256').update(text).digest('hex');
const NOW = '2025-06-01T12:00:00.000Z';

function jobView(state: string, updatedAt = NOW) {
  return {
    jobId: 'job_1',
    team: 'local',
    state,
    cancelRequested: false,
    spec: { work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} }, data: { inputs: [] }, request: { gpus: 1, timeLimitMs: 60_000, network: false }, outputs: { globs: ['**'] } },
    submittedAt: NOW,
    updatedAt,
    attempts: [],
    timeline: [{ type: 'JobSubmitted', at: NOW }],
  };
}

let server: Server;
let baseUrl: string;
let handler: Handler;
const seen: { method: string; url: string; auth?: string; idem?: string; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, idem: req.headers['idempotency-key'] as string | undefined, body });
      handler(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen.length = 0;
});

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const client = () => new GpunetClient({ baseUrl, apiKey: KEY, http: { retryDelayMs: 10 } });

describe('GpunetClient over HTTP', () => {
  it('submits with the bearer key and one idempotency key in header and body, and checks the reply', async () => {
    handler = (_req, res) => json(res, 201, { jobId: 'job_1', state: 'submitted', submittedAt: NOW, duplicate: false });
    const reply = await client().submit('work: { kind: script, script: { inline: "true" } }\nrequest: { gpus: 1, timeLimit: 1m }\n', { idempotencyKey: 'key-1' });
    expect(reply).toEqual({ jobId: 'job_1', state: 'submitted', submittedAt: NOW, duplicate: false });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/jobs', auth: `Bearer ${KEY}`, idem: 'key-1' });
    expect(JSON.parse(seen[0]!.body)).toEqual({ spec: { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } }, idempotencyKey: 'key-1' });
  });

  it('turns a 400 into a GpunetApiError with the field issues and their fixes, without retrying', async () => {
    handler = (_req, res) =>
      json(res, 400, { error: { code: 'validation_failed', message: 'invalid spec', retryable: false, issues: [{ path: 'request.gpus', message: 'must be ≥ 1', fix: 'write e.g. `gpus: 2`' }] } });
    const err = await client().submit({ work: {}, request: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpunetApiError);
    expect(err).toMatchObject({ status: 400, code: 'validation_failed', retryable: false, issues: [{ path: 'request.gpus', message: 'must be ≥ 1', fix: 'write e.g. `gpus: 2`' }] });
    expect(seen).toHaveLength(1);
  });

  it('retries a 503 on a safe request with the same idempotency key, then succeeds', async () => {
    let calls = 0;
    handler = (_req, res) => (++calls < 3 ? json(res, 503, { error: { code: 'transient', message: 'store busy', retryable: true } }) : json(res, 200, { jobId: 'job_1', state: 'submitted', submittedAt: NOW, duplicate: true }));
    const reply = await client().submit({ work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } });
    expect(reply.duplicate).toBe(true);
    expect(seen).toHaveLength(3);
    expect(new Set(seen.map((s) => s.idem)).size).toBe(1);
    expect(seen[0]!.idem).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('refuses an answer outside the contract, and a body that is not JSON, as protocol errors', async () => {
    handler = (_req, res) => json(res, 200, { jobId: 'job_1', state: 'dancing' });
    await expect(client().getJob('job_1')).rejects.toBeInstanceOf(GpunetProtocolError);
    handler = (_req, res) => res.writeHead(200).end('<html>');
    await expect(client().getJob('job_1')).rejects.toThrow(/not JSON/);
  });

  it('reports a port nobody listens on as unreachable, naming `gpunet up`', async () => {
    const probe = createServer();
    probe.listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const c = new GpunetClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY, http: { retries: 0 } });
    const err = await c.getJob('job_1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GpunetUnreachableError);
    expect((err as Error).message).toMatch(/ECONNREFUSED.*gpunet up/);
  });

  it('passes list filters as repeated `state` parameters', async () => {
    handler = (_req, res) => json(res, 200, { jobs: [], nextCursor: null });
    await client().listJobs({ state: ['running', 'placed'], limit: 20 });
    expect(seen[0]!.url).toBe('/v1/jobs?state=running&state=placed&limit=20');
  });

  function entry(position: number, type: string) {
    return { position: String(position), eventId: `e${position}`, type, jobId: 'job_1', team: 'local', data: { jobId: 'job_1' }, occurredAt: NOW, recordedAt: NOW, producer: 'intake', correlationId: 'c' };
  }
  const sse = (e: ReturnType<typeof entry>) => `id: ${e.position}\nevent: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`;

  it('follows the feed across a dropped connection from the last entry (Last-Event-ID), never yielding one twice', async () => {
    const all = [entry(3, 'JobSubmitted'), entry(7, 'InputsStaged'), entry(9, 'JobPlaced'), entry(12, 'JobEnded')];
    let connections = 0;
    handler = (req, res) => {
      connections += 1;
      const after = Number(req.headers['last-event-id'] ?? '0');
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (connections === 1) {
        // Two entries, the second cut in the middle: the connection drops.
        res.write(sse(all[0]!) + sse(all[1]!) + sse(all[2]!).slice(0, 20));
        setTimeout(() => res.destroy(), 20);
        return;
      }
      // The server sends from the position asked for; one already held is sent again to prove it is skipped.
      res.end(sse(all[1]!) + all.filter((e) => Number(e.position) > after).map(sse).join(''));
    };
    const seenEntries: string[] = [];
    const reconnects: string[] = [];
    for await (const e of client().feed({ jobId: 'job_1', reconnectDelayMs: 10, onReconnect: (after) => reconnects.push(after) })) seenEntries.push(`${e.position}:${e.type}`);
    expect(seenEntries).toEqual(['3:JobSubmitted', '7:InputsStaged', '9:JobPlaced', '12:JobEnded']);
    expect(reconnects).toEqual(['7']);
    expect(seen.map((r) => r.url)).toEqual(['/v1/feed?jobId=job_1', '/v1/feed?jobId=job_1']);
  });

  it('waits on the feed until JobEnded, reading the view once per event and reporting each change once', async () => {
    const states = ['submitted', 'staged', 'running', 'completed', 'completed'];
    let views = 0;
    handler = (req, res) => {
      if (req.url!.startsWith('/v1/feed')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end([entry(1, 'InputsStaged'), entry(2, 'JobStarted'), entry(3, 'ComputeReleased'), entry(4, 'JobEnded')].map(sse).join(''));
        return;
      }
      const state = states[Math.min(views, states.length - 1)]!;
      views += 1;
      json(res, 200, jobView(state, `2025-06-01T12:00:0${states.indexOf(state)}.000Z`));
    };
    const updates: string[] = [];
    const final = await client().waitFor('job_1', { onUpdate: (v) => updates.push(v.state) });
    expect(final.state).toBe('completed');
    expect(updates).toEqual(['submitted', 'staged', 'running', 'completed']);
    expect(seen.filter((r) => r.url === '/v1/jobs/job_1')).toHaveLength(5); // one before the feed, one per entry: no polling
  });

  it('gives up waiting after timeoutMs with the last state seen', async () => {
    handler = (req, res) => {
      if (!req.url!.startsWith('/v1/feed')) return json(res, 200, jobView('running'));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': keepalive\n\n'); // open, nothing new
    };
    const err = await client().waitFor('job_1', { timeoutMs: 150 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect(err).toMatchObject({ jobId: 'job_1', lastState: 'running' });
  });

  it('streams log lines from NDJSON as they arrive, with follow=1', async () => {
    handler = (req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify({ ts: NOW, stream: 'stdout', line: 'epoch 1', attemptId: 'job_1-a1' })}\n{"ts":"${NOW}","stream":"std`);
      setTimeout(() => res.end(`err","line":"warn","attemptId":"job_1-a1"}\n`), 30);
    };
    const lines = [];
    for await (const l of client().logs('job_1', { follow: true })) lines.push(`${l.stream}:${l.line}`);
    expect(lines).toEqual(['stdout:epoch 1', 'stderr:warn']);
    // A feed connection the previous test abandoned may still reach the server: look for this test's request.
    expect(seen.filter((r) => r.url.startsWith('/v1/jobs/job_1/logs')).map((r) => r.url)).toEqual(['/v1/jobs/job_1/logs?follow=1']);
  });

  it('downloads an output verified against its recorded sha256, and never leaves a wrong file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-sdk-dl-'));
    try {
      const content = 'model weights\n'.repeat(1000);
      let serve = content;
      handler = (req, res) => {
        if (req.url === '/v1/jobs/job_1/outputs') return json(res, 200, { jobId: 'job_1', stored: true, files: [{ path: 'model/w b.bin', sha256: SHA(content), size: content.length }], totalBytes: content.length, truncated: false });
        expect(req.url).toBe('/v1/jobs/job_1/outputs/model/w%20b.bin');
        res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(serve);
      };
      const progress: number[] = [];
      const done = await client().downloadOutputs('job_1', dir, { onProgress: (p) => progress.push(p.bytesDone) });
      expect(done).toEqual([{ path: 'model/w b.bin', dest: join(dir, 'model', 'w b.bin'), sha256: SHA(content), size: content.length }]);
      expect(await readFile(join(dir, 'model', 'w b.bin'), 'utf8')).toBe(content);
      expect(progress.at(-1)).toBe(content.length);

      serve = content.replace('model', 'MODEL');
      const dest = join(dir, 'again.bin');
      await expect(client().downloadOutput('job_1', 'model/w b.bin', dest)).rejects.toBeInstanceOf(OutputIntegrityError);
      await expect(readFile(dest)).rejects.toMatchObject({ code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('GpunetClient uploads inputs to a real nats-server', () => {
  let nats: TestNatsServer;
  let dir: string;
  beforeAll(async () => {
    nats = await startNatsServer();
    // The team's bucket is made with the team, by the control plane: the SDK never creates one.
    const nc = await connect({ servers: nats.url });
    await (await BlobStore.open(nc)).ensureBucket('local');
    await nc.close();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-sdk-up-'));
    await mkdir(join(dir, 'data', 'part'), { recursive: true });
    await writeFile(join(dir, 'data', 'part', 'a.csv'), 'x,y\n1,2\n');
    await writeFile(join(dir, 'data', 'b.csv'), 'x,y\n3,4\n');
    await writeFile(join(dir, 'train.sh'), '#!/bin/bash\necho hi\n');
  }, 30_000);
  afterAll(async () => {
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const JOB = `
work: { kind: script, script: { path: code/train.sh } }
data:
  inputs:
    - { name: dataset, path: dataset, from: ./data }
    - { name: code, path: code/train.sh, from: train.sh }
request: { gpus: 1, timeLimit: 1m }
`;

  it('uploads the `from:` inputs, fills in their addresses, and skips them the second time', async () => {
    const c = new GpunetClient({ baseUrl, apiKey: KEY, natsUrl: nats.url, team: 'local' });
    try {
      const uploaded: string[] = [];
      const first = await c.uploadInputs(JOB, dir, { onInput: (u) => uploaded.push(`${u.name}:${u.kind}:${u.skipped}`) });
      expect(uploaded).toEqual(['dataset:folder:false', 'code:file:false']);
      const inputs = (first.spec.data as { inputs: Record<string, unknown>[] }).inputs;
      expect(inputs[1]).toEqual({ name: 'code', path: 'code/train.sh', kind: 'file', sha256: SHA('#!/bin/bash\necho hi\n'), size: 20 });
      expect(inputs[0]).toMatchObject({ name: 'dataset', kind: 'folder', size: first.inputs[0]!.size });
      expect(first.inputs[0]).toMatchObject({ files: 2, totalBytes: 16 });

      const again = await c.uploadInputs(JOB, dir);
      expect(again.inputs.map((u) => [u.skipped, u.bytesUploaded])).toEqual([[true, 0], [true, 0]]);
      expect(again.spec).toEqual(first.spec);
    } finally {
      await c.close();
    }
  }, 30_000);

  it('names a missing `from:` path before uploading anything', async () => {
    const c = new GpunetClient({ baseUrl, apiKey: KEY, natsUrl: nats.url, team: 'local' });
    try {
      await expect(c.uploadInputs(JOB.replace('./data', './nope'), dir)).rejects.toMatchObject({
        code: 'validation_failed',
        issues: [expect.objectContaining({ path: 'data.inputs[0].from', message: expect.stringContaining('ENOENT') })],
      });
    } finally {
      await c.close();
    }
  }, 30_000);
});
