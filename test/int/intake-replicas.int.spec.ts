/**
 * Intake as several replicas (decision 0030): two intake processes on one event store and one
 * nats-server, each with its own instance name and HTTP port. A job submitted on one is read on
 * the other at once; an idempotency key is one job whichever replica hears it; NATS commands are
 * spread over both (the queue group `intake`, counted from each replica's own log); the second
 * replica's relay resumes from the service's checkpoint instead of publishing the store again,
 * and every event is on the bus once.
 */
import { Commands, Queries, type SubmitJobReply } from '#contracts';
import { SqliteEventStore } from '#event-store';
import { startService, type RunningService } from '#service-kit';
import { jetstream } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { intakeService } from '../../services/intake/src/intake.service.js';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';

const KEY_A = 'replica-test-producer-key-team-a-01';
const KEY_B = 'replica-test-producer-key-team-b-02';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const spec = (name: string, gpus = 1) => ({ name, work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus, timeLimit: '1h' } });

/** A replica and the JSON lines it logged. */
interface Replica {
  service: RunningService;
  logs: Record<string, unknown>[];
}

describe('intake as two replicas on one store and one nats-server', () => {
  let nats: TestNatsServer;
  let dir: string;
  let dbPath: string;
  let store: SqliteEventStore;
  let nc: NatsConnection;
  let a: Replica;
  let b: Replica;
  let firstJob: string;

  const startReplica = async (instance: string): Promise<Replica> => {
    const logs: Record<string, unknown>[] = [];
    const env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${dbPath}`, GPUNET_LOG_LEVEL: 'info', GPUNET_INSTANCE: instance, GPUNET_HTTP_PORT: '0', GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml') };
    const service = await startService({ ...intakeService({ env }), logDestination: { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) } });
    return { service, logs };
  };

  async function http(via: Replica, path: string, init: { key: string; body?: unknown; idempotencyKey?: string }) {
    const headers: Record<string, string> = { authorization: `Bearer ${init.key}` };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.idempotencyKey) headers['idempotency-key'] = init.idempotencyKey;
    const res = await fetch(`${via.service.httpUrl}${path}`, { method: init.body !== undefined ? 'POST' : 'GET', headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as JsonBody };
  }

  async function overNats(subject: string, body: unknown, key: string): Promise<JsonBody> {
    const h = natsHeaders();
    h.set('Authorization', `Bearer ${key}`);
    return (await nc.request(subject, JSON.stringify(body), { timeout: 15_000, headers: h })).json<JsonBody>();
  }

  const submittedBy = (r: Replica) => r.logs.filter((l) => l.msg === 'job submitted').map((l) => l.jobId as string);

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-replicas-'));
    dbPath = join(dir, 'events.db');
    await writeFile(join(dir, 'keys.yaml'), [`- { id: ci-a, key: ${KEY_A}, team: team-a, role: producer }`, `- { id: ci-b, key: ${KEY_B}, team: team-b, role: producer }`].join('\n'));
    a = await startReplica('intake-a');
    store = new SqliteEventStore({ path: dbPath });
    nc = await connect({ servers: nats.url });
    // Replica a has written and published something before replica b starts.
    const first = await http(a, '/v1/jobs', { key: KEY_A, body: spec('before-b') });
    expect(first.status).toBe(201);
    firstJob = first.json.jobId as string;
    const position = (await store.readStream(`intake-job-${firstJob}`))[0]!.position;
    await until('replica a\'s relay to save its checkpoint past the first job', async () => (((await store.loadCheckpoint('relay-intake')) ?? 0n) >= position ? true : undefined), { timeoutMs: 20_000 });
    b = await startReplica('intake-b');
  }, 60_000);

  afterAll(async () => {
    await nc?.close();
    await b?.service.stop();
    await a?.service.stop();
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('starts the second replica\'s relay from the service\'s checkpoint, not from the start of the store', () => {
    const started = b.logs.find((l) => l.msg === 'relay starting from checkpoint');
    expect(started).toMatchObject({ instance: 'intake-b', relay: 'relay-intake' });
    expect(BigInt(started!.fromPosition as string)).toBeGreaterThan(0n);
  });

  it('reads on one replica a job submitted on the other, at once, and keeps one job per idempotency key', async () => {
    expect((await http(b, `/v1/jobs/${firstJob}`, { key: KEY_A })).json).toMatchObject({ jobId: firstJob, team: 'team-a' });
    for (let i = 0; i < 5; i++) {
      const key = `replica-key-${i}`;
      const created = await http(i % 2 === 0 ? a : b, '/v1/jobs', { key: KEY_A, body: spec(`rw-${i}`), idempotencyKey: key });
      expect(created.status).toBe(201);
      const jobId = created.json.jobId as string;
      // The other replica, right after the answer: no waiting in the test, the replica catches up to the store's head itself.
      const other = i % 2 === 0 ? b : a;
      expect((await http(other, `/v1/jobs/${jobId}`, { key: KEY_A })).json).toMatchObject({ jobId, team: 'team-a', state: 'submitted' });
      expect((await http(other, `/v1/jobs/${jobId}`, { key: KEY_B })).status).toBe(403);
      const again = await http(other, '/v1/jobs', { key: KEY_A, body: spec(`rw-${i}`), idempotencyKey: key });
      expect(again).toMatchObject({ status: 200, json: { jobId, duplicate: true } });
      expect((await http(other, '/v1/jobs', { key: KEY_A, body: spec(`rw-${i}`, 2), idempotencyKey: key })).status).toBe(409);
    }
  }, 60_000);

  it('spreads NATS commands over both replicas, and every job is on the bus once', async () => {
    const before = { a: submittedBy(a).length, b: submittedBy(b).length };
    const n = 30;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => overNats(Commands.SubmitJob.subject, { spec: spec(`nats-${i}`) }, i % 2 === 0 ? KEY_A : KEY_B)));
    expect(replies.filter((r) => r.ok !== true)).toEqual([]);
    const jobIds = replies.map((r) => (r.data as SubmitJobReply).jobId);
    const handled = { a: submittedBy(a).length - before.a, b: submittedBy(b).length - before.b };
    expect(handled.a + handled.b).toBe(n);
    expect(handled.a).toBeGreaterThan(0);
    expect(handled.b).toBeGreaterThan(0);
    // Queries too: each answered by whichever replica, each sees every job.
    for (const [i, jobId] of jobIds.entries()) expect(await overNats(Queries.GetJob.subject, { jobId }, i % 2 === 0 ? KEY_A : KEY_B)).toMatchObject({ ok: true, data: { jobId } });

    // Both relays publish every intake event; JetStream keeps one copy of each (its id is the event id).
    const submitted = (await store.readAll({ maxCount: 100_000, filter: { types: ['JobSubmitted'] } })).length;
    const jsm = await jetstream(nc).jetstreamManager();
    const onBus = async () => (await jsm.streams.info('GPUNET_EVENTS', { subjects_filter: 'gpunet.evt.JobSubmitted.>' })).state.subjects ?? {};
    await until('every JobSubmitted on the bus', async () => (Object.values(await onBus()).reduce((s, c) => s + c, 0) === submitted ? true : undefined), { timeoutMs: 20_000 });
    const counts = Object.values(await onBus());
    expect(counts.length).toBe(submitted);
    expect(counts.every((c) => c === 1)).toBe(true);
  }, 60_000);
});
