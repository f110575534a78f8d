/**
 * Intake as several replicas (decision 0030): two intake processes (the built `main.js`, as
 * `npm test` builds it) on one SQLite event store and one nats-server, each with its own instance name and HTTP port. A job submitted on one is read on
 * the other at once; an idempotency key is one job whichever replica hears it; NATS commands are
 * spread over both (the queue group `intake`, counted from each replica's own log); the second
 * replica's relay resumes from the service's checkpoint instead of publishing the store again,
 * and every event is on the bus once; a key issued through one is revoked through the other at once.
 */
import { Commands, Queries, type SubmitJobReply } from '#contracts';
import { SqliteEventStore } from '#event-store';
import { jetstream } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';

const KEY_A = 'replica-test-producer-key-team-a-01';
const KEY_B = 'replica-test-producer-key-team-b-02';
const ADMIN_A = 'replica-test-admin-key-of-team-a-03';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const spec = (name: string, gpus = 1) => ({ name, work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus, timeLimit: '1h' } });

/** A replica process: its HTTP address, the JSON lines it logged, how to stop it. */
interface Replica {
  url: string;
  logs: Record<string, unknown>[];
  stop(): Promise<void>;
}

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/intake/src/main.js');

describe('intake as two replicas on one store and one nats-server', () => {
  let nats: TestNatsServer;
  let dir: string;
  let dbPath: string;
  let store: SqliteEventStore;
  let nc: NatsConnection;
  let a: Replica;
  let b: Replica;
  let firstJob: string;
  const replicas: Replica[] = [];

  /**
   * Starts the built intake (`dist/`) as a process of its own: replicas are separate processes in
   * production, and only then does one see another's appends as late as the store's poll allows.
   */
  const startReplica = async (instance: string): Promise<Replica> => {
    const env = { ...process.env, GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${dbPath}`, GPUNET_LOG_LEVEL: 'info', GPUNET_INSTANCE: instance, GPUNET_HTTP_PORT: '0', GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml') };
    const child = spawn(process.execPath, [MAIN], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const logs: Record<string, unknown>[] = [];
    let buffered = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const started = await Promise.race([
      until(`intake ${instance} to start`, async () => logs.find((l) => l.msg === 'service started'), { timeoutMs: 60_000 }),
      exited.then((code) => {
        throw new Error(`intake ${instance} exited with ${code} before it started:\n${stderr}\n${logs.map((l) => JSON.stringify(l)).join('\n')}`);
      }),
    ]);
    const replica: Replica = {
      url: started.http as string,
      logs,
      stop: async () => {
        if (child.exitCode !== null) return;
        child.kill('SIGTERM');
        await exited;
      },
    };
    replicas.push(replica);
    return replica;
  };

  async function http(via: Replica, path: string, init: { key: string; body?: unknown; idempotencyKey?: string }) {
    const headers: Record<string, string> = { authorization: `Bearer ${init.key}` };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.idempotencyKey) headers['idempotency-key'] = init.idempotencyKey;
    const res = await fetch(`${via.url}${path}`, { method: init.body !== undefined ? 'POST' : 'GET', headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
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
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (\`npm test\` does).`);
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-replicas-'));
    dbPath = join(dir, 'events.db');
    await writeFile(join(dir, 'keys.yaml'), [`- { id: ci-a, key: ${KEY_A}, team: team-a, role: producer }`, `- { id: ci-b, key: ${KEY_B}, team: team-b, role: producer }`, `- { id: admin-a, key: ${ADMIN_A}, team: team-a, role: admin }`].join('\n'));
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
    for (const r of replicas) await r.stop();
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

  it('revokes through one replica, at once, a key issued through the other, and lists it there revoked', async () => {
    for (let i = 0; i < 5; i++) {
      const [issuer, other] = i % 2 === 0 ? [a, b] : [b, a];
      const issued = await http(issuer, '/v1/keys', { key: ADMIN_A, body: { role: 'producer', name: `replica-${i}` } });
      expect(issued.status).toBe(201);
      const keyId = issued.json.keyId as string;
      // Straight away on the other replica, which has not polled the store since: it catches up before deciding.
      const revoked = await http(other, `/v1/keys/${keyId}/revoke`, { key: ADMIN_A, body: { reason: 'rotated' } });
      expect({ i, status: revoked.status, state: revoked.json.state }).toEqual({ i, status: 200, state: 'revoked' });
      const listed = (await http(issuer, '/v1/keys', { key: ADMIN_A })).json.keys as { keyId: string; state: string }[];
      expect(listed.find((k) => k.keyId === keyId)?.state).toBe('revoked');
    }
  }, 60_000);

  it('spreads NATS commands over both replicas, and every job is on the bus once', async () => {
    const before = { a: submittedBy(a).length, b: submittedBy(b).length };
    const n = 30;
    const replies = await Promise.all(Array.from({ length: n }, (_, i) => overNats(Commands.SubmitJob.subject, { spec: spec(`nats-${i}`) }, i % 2 === 0 ? KEY_A : KEY_B)));
    expect(replies.filter((r) => r.ok !== true)).toEqual([]);
    const jobIds = replies.map((r) => (r.data as SubmitJobReply).jobId);
    const handledBy = () => ({ a: submittedBy(a).length - before.a, b: submittedBy(b).length - before.b });
    // Each replica logs `job submitted` before it answers; the lines reach this process through a pipe, maybe after the answer.
    await until('both replicas\' log lines of the submits', () => (handledBy().a + handledBy().b >= n ? true : undefined), { timeoutMs: 10_000 });
    const handled = handledBy();
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
