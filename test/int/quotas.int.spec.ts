/**
 * GPU quotas across intake and placement against a real nats-server and a temporary SQLite store: intake (HTTP and
 * NATS, team API keys) records them, placement (its own process kit, fed by the bus) honours them.
 * The test plays storage and one execution agent: it appends their events to their own streams
 * and its outbox relays publish them.
 */
import { Commands, eventTypeSubjects, type EventData } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { OutboxRelay } from '#messaging';
import { EventWriter, startService, type RunningService } from '#service-kit';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { placementService } from '../../services/placement/src/placement.service.js';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';
import { intakeService } from '../../services/intake/src/intake.service.js';

const BILLING = 'bootstrap-billing-key-network-00001';
const ADMIN_A = 'bootstrap-admin-key-of-team-a-00002';
const PRODUCER_A = 'bootstrap-producer-key-team-a-00003';
const PRODUCER_B = 'bootstrap-producer-key-team-b-00004';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const spec = (gpus: number) => ({ name: 'q', work: { kind: 'script', script: { inline: 'true' } }, request: { gpus, gpuModel: 'H100', timeLimit: '1h' } });

describe('GPU quotas: set by billing through intake, honoured by placement', () => {
  let nats: TestNatsServer;
  let dir: string;
  let intake: RunningService;
  let placement: RunningService;
  let store: EventStore;
  let writer: EventWriter;
  let relay: OutboxRelay;
  let nc: NatsConnection;
  /** Placements seen on the bus, by job id. */
  const placed = new Map<string, EventData<'JobPlaced'>>();

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-quotas-'));
    await writeFile(
      join(dir, 'keys.yaml'),
      [
        `- { id: billing, key: ${BILLING}, team: ops, role: billing }`,
        `- { id: admin-a, key: ${ADMIN_A}, team: team-a, role: admin }`,
        `- { id: ci-a, key: ${PRODUCER_A}, team: team-a, role: producer }`,
        `- { id: ci-b, key: ${PRODUCER_B}, team: team-b, role: producer }`,
      ].join('\n'),
    );
    const storeUrl = `sqlite:${join(dir, 'events.db')}`;
    const common = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'silent' };
    intake = await startService(intakeService({ env: { ...common, GPUNET_HTTP_PORT: '0', GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml') } }));
    // Its node is events only: it never beats, so its lease must outlast the test.
    placement = await startService({ ...placementService, env: { ...common, GPUNET_NODE_LEASE_MS: '600000' } });
    store = intake.ctx.store;
    writer = new EventWriter(store, 'test', { now: () => new Date() });
    nc = await connect({ servers: nats.url });
    relay = new OutboxRelay(store, nc, { name: 'test-agents', filter: { streamPrefix: 'test-' }, logger: pino({ level: 'silent' }) });
    await relay.start();
    nc.subscribe(eventTypeSubjects('JobPlaced'), {
      callback: (_err, msg) => {
        const p = (msg.json() as { data: EventData<'JobPlaced'> }).data;
        if (!placed.has(p.jobId)) placed.set(p.jobId, p);
      },
    });
    await writer.append('test-execution-node-1', [
      {
        type: 'NodeRegistered',
        data: { nodeId: 'node-1', gpus: Array.from({ length: 8 }, (_, index) => ({ index, model: 'H100' })), simulated: true, networkIsolation: false, heartbeatIntervalMs: 1_000, registeredAt: new Date().toISOString() },
      },
    ]);
  }, 60_000);

  afterAll(async () => {
    await relay?.stop();
    await nc?.close();
    await placement?.stop();
    await intake?.stop();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function http(path: string, key: string, body?: unknown) {
    const res = await fetch(`${intake.httpUrl}${path}`, {
      method: body !== undefined ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as JsonBody };
  }

  async function overNats(subject: string, body: unknown, key: string): Promise<{ ok: boolean; data?: JsonBody; error?: { code: string; message: string } }> {
    const h = natsHeaders();
    h.set('Authorization', `Bearer ${key}`);
    return (await nc.request(subject, JSON.stringify(body), { timeout: 5_000, headers: h })).json();
  }

  /** Submits through intake with the team's key and stages its (no) inputs as storage would. */
  async function submit(key: string, gpus: number): Promise<string> {
    const res = await http('/v1/jobs', key, { spec: spec(gpus) });
    expect(res.status).toBe(201);
    const jobId = res.json.jobId as string;
    await writer.append(`test-storage-job-${jobId}`, [{ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }]);
    return jobId;
  }

  /** The job's place in the live plan, as its team sees it. */
  const queued = async (jobId: string, key: string) => (await http(`/v1/jobs/${jobId}/queue`, key)).json.pending?.[0] as JsonBody | undefined;
  const quotaEvents = async (): Promise<RecordedEvent[]> => store.readAll({ maxCount: 10_000, filter: { types: ['QuotaSet'] } });

  it('refuses every key but billing: a producer and a team admin cannot set a quota, on HTTP or NATS, and the refusal is recorded', async () => {
    const byProducer = await http('/v1/quotas', PRODUCER_A, { team: 'team-a', gpuModel: 'H100', gpus: 64 });
    expect(byProducer.status).toBe(403);
    expect(byProducer.json.error.message).toContain('that needs a key with role billing');
    // A team's own admin may not raise its team's share of the network either.
    expect((await http('/v1/quotas', ADMIN_A, { team: 'team-a', gpuModel: 'H100', gpus: 64 })).status).toBe(403);
    const viaNats = await overNats(Commands.SetQuota.subject, { team: 'team-a', gpuModel: 'H100', gpus: 64 }, PRODUCER_A);
    expect(viaNats).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect(await quotaEvents()).toEqual([]);
    const refusals = await store.readAll({ maxCount: 100, filter: { types: ['AdminActionRefused'] } });
    expect(refusals.map((r) => [(r.data as JsonBody).action, (r.data as JsonBody).by.keyId, (r.data as JsonBody).transport])).toEqual([
      ['quotas:set', 'ci-a', 'http'],
      ['quotas:set', 'admin-a', 'http'],
      ['quotas:set', 'ci-a', 'nats'],
    ]);
  });

  it('names the field and the fix of a bad quota', async () => {
    const bad = await http('/v1/quotas', BILLING, { team: 'team-a', gpuModel: 'H100', gpus: -1, borrow: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.json.error.issues.map((i: JsonBody) => i.path).sort()).toEqual(['borrow', 'gpus']);
    expect(bad.json.error.issues.every((i: JsonBody) => typeof i.fix === 'string')).toBe(true);
    const unknown = await http('/v1/quotas', BILLING, { team: 'team-nope', gpuModel: 'H100', gpus: 1 });
    expect(unknown.status).toBeGreaterThanOrEqual(400);
    expect(unknown.status).toBeLessThan(500);
  });

  it('holds a team at its quota while another team\'s job runs on the free GPUs, then lets it borrow them when nobody else waits', async () => {
    const setA = await http('/v1/quotas', BILLING, { team: 'team-a', gpuModel: 'H100', gpus: 2, gpuHours: 1000 });
    expect(setA.status).toBe(200);
    expect(setA.json).toMatchObject({ team: 'team-a', gpuModel: 'H100', gpus: 2, gpuHours: 1000, borrow: false, inUse: 0 });
    const setB = await overNats(Commands.SetQuota.subject, { team: 'team-b', gpuModel: 'H100', gpus: 8 }, BILLING);
    expect(setB).toMatchObject({ ok: true, data: { team: 'team-b', gpus: 8, gpuHours: null } });
    const [recorded] = await store.readStream('intake-quota-team-a');
    expect(recorded).toMatchObject({ type: 'QuotaSet', data: { team: 'team-a', gpus: 2, by: { keyId: 'billing', role: 'billing' } }, metadata: { producer: 'intake', team: 'team-a' } });

    const a1 = await submit(PRODUCER_A, 2);
    await until('a1 placed', () => placed.get(a1));
    const a2 = await submit(PRODUCER_A, 2);
    const b1 = await submit(PRODUCER_B, 1);
    await until('b1 placed', () => placed.get(b1));
    // Six GPUs are free, yet team a waits: it holds its 2.
    const waiting = await until('a2 held by its quota', async () => {
      const q = await queued(a2, PRODUCER_A);
      return q?.reason === 'QuotaExceeded' && q;
    });
    expect(waiting.reasonDetail).toBe('team team-a holds 2 of its 2 H100 GPUs and the job asks for 2; borrowing is off');
    expect(placed.has(a2)).toBe(false);

    // gpunet capacity: each team sees its own quota and use, never the other's.
    const capA = await http('/v1/capacity?hours=1', PRODUCER_A);
    expect(capA.status).toBe(200);
    expect(capA.json.quotas.list).toEqual([{ team: 'team-a', gpuModel: 'H100', gpus: 2, gpuHours: 1000, borrow: false, inUse: 2, borrowed: 0, heldMs: 0, waiting: 1, setAt: expect.any(String) }]);
    expect((await http('/v1/capacity?hours=1', PRODUCER_B)).json.quotas.list.map((q: JsonBody) => q.team)).toEqual(['team-b']);
    expect((await http('/v1/quotas?team=team-b', PRODUCER_A)).status).toBe(403);
    expect((await overNats('gpunet.qry.intake.GetQuotas', { team: 'team-b' }, PRODUCER_A))).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect((await http('/v1/quotas', PRODUCER_A)).json.quotas.map((q: JsonBody) => q.team)).toEqual(['team-a']);
    expect((await http('/v1/quotas', BILLING)).json.quotas.map((q: JsonBody) => q.team)).toEqual(['team-a', 'team-b']);

    // Borrowing on: the idle GPUs go to team a, marked borrowed in its placement.
    expect((await http('/v1/quotas', BILLING, { team: 'team-a', gpuModel: 'H100', gpus: 2, gpuHours: 1000, borrow: true })).status).toBe(200);
    const borrowed = await until('a2 placed as borrowed', () => placed.get(a2));
    expect(borrowed.borrowed).toBe(true);
    expect(placed.get(a1)!.borrowed).toBeUndefined();
    const stored = (await store.readStream(`placement-job-${a2}`)).find((e) => e.type === 'JobPlaced');
    expect((stored!.data as JsonBody).borrowed).toBe(true);
    const rowA = await until('placement shows the borrowed GPUs', async () => {
      const row = (await http('/v1/quotas', PRODUCER_A)).json.quotas[0] as JsonBody;
      return row.borrowed === 2 && row;
    });
    expect(rowA).toMatchObject({ inUse: 4, borrowed: 2, waiting: 0 });

    // Team b now waits for 4 H100 within its quota (3 are free): team a may not borrow more.
    const b2 = await submit(PRODUCER_B, 4);
    await until('b2 waits for resources', async () => (await queued(b2, PRODUCER_B))?.reason);
    const a3 = await submit(PRODUCER_A, 1);
    const held = await until('a3 held: another team waits', async () => {
      const q = await queued(a3, PRODUCER_A);
      return q?.reason === 'QuotaExceeded' && q;
    });
    expect(held.reasonDetail).toContain('team team-b waits for H100 within its quota');
    expect(placed.has(a3)).toBe(false);
  }, 60_000);
});
