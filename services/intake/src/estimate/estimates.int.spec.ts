/**
 * Estimates held to, against a real nats-server and a temporary SQLite store: intake booted
 * in-process answers `POST /v1/estimate` (and the NATS query) and records what it answered; a
 * submit naming the estimate is held to it. Placement's `Estimate` and the ledger's `Quote` are
 * answered on the bus by this test, as those services would answer, so the figures are known.
 */
import { Commands, HEADERS, Queries, type Estimate, type EstimateJobReply, type EstimateReply, type Quote, type QuoteReply, type ReadFeedReply, type SubmitJobReply } from '#contracts';
import type { EventStore } from '#event-store';
import { requestQuery, serveQuery } from '#messaging';
import { startService, type RunningService } from '#service-kit';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { intakeService } from '../intake.service.js';

const KEY_A = 'key-of-team-a-producer-0000000011';
const KEY_B = 'key-of-team-b-producer-0000000013';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const HOUR = 3_600_000;
const spec = (gpus = 2, timeLimit = '1h') => ({ name: 'train', work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus, timeLimit } });

describe('estimates held to (HTTP + NATS, real nats-server and SQLite store)', () => {
  let nats: TestNatsServer;
  let dir: string;
  let svc: RunningService;
  let store: EventStore;
  let nc: NatsConnection;
  let url: string;
  /** Placement's answer: the plan expects every job to start `startInMs` from when it is asked. */
  let startInMs = 2 * HOUR;

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-estimates-'));
    await writeFile(join(dir, 'keys.yaml'), [`- { id: ci-a, key: ${KEY_A}, team: team-a, role: producer }`, `- { id: ci-b, key: ${KEY_B}, team: team-b, role: producer }`].join('\n'));
    svc = await startService(
      intakeService({
        env: {
          GPUNET_NATS_URL: nats.url,
          GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`,
          GPUNET_LOG_LEVEL: 'silent',
          GPUNET_HTTP_PORT: '0',
          GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml'),
        },
      }),
    );
    store = svc.ctx.store;
    url = svc.httpUrl!;
    nc = await connect({ servers: nats.url });
    const e = Queries.Estimate;
    serveQuery(nc, e.subject, { request: e.schema, response: e.replySchema }, (request): EstimateReply => {
      const req = request as Estimate;
      const at = Date.now();
      const start = at + startInMs;
      return { runnable: true, reason: 'Resources', expectedStart: new Date(start).toISOString(), expectedEnd: new Date(start + req.request.timeLimitMs).toISOString(), gpuModel: 'A100', at: new Date(at).toISOString() };
    });
    const q = Queries.Quote;
    serveQuery(nc, q.subject, { request: q.schema, response: q.replySchema }, (request): QuoteReply => {
      const req = request as Quote;
      return { amountMicros: Math.round((req.gpus * req.durationMs * 3_600_000) / HOUR), currency: 'EUR', rateMicrosPerGpuHour: 3_600_000, priceListVersion: 1 };
    });
    await nc.flush();
  }, 30_000);

  afterAll(async () => {
    await nc?.close();
    await svc?.stop();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function http(path: string, init: { method?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { authorization: `Bearer ${init.key ?? KEY_A}`, ...init.headers };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${url}${path}`, { method: init.method ?? 'GET', headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
    const text = await res.text();
    return { status: res.status, json: (res.headers.get('content-type')?.includes('application/json') ? JSON.parse(text) : {}) as JsonBody };
  }

  const estimate = async (body: unknown = { spec: spec() }, key = KEY_A) => {
    const res = await http('/v1/estimate', { method: 'POST', body, key });
    expect(res.status).toBe(200);
    return res.json as EstimateJobReply;
  };
  const submit = (body: unknown, key = KEY_A, idempotencyKey?: string) => http('/v1/jobs', { method: 'POST', body, key, ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}) });
  const streamOf = (estimateId: string) => store.readStream(`intake-estimate-${estimateId}`);
  const submittedOf = async (jobId: string) => (await store.readStream(`intake-job-${jobId}`))[0]!;
  const jobCount = async () => (await store.readAll({ filter: { types: ['JobSubmitted'] } })).length;

  it('records an estimate with a start before answering it: request, expected start and end, when, the charge, who asked', async () => {
    const before = Date.now();
    const e = await estimate();
    expect(e).toMatchObject({ runnable: true, gpuModel: 'A100', estimateId: expect.stringMatching(/^est_[0-9a-f]{32}$/), charge: { amountMicros: 2 * 3_600_000, currency: 'EUR' } });
    const events = await streamOf(e.estimateId!);
    expect(events.map((x) => x.type)).toEqual(['EstimateGiven']);
    expect(events[0]!.metadata).toMatchObject({ producer: 'intake', team: 'team-a' });
    expect(events[0]!.metadata.jobId).toBeUndefined();
    const given = events[0]!.data as JsonBody;
    expect(given).toEqual({
      estimateId: e.estimateId,
      team: 'team-a',
      requestedBy: 'ci-a',
      request: { gpus: 2, timeLimitMs: HOUR },
      gpuModel: 'A100',
      expectedStart: e.expectedStart,
      expectedEnd: e.expectedEnd,
      quotedAt: expect.any(String),
      charge: e.charge,
    });
    expect(Date.parse(given.quotedAt)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(given.quotedAt)).toBeLessThanOrEqual(Date.now());
    // Over NATS: the same answer, recorded the same way; no job is submitted by an estimate.
    const jobs = await jobCount();
    const h = natsHeaders();
    h.set(HEADERS.authorization, `Bearer ${KEY_A}`);
    const q = Queries.EstimateJob;
    const overNats = await requestQuery<EstimateJobReply>(nc, q.subject, { spec: spec(1) }, { response: q.replySchema }, { headers: h });
    expect((await streamOf(overNats.estimateId!))[0]!.data).toMatchObject({ request: { gpus: 1, timeLimitMs: HOUR }, expectedStart: overNats.expectedStart });
    expect(await jobCount()).toBe(jobs);
  });

  it('a submit naming it is held to it: JobSubmitted.quote is the estimate with its id, and the estimate records the job', async () => {
    const e = await estimate();
    // The plan moves on between the estimate and the submit: the job keeps the estimate it was given.
    startInMs = 3 * HOUR;
    const res = await submit({ spec: spec(), estimateId: e.estimateId });
    expect(res.status).toBe(201);
    const jobId = res.json.jobId as string;
    const given = (await streamOf(e.estimateId!))[0]!.data as JsonBody;
    expect((await submittedOf(jobId)).data).toMatchObject({ quote: { expectedStart: e.expectedStart, expectedEnd: e.expectedEnd, quotedAt: given.quotedAt, estimateId: e.estimateId } });
    expect((await streamOf(e.estimateId!)).map((x) => [x.type, (x.data as JsonBody).usedBy])).toEqual([
      ['EstimateGiven', undefined],
      ['EstimateUsed', jobId],
    ]);
    // The job's view shows the quote it is held to.
    expect((await http(`/v1/jobs/${jobId}`)).json.quote).toEqual({ expectedStart: e.expectedStart, expectedEnd: e.expectedEnd, quotedAt: given.quotedAt, estimateId: e.estimateId });
    startInMs = 2 * HOUR;
  });

  it('takes precedence over a deadline\'s check, which still refuses a deadline the plan cannot meet', async () => {
    const withDeadline = (deadline: string) => ({ ...spec(), request: { ...spec().request, deadline } });
    const e = await estimate({ spec: withDeadline('+1d') });
    const res = await submit({ spec: withDeadline('+1d'), estimateId: e.estimateId });
    expect(res.status).toBe(201);
    expect((await submittedOf(res.json.jobId as string)).data).toMatchObject({ quote: { expectedStart: e.expectedStart, estimateId: e.estimateId } });
    const late = await estimate({ spec: withDeadline('+1h') });
    const refused = await submit({ spec: withDeadline('+1h'), estimateId: late.estimateId });
    expect(refused.status).toBe(400);
    expect(refused.json.error.issues).toEqual([expect.objectContaining({ path: 'request.deadline' })]);
    // Refused for its deadline, the job did not spend the estimate.
    expect((await streamOf(late.estimateId!)).map((x) => x.type)).toEqual(['EstimateGiven']);
  });

  it('refuses another request (GPUs, time limit, GPU model) on `estimateId` with the fix, and records nothing', async () => {
    const e = await estimate();
    const jobs = await jobCount();
    for (const other of [spec(4), spec(2, '2h'), { ...spec(), request: { ...spec().request, gpuModel: 'A100' } }]) {
      const res = await submit({ spec: other, estimateId: e.estimateId });
      expect(res.status).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'validation_failed', issues: [{ path: 'estimateId', message: expect.stringContaining('another request'), fix: expect.stringContaining('estimate again with this spec\'s request') }] });
    }
    expect(await jobCount()).toBe(jobs);
    expect((await streamOf(e.estimateId!)).map((x) => x.type)).toEqual(['EstimateGiven']);
  });

  it('is one job\'s promise: a second job naming it is refused; a retry of the first (same idempotency key) finds its job', async () => {
    const e = await estimate();
    const key = randomUUID();
    const first = await submit({ spec: spec(), estimateId: e.estimateId }, KEY_A, key);
    expect(first.status).toBe(201);
    const retry = await submit({ spec: spec(), estimateId: e.estimateId }, KEY_A, key);
    expect(retry.status).toBe(200);
    expect(retry.json).toMatchObject({ jobId: first.json.jobId, duplicate: true });
    const second = await submit({ spec: spec(), estimateId: e.estimateId });
    expect(second.status).toBe(400);
    expect(second.json.error.issues).toEqual([expect.objectContaining({ path: 'estimateId', message: expect.stringContaining(`already used by job ${first.json.jobId as string}`) })]);
    expect((await streamOf(e.estimateId!)).map((x) => x.type)).toEqual(['EstimateGiven', 'EstimateUsed']);
  });

  it('two submits racing for one estimate: one job is held to it, the other is refused', async () => {
    const e = await estimate();
    const answers = await Promise.all(Array.from({ length: 4 }, () => submit({ spec: spec(), estimateId: e.estimateId })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 400, 400, 400]);
    const used = (await streamOf(e.estimateId!)).filter((x) => x.type === 'EstimateUsed');
    expect(used.map((x) => (x.data as JsonBody).usedBy)).toEqual([answers.find((a) => a.status === 201)!.json.jobId]);
  });

  it('another team can neither use an estimate nor learn that it exists: the same answer as an unknown id, over HTTP and NATS', async () => {
    const e = await estimate();
    const theirs = await submit({ spec: spec(), estimateId: e.estimateId }, KEY_B);
    const unknown = await submit({ spec: spec(), estimateId: `est_${randomUUID().replaceAll('-', '')}` }, KEY_B);
    expect(theirs.status).toBe(400);
    expect(theirs.json.error.issues).toEqual([expect.objectContaining({ path: 'estimateId', fix: expect.stringContaining('gpunet estimate') })]);
    expect(theirs.json.error.issues[0].message.replace(e.estimateId!, 'ID')).toBe(unknown.json.error.issues[0].message.replace(/est_[0-9a-f]{32}/, 'ID'));
    const h = natsHeaders();
    h.set(HEADERS.authorization, `Bearer ${KEY_B}`);
    const c = Commands.SubmitJob;
    await expect(requestQuery<SubmitJobReply>(nc, c.subject, { spec: spec(), estimateId: e.estimateId }, { response: c.replySchema }, { headers: h })).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: 'estimateId' })],
    });
    // Nothing of it reaches team B: not its feed (estimates are no job's events), not its jobs.
    expect((await http('/v1/jobs', { key: KEY_B })).json.jobs ?? []).toEqual([]);
    const f = Queries.ReadFeed;
    for (const key of [KEY_B, KEY_A]) {
      const hk = natsHeaders();
      hk.set(HEADERS.authorization, `Bearer ${key}`);
      const page = await requestQuery<ReadFeedReply>(nc, f.subject, { limit: 1000 }, { response: f.replySchema }, { headers: hk });
      expect(JSON.stringify(page.entries)).not.toContain(e.estimateId);
    }
    // The refusals spent nothing: team A still submits on it.
    expect((await streamOf(e.estimateId!)).map((x) => x.type)).toEqual(['EstimateGiven']);
    expect((await submit({ spec: spec(), estimateId: e.estimateId })).status).toBe(201);
  });
});
