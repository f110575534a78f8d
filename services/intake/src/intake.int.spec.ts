/**
 * Intake booted in-process by the service kit against a real nats-server and a temporary SQLite
 * store, exercised over HTTP with `fetch` and over NATS request/reply. Other services' events
 * are appended to the store as those services would (their own streams, their producer name).
 */
import { BlobStore } from '#blobs';
import { Commands, GetCharges, GetChargesReply, LogLine, Queries, logSubject, type EventData, type EventType, type JobView } from '#contracts';
import type { EventStore } from '#event-store';
import { serveQuery } from '#messaging';
import { startService, type RunningService } from '#service-kit';
import { jetstream } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { keyDigest } from './auth/api-keys.js';
import { ROUTES } from './http/openapi.js';
import { intakeService } from './intake.service.js';

const KEY_A = 'key-of-team-a-producer-0000000001';
const KEY_A_AUDIT = 'key-of-team-a-compliance-00000002';
const KEY_B = 'key-of-team-b-producer-0000000003';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const spec = (gpus = 1) => ({ name: 'train', work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus, timeLimit: '1h' } });

describe('intake (HTTP + NATS, real nats-server and SQLite store)', () => {
  let nats: TestNatsServer;
  let dir: string;
  let svc: RunningService;
  let store: EventStore;
  let nc: NatsConnection;
  let url: string;

  const env = () => ({
    GPUNET_NATS_URL: nats.url,
    GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`,
    GPUNET_LOG_LEVEL: 'silent',
    GPUNET_HTTP_PORT: '0',
    GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml'),
    GPUNET_CONSOLE_DIR: join(dir, 'console'),
  });

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-intake-'));
    await writeFile(
      join(dir, 'keys.yaml'),
      [
        `- { id: ci-a, key: ${KEY_A}, team: team-a, role: producer, timeZone: Europe/Berlin }`,
        `- { id: audit-a, sha256: ${keyDigest(KEY_A_AUDIT)}, team: team-a, role: compliance }`,
        `- { id: ci-b, key: ${KEY_B}, team: team-b, role: producer }`,
      ].join('\n'),
    );
    await mkdir(join(dir, 'console', 'assets'), { recursive: true });
    await writeFile(join(dir, 'console', 'index.html'), '<!doctype html><title>console</title>');
    await writeFile(join(dir, 'console', 'assets', 'index-abc.js'), 'console.log(1)');
    await writeFile(join(dir, 'secret.txt'), 'not for the web');
    svc = await startService(intakeService({ env: env() }));
    store = svc.ctx.store;
    url = svc.httpUrl!;
    nc = await connect({ servers: nats.url });
  }, 30_000);

  afterAll(async () => {
    await nc?.close();
    await svc?.stop();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  // ── helpers ────────────────────────────────────────────────────────────────────────────

  async function http(path: string, init: { method?: string; key?: string | null; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key !== null) headers.authorization = `Bearer ${init.key ?? KEY_A}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${path}`, { method: init.method ?? 'GET', headers, ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}) });
    const text = await res.text();
    const json = res.headers.get('content-type')?.includes('application/json') ? (JSON.parse(text) as JsonBody) : undefined;
    return { status: res.status, headers: res.headers, text, json: json ?? {} };
  }

  async function submit(body: unknown = spec(), key = KEY_A, idempotencyKey?: string) {
    const res = await http('/v1/jobs', { method: 'POST', key, body, ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}) });
    return res;
  }

  async function submitted(body: unknown = spec(), key = KEY_A): Promise<string> {
    const res = await submit(body, key);
    expect(res.status).toBe(201);
    return res.json.jobId as string;
  }

  /** Appends an event as another service would: to its own stream, under its producer name. */
  async function record<T extends EventType>(producer: string, streamId: string, type: T, data: EventData<T>, team = (data as { team?: string }).team ?? 'team-a'): Promise<bigint> {
    const jobId = (data as { jobId?: string }).jobId;
    const result = await store.appendToStream(streamId, [
      { eventId: randomUUID(), type, data, metadata: { correlationId: randomUUID(), causationId: randomUUID(), producer, occurredAt: new Date().toISOString(), team, ...(jobId ? { jobId } : {}) } },
    ]);
    return result.position;
  }

  async function view(jobId: string, until: (v: JobView) => boolean = () => true): Promise<JobView> {
    const end = Date.now() + 5_000;
    for (;;) {
      const res = await http(`/v1/jobs/${jobId}`);
      if (res.status === 200 && until(res.json as JobView)) return res.json as JobView;
      if (Date.now() > end) throw new Error(`job ${jobId} did not reach the expected view: ${res.text}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const now = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();
  const staged = (jobId: string) => record('storage', `storage-job-${jobId}`, 'InputsStaged', { jobId, inputs: [], totalBytes: 0, stagedAt: now() });
  const withdrawn = (jobId: string, team = 'team-a') => record('placement', `placement-job-${jobId}`, 'JobWithdrawn', { jobId, team, outcome: 'cancelled', withdrawnAt: now() });

  const ended = (jobId: string, outcome: EventData<'JobEnded'>['outcome'] = 'completed', team = 'team-a') =>
    record('ledger', `ledger-job-${jobId}`, 'JobEnded', { jobId, team, outcome, attempts: 0, billed: { billableMs: 0, totals: [] }, outputs: null, endedAt: now() });

  /** Reads an SSE response's events until `stop` says so (or the stream ends). */
  async function sseEvents(res: Response, stop: (events: { id: string; event: string; data: JsonBody }[]) => boolean) {
    const events: { id: string; event: string; data: JsonBody }[] = [];
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const field = (name: string) => block.split('\n').find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        if (field('data') !== undefined) events.push({ id: field('id')!, event: field('event')!, data: JSON.parse(field('data')!) as JsonBody });
      }
      if (stop(events)) break;
    }
    await reader.cancel().catch(() => undefined);
    return events;
  }

  async function jobSubmittedCount(): Promise<number> {
    return (await store.readAll({ maxCount: 100_000, filter: { types: ['JobSubmitted'] } })).length;
  }

  // ── auth ───────────────────────────────────────────────────────────────────────────────

  it('401 without a key or with an unknown one, saying how to pass one; health and the document are open', async () => {
    for (const key of [null, 'not-a-key-anyone-was-given-xxxx']) {
      const res = await http('/v1/jobs', { key });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="gpunet"');
      expect(res.json.error).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('Authorization: Bearer <key>') });
    }
    expect((await http('/healthz', { key: null })).json).toMatchObject({ status: 'ok' });
    expect((await http('/openapi.json', { key: null })).json).toMatchObject({ openapi: '3.1.0' });
    expect((await http('/v1/nothing-here')).json.error.code).toBe('not_found');
  });

  it('serves every route the OpenAPI document lists', async () => {
    for (const route of ROUTES) {
      const [method, path] = route.split(' ') as [string, string];
      // A stream (the feed) would stay open: ask it for what it refuses at once.
      const streams: Record<string, string> = { '/v1/feed': '/v1/feed?after=not-a-position' };
      const res = await http(streams[path] ?? path.replace('{jobId}', 'job_unknown').replace('{path}', 'a/b.bin'), { method, ...(method === 'POST' ? { body: {} } : {}) });
      // Nest answers an unknown route "Cannot <METHOD> <path>"; a served route answers for itself (here mostly: no such job).
      expect([route, res.json.error?.message ?? '']).toEqual([route, expect.not.stringMatching(/^Cannot /)]);
    }
  });

  it('403 for another team\'s job, and for an action the key\'s role may not do', async () => {
    const jobId = await submitted();
    const other = await http(`/v1/jobs/${jobId}`, { key: KEY_B });
    expect(other.status).toBe(403);
    expect(other.json.error.code).toBe('forbidden');
    expect((await http(`/v1/jobs/${jobId}/events`, { key: KEY_B })).status).toBe(403);
    expect((await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST', key: KEY_B })).status).toBe(403);
    // Compliance reads, but may not submit or cancel.
    expect((await http(`/v1/jobs/${jobId}`, { key: KEY_A_AUDIT })).status).toBe(200);
    expect((await submit(spec(), KEY_A_AUDIT)).status).toBe(403);
    expect((await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST', key: KEY_A_AUDIT })).status).toBe(403);
    // Team B does not see team A's jobs in its list.
    expect((await http('/v1/jobs', { key: KEY_B })).json.jobs.map((j: { jobId: string }) => j.jobId)).not.toContain(jobId);
  });

  it('serves the console: its assets, the page itself for any other path below /console, nothing outside its directory', async () => {
    const page = await http('/console', { key: null });
    expect([page.status, page.text]).toEqual([200, '<!doctype html><title>console</title>']);
    expect((await http('/console/jobs/job_123', { key: null })).text).toContain('<title>console</title>');
    const asset = await http('/console/assets/index-abc.js', { key: null });
    expect([asset.status, asset.text, asset.headers.get('cache-control')]).toEqual([200, 'console.log(1)', 'public, max-age=31536000, immutable']);
    for (const attack of ['/console/..%2fsecret.txt', '/console/assets/..%2f..%2fsecret.txt', '/console/%2e%2e/secret.txt']) {
      const res = await http(attack, { key: null });
      expect([attack, res.text]).not.toEqual([attack, expect.stringContaining('not for the web')]);
    }
  });

  it('who a key is, and the record of audit queries for compliance only (a producer is refused, recorded nowhere)', async () => {
    expect((await http('/v1/whoami')).json).toMatchObject({ keyId: 'ci-a', team: 'team-a', role: 'producer', actions: expect.arrayContaining(['jobs:submit']) });
    expect((await http('/v1/whoami', { key: KEY_A_AUDIT })).json).toMatchObject({ role: 'compliance', actions: expect.arrayContaining(['audit:read-all-teams']) });
    expect((await http('/v1/whoami', { key: null })).status).toBe(401);
    for (const key of [KEY_A, KEY_B]) {
      const refused = await http('/v1/audit/queries', { key });
      expect(refused.status).toBe(403);
      expect(refused.json.error.message).toMatch(/needs a key with role compliance/);
    }
    const record = await http('/v1/audit/queries', { key: KEY_A_AUDIT });
    expect(record.status).toBe(200);
    expect(record.json.queries).toEqual(expect.any(Array));
    expect((await http('/v1/audit/queries?limit=0', { key: KEY_A_AUDIT })).json.error.issues[0]).toMatchObject({ path: 'limit' });
    // The chain's status: compliance and billing; a producer is refused before the ledger is asked.
    expect((await http('/v1/audit/chain')).json.error).toMatchObject({ code: 'forbidden' });
    expect((await http('/v1/audit/chain?full=yes', { key: KEY_A_AUDIT })).json.error.issues[0]).toMatchObject({ path: 'full', fix: expect.stringContaining('full=true') });
  });

  it('lists another team\'s jobs, or every team\'s grouped by team, for compliance only: a producer naming another team is refused, over HTTP and NATS', async () => {
    const a = await submitted();
    const b = await submitted(spec(), KEY_B);
    // Attack: team A's producer key asks for team B's jobs, or every team's, in every spelling.
    for (const query of ['team=team-b', 'allTeams=true', 'allTeams=true&team=team-a', 'team=team-b&allTeams=false']) {
      const refused = await http(`/v1/jobs?${query}`);
      expect([query, refused.status]).toEqual([query, 403]);
      expect(refused.json.error.message).toMatch(/may not list .*role compliance/);
      expect(refused.text).not.toContain(b);
    }
    expect(await overNats(Queries.ListJobs.subject, { team: 'team-b', limit: 50 })).toMatchObject({ ok: false, error: { code: 'forbidden', message: expect.stringContaining('may not list the jobs of team team-b') } });
    expect(await overNats(Queries.ListJobs.subject, { allTeams: true, limit: 50 }, KEY_B)).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    // Its own team by name is its own list.
    expect((await http('/v1/jobs?team=team-a&limit=500')).json.jobs.map((j: { jobId: string }) => j.jobId)).toContain(a);
    expect((await http('/v1/jobs?allTeams=maybe')).json.error.issues[0]).toMatchObject({ path: 'allTeams', fix: expect.stringContaining('allTeams=true') });
    // Compliance: team B's jobs, and every team's with the counts per team.
    const ofB = (await http('/v1/jobs?team=team-b&limit=500', { key: KEY_A_AUDIT })).json;
    expect(ofB.jobs.map((j: { jobId: string; team: string }) => j.jobId)).toContain(b);
    expect(ofB.jobs.map((j: { jobId: string }) => j.jobId)).not.toContain(a);
    const every = (await http('/v1/jobs?allTeams=true&limit=500', { key: KEY_A_AUDIT })).json;
    expect(every.jobs.map((j: { jobId: string }) => j.jobId)).toEqual(expect.arrayContaining([a, b]));
    const teams = Object.fromEntries(every.countsByTeam.map((c: { team: string; count: number }) => [c.team, c.count]));
    expect(teams['team-a']).toBeGreaterThanOrEqual(1);
    expect(teams['team-b']).toBeGreaterThanOrEqual(1);
    const onlyB = (await http('/v1/jobs?allTeams=true&team=team-b&limit=500', { key: KEY_A_AUDIT })).json;
    expect(onlyB.jobs.map((j: { jobId: string }) => j.jobId)).not.toContain(a);
    expect(onlyB.countsByTeam).toEqual(every.countsByTeam);
  });

  it('opens another team\'s job for compliance only, recorded by the ledger as an audit query first; its logs and output bytes stay the team\'s', async () => {
    const b = await submitted(spec(), KEY_B);
    // Attack: team A's producer key reads team B's job, its events, its outputs.
    for (const path of [`/v1/jobs/${b}`, `/v1/jobs/${b}/events`, `/v1/jobs/${b}/outputs`]) expect([path, (await http(path)).status]).toEqual([path, 403]);
    // Compliance: no ledger answering, no read (it must be recorded first).
    expect((await http(`/v1/jobs/${b}`, { key: KEY_A_AUDIT })).status).toBe(503);
    const asked: unknown[] = [];
    const ledger = serveQuery(nc, Queries.AuditJob.subject, { request: Queries.AuditJob.schema, response: Queries.AuditJob.replySchema }, (req) => {
      asked.push(req);
      return { job: null, asOfPosition: '1', recordedAs: randomUUID() };
    });
    await nc.flush();
    try {
      const view = await http(`/v1/jobs/${b}`, { key: KEY_A_AUDIT });
      expect([view.status, view.json.team]).toEqual([200, 'team-b']);
      expect((await http(`/v1/jobs/${b}/events`, { key: KEY_A_AUDIT })).json.events[0]).toMatchObject({ type: 'JobSubmitted' });
      expect((await http(`/v1/jobs/${b}/outputs`, { key: KEY_A_AUDIT })).status).toBe(200);
      expect(asked).toEqual([1, 2, 3].map(() => ({ requester: expect.objectContaining({ team: 'team-a', role: 'compliance', allTeams: true }), jobId: b })));
      // Its own team's job needs no audit record.
      expect((await http(`/v1/jobs/${await submitted()}`, { key: KEY_A_AUDIT })).status).toBe(200);
      expect(asked).toHaveLength(3);
      // The bytes are not facts: logs and output files stay team B's.
      expect((await http(`/v1/jobs/${b}/logs`, { key: KEY_A_AUDIT })).status).toBe(403);
      expect((await http(`/v1/jobs/${b}/outputs/anything.bin`, { key: KEY_A_AUDIT })).status).toBe(403);
    } finally {
      ledger.unsubscribe();
    }
  });

  it('filters the jobs list and counts per state over every filter but the state; a bad filter names its parameter', async () => {
    const jobId = await submitted();
    const all = await http('/v1/jobs?limit=1');
    expect(all.json.countsByState.reduce((n: number, c: { count: number }) => n + c.count, 0)).toBeGreaterThanOrEqual(1);
    expect((await http(`/v1/jobs?submittedFrom=${encodeURIComponent('2999-01-01T00:00:00Z')}`)).json.jobs).toEqual([]);
    expect((await http('/v1/jobs?nodeId=node-nowhere')).json).toMatchObject({ jobs: [], countsByState: [] });
    expect((await http('/v1/jobs?limit=500')).json.jobs.map((j: { jobId: string }) => j.jobId)).toContain(jobId);
    // Team B's list and counts never include team A's job.
    expect((await http('/v1/jobs?limit=500', { key: KEY_B })).json.jobs.map((j: { jobId: string }) => j.jobId)).not.toContain(jobId);
    const bad = await http('/v1/jobs?outcome=exploded&submittedTo=yesterday');
    expect(bad.status).toBe(400);
    expect(bad.json.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(['outcome', 'submittedTo']);
  });

  // ── submit ─────────────────────────────────────────────────────────────────────────────

  it('400 names each bad field and its fix, and writes no event', async () => {
    const before = await jobSubmittedCount();
    const res = await submit({ work: { kind: 'script', script: { inline: 'x' } }, request: { gpus: 0, timeLimit: 'forever', gpu: 'A100' } });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('validation_failed');
    const issues = res.json.error.issues as { path: string; message: string; fix: string }[];
    expect(issues.map((i) => i.path).sort()).toEqual(['request.gpu', 'request.gpus', 'request.timeLimit']);
    for (const i of issues) expect(i.fix).toEqual(expect.any(String));
    expect((await submit('{not json')).json.error).toMatchObject({ code: 'validation_failed', issues: [{ path: '' }] });
    expect((await submit({ spec: spec(), idempotencyKey: 'has spaces in it' })).json.error.issues[0].path).toBe('idempotencyKey');
    expect(await jobSubmittedCount()).toBe(before);
  });

  it('submits a bare spec or a SubmitJob, 201, and the job reads back at once (read-your-writes)', async () => {
    const res = await submit({ spec: spec(2) });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/v1/jobs/${res.json.jobId}`);
    expect(res.json).toMatchObject({ jobId: expect.stringMatching(/^job_[0-9a-f]{32}$/), state: 'submitted', duplicate: false });
    const got = await http(`/v1/jobs/${res.json.jobId}`);
    expect(got.status).toBe(200);
    expect(got.json).toMatchObject({ jobId: res.json.jobId, team: 'team-a', name: 'train', state: 'submitted', spec: { request: { gpus: 2, timeLimitMs: 3_600_000 } } });
    const [event] = await store.readStream(`intake-job-${res.json.jobId}`);
    expect(event).toMatchObject({ type: 'JobSubmitted', data: { team: 'team-a', submittedBy: 'ci-a' }, metadata: { producer: 'intake', jobId: res.json.jobId, team: 'team-a' } });
    expect((await http('/v1/jobs/job_doesnotexist')).status).toBe(404);
    expect((await http('/v1/jobs/not.an.id')).json.error.issues[0].path).toBe('jobId');
  });

  it('is idempotent on Idempotency-Key: same key and spec → same job (200, duplicate); another spec → 409; one event', async () => {
    const key = `retry-${randomUUID()}`;
    const first = await submit(spec(), KEY_A, key);
    expect(first.status).toBe(201);
    const again = await submit(spec(), KEY_A, key);
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ ...first.json, duplicate: true });
    // The same key through the body is the same key.
    expect((await submit({ spec: spec(), idempotencyKey: key })).json).toMatchObject({ jobId: first.json.jobId, duplicate: true });
    const conflict = await submit(spec(4), KEY_A, key);
    expect(conflict.status).toBe(409);
    expect(conflict.json.error).toMatchObject({ code: 'idempotency_conflict', message: expect.stringContaining('different spec') });
    // Another team's same key is another job.
    expect((await submit(spec(), KEY_B, key)).json.jobId).not.toBe(first.json.jobId);
    expect(await store.readStream(`intake-job-${first.json.jobId}`)).toHaveLength(1);
  });

  it('concurrent retries with one key create one job', async () => {
    const key = `burst-${randomUUID()}`;
    const answers = await Promise.all(Array.from({ length: 6 }, () => submit(spec(), KEY_A, key)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 201]);
    expect(new Set(answers.map((a) => a.json.jobId)).size).toBe(1);
    expect(await store.readStream(`intake-job-${answers[0]!.json.jobId}`)).toHaveLength(1);
  });

  // ── views, list, cancel, timeline ───────────────────────────────────────────────────────

  it('follows other services\' events into the view, and lists by state with paging', async () => {
    const [j1, j2, j3] = [await submitted(), await submitted(), await submitted()];
    await staged(j1);
    await staged(j3);
    await view(j3, (v) => v.state === 'staged');
    const stagedList = await http('/v1/jobs?state=staged&limit=500');
    const ids = stagedList.json.jobs.map((j: { jobId: string }) => j.jobId);
    expect(ids.indexOf(j3)).toBeLessThan(ids.indexOf(j1)); // newest first
    expect(ids).not.toContain(j2);
    expect(stagedList.json.jobs.every((j: { state: string }) => j.state === 'staged')).toBe(true);
    expect((await http('/v1/jobs?state=staged,submitted&limit=500')).json.jobs.map((j: { jobId: string }) => j.jobId)).toEqual(expect.arrayContaining([j1, j2, j3]));

    const page1 = await http('/v1/jobs?limit=2');
    expect(page1.json.jobs.map((j: { jobId: string }) => j.jobId)).toEqual([j3, j2]);
    const page2 = await http(`/v1/jobs?limit=2&cursor=${encodeURIComponent(page1.json.nextCursor)}`);
    expect(page2.json.jobs[0].jobId).toBe(j1);
    expect((await http('/v1/jobs?state=nope')).json.error.issues[0]).toMatchObject({ path: 'state', fix: expect.any(String) });
  });

  it('cancels: JobCancelRequested once; again changes nothing; an ended job is left as it is', async () => {
    const jobId = await submitted();
    const res = await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST', body: { reason: 'wrong data' } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ jobId, state: 'submitted', cancelRequested: true });
    expect((await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST' })).json.cancelRequested).toBe(true);
    const events = await store.readStream(`intake-job-${jobId}`);
    expect(events.map((e) => e.type)).toEqual(['JobSubmitted', 'JobCancelRequested']);
    expect(events[1]!.data).toMatchObject({ reason: 'wrong data', requestedBy: 'ci-a', team: 'team-a' });
    expect((await view(jobId)).cancelRequested).toBe(true);

    await withdrawn(jobId);
    await view(jobId, (v) => v.state === 'cancelled');
    const ended = await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST' });
    expect(ended.json).toEqual({ jobId, state: 'cancelled', cancelRequested: false });
    expect(await store.readStream(`intake-job-${jobId}`)).toHaveLength(2);
    expect((await http('/v1/jobs/job_nope/cancel', { method: 'POST' })).status).toBe(404);
    expect((await http(`/v1/jobs/${jobId}/cancel`, { method: 'POST', body: { reason: 'x'.repeat(501) } })).json.error.issues[0].path).toBe('reason');
  });

  it('shows the timeline: every event of the job from every service, in store order, with producer and time', async () => {
    const jobId = await submitted();
    await staged(jobId);
    const attemptId = `${jobId}-a1`;
    await record('placement', `placement-job-${jobId}`, 'JobPlaced', { jobId, attemptId, attempt: 1, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', placedAt: now() });
    await record('execution', `execution-node-1-attempt-${attemptId}`, 'ComputeHeld', { jobId, attemptId, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: now() });
    await record('execution', `execution-node-1-attempt-${attemptId}`, 'JobStarted', { jobId, attemptId, nodeId: 'node-1', startedAt: now() });
    const v = await view(jobId, (x) => x.state === 'running');
    expect(v.attempts).toEqual([expect.objectContaining({ attemptId, nodeId: 'node-1', heldAt: expect.any(String), startedAt: expect.any(String) })]);
    const res = await http(`/v1/jobs/${jobId}/events`);
    expect(res.status).toBe(200);
    const events = res.json.events as { type: string; producer: string; position: string; at: string; data: { jobId: string } }[];
    expect(events.map((e) => [e.type, e.producer])).toEqual([
      ['JobSubmitted', 'intake'],
      ['InputsStaged', 'storage'],
      ['JobPlaced', 'placement'],
      ['ComputeHeld', 'execution'],
      ['JobStarted', 'execution'],
    ]);
    const positions = events.map((e) => BigInt(e.position));
    expect([...positions].sort((a, b) => (a < b ? -1 : 1))).toEqual(positions);
    for (const e of events) expect(e.data.jobId).toBe(jobId);
    expect(v.timeline.map((t) => t.type)).toEqual(events.map((e) => e.type));
  });

  // ── logs, outputs, charges ───────────────────────────────────────────────────────────────

  it('serves logs from JetStream as NDJSON or text, and follows them until the job ends', async () => {
    const jobId = await submitted();
    const js = jetstream(nc);
    const line = (n: number, stream: 'stdout' | 'stderr' = 'stdout'): LogLine => ({ ts: '2025-06-01T12:00:00.000Z', stream, line: `line ${n}`, attemptId: `${jobId}-a1` });
    expect((await http(`/v1/jobs/${jobId}/logs`)).text).toBe('');
    await record('placement', `placement-job-${jobId}`, 'JobPlaced', { jobId, attemptId: `${jobId}-a1`, attempt: 1, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', placedAt: now() });
    await view(jobId, (v) => v.attempts.length === 1);
    for (const n of [1, 2]) await js.publish(logSubject('team-a', jobId, 'node-1'), JSON.stringify(line(n)));
    await js.publish(logSubject('team-a', jobId, 'node-1'), 'not a log line');
    // Another node writing into this job's log (it may publish on gpunet.logs.*.*.node-2): dropped.
    await js.publish(logSubject('team-a', jobId, 'node-2'), JSON.stringify({ ...line(9), line: 'forged by node-2' }));
    await js.publish(logSubject('team-a', jobId, 'node-1'), JSON.stringify(line(3, 'stderr')));

    const nd = await http(`/v1/jobs/${jobId}/logs`);
    expect(nd.headers.get('content-type')).toContain('application/x-ndjson');
    expect(nd.text.trimEnd().split('\n').map((l) => JSON.parse(l))).toEqual([line(1), line(2), line(3, 'stderr')]);
    const text = await http(`/v1/jobs/${jobId}/logs`, { headers: { accept: 'text/plain' } });
    // In the key's time zone (Europe/Berlin, UTC+2 in June).
    expect(text.text.split('\n')[0]).toBe('2025-06-01 14:00:00.000 stdout line 1');

    const following = fetch(`${url}/v1/jobs/${jobId}/logs?follow=1`, { headers: { authorization: `Bearer ${KEY_A}` } });
    const res = await following;
    expect(res.status).toBe(200);
    const body = res.text();
    await js.publish(logSubject('team-a', jobId, 'node-1'), JSON.stringify(line(4)));
    await new Promise((r) => setTimeout(r, 100));
    await withdrawn(jobId);
    await ended(jobId, 'cancelled'); // following ends on the job's JobEnded
    const lines = (await body).trimEnd().split('\n').map((l) => (JSON.parse(l) as LogLine).line);
    expect(lines).toEqual(['line 1', 'line 2', 'line 3', 'line 4']);
    expect((await http(`/v1/jobs/${jobId}/logs`, { key: KEY_B })).status).toBe(403);
  });

  it('lists stored outputs and streams one from the object store, verified', async () => {
    const jobId = await submitted();
    expect((await http(`/v1/jobs/${jobId}/outputs`)).json).toEqual({ jobId, stored: false, files: [], totalBytes: 0, truncated: false, rejected: [] });
    const blobs = await BlobStore.open(nc);
    const bytes = new TextEncoder().encode('weights '.repeat(1000));
    const blob = await blobs.uploadBytes('team-a', bytes);
    const files = [
      { path: 'model/weights.bin', sha256: blob.sha256, size: blob.size },
      { path: 'model/w b.bin', sha256: blob.sha256, size: blob.size },
    ];
    const rejected = [{ path: 'bad\\nname.txt', reason: 'invalid_name' as const, message: 'bad\\nname.txt was not kept: its name holds a control character' }];
    await record('storage', `storage-job-${jobId}`, 'OutputsStored', { jobId, attemptId: `${jobId}-a1`, files, totalBytes: 2 * blob.size, truncated: false, rejected, logs: [], storedAt: now() });
    await view(jobId, (v) => v.outputs !== undefined);
    expect((await http(`/v1/jobs/${jobId}/outputs`)).json).toEqual({ jobId, stored: true, files, totalBytes: 2 * blob.size, truncated: false, rejected });

    const res = await fetch(`${url}/v1/jobs/${jobId}/outputs/model/weights.bin`, { headers: { authorization: `Bearer ${KEY_A}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBe(`"${blob.sha256}"`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    // Path segments arrive encoded, as the SDK sends them.
    const spaced = await fetch(`${url}/v1/jobs/${jobId}/outputs/model/w%20b.bin`, { headers: { authorization: `Bearer ${KEY_A}` } });
    expect(spaced.status).toBe(200);
    expect((await spaced.arrayBuffer()).byteLength).toBe(blob.size);
    expect((await http(`/v1/jobs/${jobId}/outputs/model/other.bin`)).status).toBe(404);
    expect((await http(`/v1/jobs/${jobId}/outputs/model/weights.bin`, { key: KEY_B })).status).toBe(403);
  });

  it('asks the ledger for the team\'s charges over HTTP and NATS; 503 with Retry-After while no ledger answers', async () => {
    const down = await http('/v1/charges');
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
    const asked: unknown[] = [];
    const ledger = serveQuery(nc, Queries.GetCharges.subject, { request: GetCharges, response: GetChargesReply }, (req) => {
      asked.push(req);
      return { team: (req as { principal: { team: string } }).principal.team, lines: [], totals: [], billableMs: 0 };
    });
    await nc.flush();
    try {
      const res = await http('/v1/charges?jobId=job_123&team=team-b');
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ team: 'team-a', lines: [], totals: [], billableMs: 0 });
      // The principal comes from the key, never from the query.
      expect(asked).toEqual([{ principal: { keyId: 'ci-a', team: 'team-a', role: 'producer', allTeams: false }, jobId: 'job_123' }]);
      expect((await http('/v1/charges?from=yesterday')).json.error.issues[0].path).toBe('from');
      // Over NATS: ListCharges, the same answer, the principal again from the key.
      asked.length = 0;
      expect(await overNats(Queries.ListCharges.subject, { jobId: 'job_123' })).toEqual({ ok: true, data: { team: 'team-a', lines: [], totals: [], billableMs: 0 } });
      expect(asked).toEqual([{ principal: { keyId: 'ci-a', team: 'team-a', role: 'producer', allTeams: false }, jobId: 'job_123' }]);
      expect(await overNats(Queries.ListCharges.subject, { team: 'team-b' })).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [expect.objectContaining({ message: expect.stringContaining('unknown field `team`') })] } });
      expect(await overNats(Queries.ListCharges.subject, {}, null)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });
      // A request of a schema version the subject does not accept is refused, naming the header and the versions accepted.
      const v2 = await overNats(Queries.ListCharges.subject, {}, KEY_A, { 'Gpunet-Schema-Version': '2' });
      expect(v2).toMatchObject({ ok: false, error: { code: 'unsupported_schema_version', message: 'Gpunet-Schema-Version "2" is not accepted for ListCharges: accepted version 1' } });
      expect(v2.error!.issues).toEqual([expect.objectContaining({ path: 'Gpunet-Schema-Version' })]);
    } finally {
      ledger.unsubscribe();
    }
  });

  // ── NATS command API ───────────────────────────────────────────────────────────────────

  async function overNats(subject: string, body: unknown, key: string | null = KEY_A, extra: Record<string, string> = {}) {
    const h = natsHeaders();
    if (key !== null) h.set('Authorization', `Bearer ${key}`);
    for (const [k, v] of Object.entries(extra)) h.set(k, v);
    const msg = await nc.request(subject, JSON.stringify(body), { timeout: 5_000, headers: h });
    return msg.json<{ ok: boolean; data?: JsonBody; error?: { code: string; message: string; issues?: { path: string; fix?: string }[] } }>();
  }

  it('takes the same commands and queries on NATS, with the same auth and schemas', async () => {
    expect(await overNats(Commands.SubmitJob.subject, { spec: spec() }, null)).toMatchObject({ ok: false, error: { code: 'unauthorized', message: expect.stringContaining('Authorization: Bearer') } });
    const bad = await overNats(Commands.SubmitJob.subject, { spec: { ...spec(), request: { gpus: 0, timeLimit: '1h' } } });
    expect(bad).toMatchObject({ ok: false, error: { code: 'validation_failed' } });
    expect(bad.error!.issues!.map((i) => i.path)).toEqual(['spec.request.gpus']);

    const key = `nats-${randomUUID()}`;
    const created = await overNats(Commands.SubmitJob.subject, { spec: spec() }, KEY_A, { 'Idempotency-Key': key });
    expect(created).toMatchObject({ ok: true, data: { state: 'submitted', duplicate: false } });
    const jobId = created.data!.jobId as string;
    // The same key over HTTP finds the same job: one code path.
    expect((await submit(spec(), KEY_A, key)).json).toMatchObject({ jobId, duplicate: true });
    expect(await overNats(Commands.SubmitJob.subject, { spec: spec(3), idempotencyKey: key })).toMatchObject({ ok: false, error: { code: 'idempotency_conflict' } });

    expect(await overNats(Queries.GetJob.subject, { jobId })).toMatchObject({ ok: true, data: { jobId, team: 'team-a', state: 'submitted' } });
    expect(await overNats(Queries.GetJob.subject, { jobId }, KEY_B)).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect(await overNats(Queries.GetJob.subject, { jobId: 'job_missing' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    const list = await overNats(Queries.ListJobs.subject, { states: ['submitted'], limit: 500 });
    expect(list.ok).toBe(true);
    expect(list.data!.jobs.map((j: { jobId: string }) => j.jobId)).toContain(jobId);
    expect(await overNats(Queries.ListJobs.subject, { limit: 0 })).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'limit' }] } });

    expect(await overNats(Commands.CancelJob.subject, { jobId, reason: 'over NATS' }, KEY_A_AUDIT)).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect(await overNats(Commands.CancelJob.subject, { jobId, reason: 'over NATS' })).toEqual({ ok: true, data: { jobId, state: 'submitted', cancelRequested: true } });
    expect((await http(`/v1/jobs/${jobId}`)).json.cancelRequested).toBe(true);
  });

  it('refuses at submit, over HTTP and NATS, what a node would refuse: an input path naming the inputs directory, a platform variable, a NUL in a value', async () => {
    const before = await jobSubmittedCount();
    const input = (path: string) => ({ name: 'ds', path, sha256: 'a'.repeat(64), size: 10 });
    const cases: { spec: unknown; field: string; says: RegExp }[] = [
      ...['.', './', '', '/', 'a/..', '/data'].map((path) => ({ spec: { ...spec(), data: { inputs: [input(path)] } }, field: 'data.inputs[0].path', says: /inputs directory itself|relative path without `\.\.`/ })),
      { spec: { ...spec(), work: { kind: 'script', script: { inline: 'true' }, env: { NVIDIA_VISIBLE_DEVICES: 'all' } } }, field: 'work.env.NVIDIA_VISIBLE_DEVICES', says: /agent sets/ },
      { spec: { ...spec(), work: { kind: 'container', image: 'busybox', env: { GPUNET_JOB_ID: 'x' } } }, field: 'work.env.GPUNET_JOB_ID', says: /agent sets/ },
      { spec: { ...spec(), work: { kind: 'script', script: { inline: 'true' }, env: { SEED: '4\u00002' } } }, field: 'work.env.SEED', says: /NUL/ },
    ];
    for (const c of cases) {
      const res = await submit(c.spec);
      expect({ field: c.field, status: res.status, code: res.json.error?.code }).toEqual({ field: c.field, status: 400, code: 'validation_failed' });
      const issue = (res.json.error.issues as { path: string; message: string; fix?: string }[]).find((i) => i.path === c.field);
      expect({ field: c.field, message: issue?.message, fix: typeof issue?.fix }).toEqual({ field: c.field, message: expect.stringMatching(c.says), fix: 'string' });
      const nats = await overNats(Commands.SubmitJob.subject, { spec: c.spec });
      expect({ field: c.field, ok: nats.ok, code: nats.error?.code }).toEqual({ field: c.field, ok: false, code: 'validation_failed' });
      expect({ field: c.field, issues: nats.error!.issues }).toEqual({ field: c.field, issues: expect.arrayContaining([expect.objectContaining({ path: `spec.${c.field}`, fix: expect.any(String) })]) });
    }
    expect(await jobSubmittedCount()).toBe(before);
  });

  // ── the team feed ──────────────────────────────────────────────────────────────────────

  it('streams the team\'s own jobs\' events as SSE, from a position, resumable with Last-Event-ID, live, never another team\'s', async () => {
    const mine = await submitted();
    const theirs = await submitted(spec(), KEY_B);
    await staged(mine);
    await record('storage', `storage-job-${theirs}`, 'InputsStaged', { jobId: theirs, inputs: [], totalBytes: 0, stagedAt: now() }, 'team-b');
    // Not for a team to see: the recorder's refusal of a node report about its job.
    await record('execution', 'execution-refusals', 'NodeReportRefused', { nodeId: 'n1', reason: 'not_placed', detail: 'never placed there', jobId: mine, refusedAt: now() });
    await view(mine, (v) => v.state === 'staged');

    const open = (headers: Record<string, string> = {}, query = '') => fetch(`${url}/v1/feed${query}`, { headers: { authorization: `Bearer ${KEY_A}`, ...headers } });
    const first = await open();
    expect(first.headers.get('content-type')).toContain('text/event-stream');
    const caughtUp = await sseEvents(first, (ev) => ev.some((e) => e.data.jobId === mine && e.event === 'InputsStaged'));
    expect(caughtUp.every((e) => e.data.team === 'team-a')).toBe(true);
    expect(caughtUp.map((e) => e.data.jobId)).not.toContain(theirs);
    expect(caughtUp.map((e) => e.event)).not.toContain('NodeReportRefused');
    const positions = caughtUp.map((e) => BigInt(e.id));
    expect(positions).toEqual([...positions].sort((a, b) => (a < b ? -1 : 1)));
    const mineEvents = caughtUp.filter((e) => e.data.jobId === mine);
    expect(mineEvents.map((e) => e.event)).toEqual(['JobSubmitted', 'InputsStaged']);
    expect(mineEvents[0]!.data).toMatchObject({ type: 'JobSubmitted', position: mineEvents[0]!.id, data: { jobId: mine, spec: { name: 'train' } }, producer: 'intake' });
    expect(Object.keys(mineEvents[0]!.data).sort()).toEqual(['correlationId', 'data', 'eventId', 'jobId', 'occurredAt', 'position', 'producer', 'recordedAt', 'team', 'type']);

    // Resumed after the last one held: only what came later, live as it is recorded.
    const resumed = await open({ 'last-event-id': mineEvents[1]!.id });
    const later = sseEvents(resumed, (ev) => ev.some((e) => e.event === 'JobEnded'));
    await record('placement', `placement-job-${mine}`, 'JobPlaced', { jobId: mine, attemptId: `${mine}-a1`, attempt: 1, nodeId: 'n1', gpuIndices: [0], gpuModel: 'sim-gpu', placedAt: now() });
    await record('placement', `placement-job-${theirs}`, 'JobPlaced', { jobId: theirs, attemptId: `${theirs}-a1`, attempt: 1, nodeId: 'n1', gpuIndices: [1], gpuModel: 'sim-gpu', placedAt: now() }, 'team-b');
    await ended(mine);
    expect((await later).map((e) => [e.data.jobId, e.event])).toEqual([
      [mine, 'JobPlaced'],
      [mine, 'JobEnded'],
    ]);

    // One job's stream ends by itself after its JobEnded; `after` works like Last-Event-ID.
    const job = await open({}, `?jobId=${mine}&after=${mineEvents[0]!.id}`);
    expect((await sseEvents(job, () => false)).map((e) => e.event)).toEqual(['InputsStaged', 'JobPlaced', 'JobEnded']);

    // Another team's job is refused like every other read of it; a bad position names the field.
    expect((await open({}, `?jobId=${theirs}`)).status).toBe(403);
    const bad = await open({ 'last-event-id': 'x' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as JsonBody).error.issues[0].path).toBe('Last-Event-ID');
  });

  it('pages the feed over NATS (ReadFeed) from a position and announces each entry on gpunet.feed.<team>.<jobId>', async () => {
    const notified: JsonBody[] = [];
    const sub = nc.subscribe('gpunet.feed.team-a.>', { callback: (_e, m) => void notified.push({ subject: m.subject, ...(m.json() as JsonBody) }) });
    // The server has the subscription before the first announcement is sent (a loaded machine lost that race once).
    await nc.flush();
    const jobId = await submitted();
    await staged(jobId);
    await ended(jobId);
    await view(jobId, (v) => v.timeline.length >= 2);

    const page = await overNats(Queries.ReadFeed.subject, { jobId, limit: 2 });
    expect(page).toMatchObject({ ok: true, data: { caughtUp: false } });
    expect(page.data!.entries.map((e: JsonBody) => e.type)).toEqual(['JobSubmitted', 'InputsStaged']);
    const rest = await overNats(Queries.ReadFeed.subject, { jobId, after: page.data!.next });
    expect(rest.data!.entries.map((e: JsonBody) => e.type)).toEqual(['JobEnded']);
    expect(rest.data!.caughtUp).toBe(true);
    const none = await overNats(Queries.ReadFeed.subject, { jobId, after: rest.data!.next });
    expect(none.data).toMatchObject({ entries: [], caughtUp: true, next: rest.data!.next });
    // The whole team feed holds only team-a's jobs.
    const all = await overNats(Queries.ReadFeed.subject, { limit: 1000 });
    expect(all.data!.entries.every((e: JsonBody) => e.team === 'team-a')).toBe(true);

    expect(await overNats(Queries.ReadFeed.subject, { jobId }, KEY_B)).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect(await overNats(Queries.ReadFeed.subject, { after: 'x' })).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'after' }] } });
    expect(await overNats(Queries.ReadFeed.subject, {}, null)).toMatchObject({ ok: false, error: { code: 'unauthorized' } });

    const deadline = Date.now() + 20_000; // a failure guard: the three notifications are waited for
    while (notified.filter((n) => n.jobId === jobId).length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    sub.unsubscribe();
    const mine = notified.filter((n) => n.jobId === jobId);
    expect(mine.map((n) => [n.subject, n.type])).toEqual([
      [`gpunet.feed.team-a.${jobId}`, 'JobSubmitted'],
      [`gpunet.feed.team-a.${jobId}`, 'InputsStaged'],
      [`gpunet.feed.team-a.${jobId}`, 'JobEnded'],
    ]);
    expect(mine.map((n) => n.position)).toEqual([...page.data!.entries, ...rest.data!.entries].map((e: JsonBody) => e.position));
  });

  // ── restart ────────────────────────────────────────────────────────────────────────────

  it('after a restart, folds the store back into the same views', async () => {
    const jobId = await submitted();
    await staged(jobId);
    const before = await view(jobId, (v) => v.state === 'staged');
    const listBefore = (await http('/v1/jobs?limit=500')).json;
    await svc.stop();
    svc = await startService(intakeService({ env: env() }));
    store = svc.ctx.store;
    url = svc.httpUrl!;
    expect((await http(`/v1/jobs/${jobId}`)).json).toEqual(before);
    expect((await http('/v1/jobs?limit=500')).json).toEqual(listBefore);
  }, 30_000);
});
