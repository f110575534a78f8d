/**
 * Placement as a process would run it (in-process through the service kit) against a real
 * nats-server and a temporary SQLite store. The test plays intake, storage and two execution
 * agents: it appends their events to its own streams and its own outbox relays publish them.
 */
import { eventTypeSubjects, heartbeatSubject, type DeadLetter, querySubject, type EventData, type GetQueueReply, type JobSpec } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay, requestQuery } from '#messaging';
import { EventWriter, startService, type RunningService } from '#service-kit';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { placementService } from './placement.service.js';

const NODES = { 'node-a': 4, 'node-b': 4 } as const;
const quiet = pino({ level: 'silent' });

const waitFor = async <T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== false) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
};

function spec(gpus: number): JobSpec {
  return {
    work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
    data: { inputs: [] },
    request: { gpus, timeLimitMs: 60_000, network: false },
    outputs: { globs: ['**'] },
  };
}

describe('placement service', () => {
  let nats: TestNatsServer;
  let dir: string;
  let storeUrl: string;
  let svc: RunningService | undefined;
  let store: EventStore;
  let writer: EventWriter;
  let relays: OutboxRelay[];
  let nc: NatsConnection;
  let js: JetStreamClient;
  /** Placements seen on the bus, by attempt id (the relay may publish one twice). */
  const placements = new Map<string, EventData<'JobPlaced'>>();
  /** GPUs the fake agents hold: `node/index` → attempt. Freed *before* ComputeReleased is appended. */
  const held = new Map<string, string>();
  const violations: string[] = [];
  let agentsRun = false;
  const releasing = new Set<string>();

  const env = () => ({ GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'silent', GPUNET_NODE_LEASE_MS: '600000' }); // its nodes are events only: they never beat
  const queue = () => requestQuery(nc, querySubject('placement', 'GetQueue'), {}, {}, { timeoutMs: 5_000 }) as Promise<GetQueueReply>;

  /** A fake agent's whole attempt: held, finished, released (the GPUs are marked free first). */
  async function runAttempt(p: EventData<'JobPlaced'>, outcome: EventData<'JobFinished'>['outcome'] = 'completed'): Promise<void> {
    const stream = `execution-${p.nodeId}-attempt-${p.attemptId}`;
    const t = new Date().toISOString();
    await writer.append(stream, [
      { type: 'ComputeHeld', data: { jobId: p.jobId, attemptId: p.attemptId, nodeId: p.nodeId, gpuIndices: p.gpuIndices, gpuModel: p.gpuModel, gpus: p.gpuIndices.length, heldAt: t } },
      { type: 'JobFinished', data: { jobId: p.jobId, attemptId: p.attemptId, nodeId: p.nodeId, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: t } },
    ]);
    for (const i of p.gpuIndices) held.delete(`${p.nodeId}/${i}`);
    await writer.append(stream, [{ type: 'ComputeReleased', data: { jobId: p.jobId, attemptId: p.attemptId, nodeId: p.nodeId, gpuIndices: p.gpuIndices, releasedAt: t } }]);
  }

  async function submit(jobId: string, gpus: number, team = 'team-a'): Promise<void> {
    await writer.append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team, spec: spec(gpus), submittedAt: new Date().toISOString() } }], {
      expectedRevision: 'no_stream',
    });
    await writer.append(`storage-job-${jobId}`, [{ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }]);
  }

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-placement-'));
    storeUrl = `sqlite:${join(dir, 'events.db')}`;
    store = await openEventStore(storeUrl);
    writer = new EventWriter(store, 'test', { now: () => new Date() });
    nc = await connect({ servers: nats.url });
    js = jetstream(nc);
    svc = await startService({ ...placementService, env: env() });
    relays = ['intake-', 'storage-', 'execution-'].map((prefix) => new OutboxRelay(store, nc, { name: `test-${prefix}`, filter: { streamPrefix: prefix }, logger: quiet }));
    for (const r of relays) await r.start();

    // The fake agents: check each placement against the GPUs they hold, then hold them.
    nc.subscribe(eventTypeSubjects('JobPlaced'), {
      callback: (_err, msg) => {
        const p = (msg.json() as { data: EventData<'JobPlaced'> }).data;
        if (placements.has(p.attemptId)) return;
        placements.set(p.attemptId, p);
        for (const i of p.gpuIndices) {
          const key = `${p.nodeId}/${i}`;
          const holder = held.get(key);
          if (holder !== undefined) violations.push(`${p.attemptId} placed on ${key}, held by ${holder}`);
          held.set(key, p.attemptId);
        }
        if (agentsRun) void release(p);
      },
    });

    for (const [nodeId, gpus] of Object.entries(NODES)) {
      await writer.append(`execution-${nodeId}-node`, [
        {
          type: 'NodeRegistered',
          data: {
            nodeId,
            gpus: Array.from({ length: gpus }, (_, index) => ({ index, model: 'A100' })),
            simulated: true,
            networkIsolation: false,
            heartbeatIntervalMs: 1_000,
            registeredAt: new Date().toISOString(),
          },
        },
      ]);
    }
    await waitFor('both nodes registered', async () => (await queue()).nodes.length === 2);
  }, 30_000);

  async function release(p: EventData<'JobPlaced'>): Promise<void> {
    if (releasing.has(p.attemptId)) return;
    releasing.add(p.attemptId);
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 20)));
    await runAttempt(p);
  }

  afterAll(async () => {
    for (const r of relays ?? []) await r.stop();
    await svc?.stop();
    await nc?.close();
    await store?.close();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Replays the store in position order: no GPU is ever held by two attempts. */
  async function storeOracle(): Promise<{ placedAttempts: number; jobsPlaced: Set<string> }> {
    const events: RecordedEvent[] = [];
    for (let from = 0n; ; ) {
      const page = await store.readAll({ fromPosition: from, maxCount: 1000, filter: { types: ['JobPlaced', 'ComputeReleased'] } });
      events.push(...page);
      if (page.length < 1000) break;
      from = page[page.length - 1]!.position;
    }
    const gpus = new Map<string, string>();
    const attempts = new Set<string>();
    const jobs = new Set<string>();
    for (const e of events) {
      const d = e.data as EventData<'JobPlaced'>;
      for (const i of d.gpuIndices) {
        const key = `${d.nodeId}/${i}`;
        if (e.type === 'JobPlaced') {
          expect({ key, heldBy: gpus.get(key), placing: d.attemptId }).toEqual({ key, heldBy: undefined, placing: d.attemptId });
          gpus.set(key, d.attemptId);
        } else if (gpus.get(key) === d.attemptId) gpus.delete(key);
      }
      if (e.type === 'JobPlaced') {
        expect(attempts.has(d.attemptId)).toBe(false); // one attempt is placed once
        attempts.add(d.attemptId);
        jobs.add(d.jobId);
      }
    }
    return { placedAttempts: attempts.size, jobsPlaced: jobs };
  }

  it('places 50 concurrent submissions on free GPUs only, then drains the queue as GPUs are released', async () => {
    const jobs = Array.from({ length: 50 }, (_, i) => ({ jobId: `job-${String(i).padStart(2, '0')}`, gpus: 1 + (i % 3) }));
    await Promise.all(jobs.map((j) => submit(j.jobId, j.gpus)));

    // Nothing is released yet: placement places what fits and no more. Backfill may leave a GPU
    // idle on purpose: every job has the same time limit, so none fits before a reservation.
    let seen = -1;
    await waitFor('the placements to settle', async () => {
      const q = await queue();
      const settled = placements.size > 0 && placements.size === seen && q.totalPending === 50 - placements.size;
      seen = placements.size;
      if (!settled) await new Promise((r) => setTimeout(r, 250));
      return settled;
    });
    await new Promise((r) => setTimeout(r, 500));
    const busy = [...placements.values()].reduce((n, p) => n + p.gpuIndices.length, 0);
    expect(busy).toBeGreaterThanOrEqual(4);
    expect(busy).toBeLessThanOrEqual(8);
    expect(violations).toEqual([]);
    const q1 = await queue();
    expect(q1.pending.map((p) => p.position)).toEqual(q1.pending.map((_, i) => i + 1));
    // Reasons come from the live plan: the first blocked jobs hold reservations (Resources), others wait for Priority or a Reservation.
    expect(q1.pending.filter((p) => !['Resources', 'Priority', 'Reservation'].includes(p.reason))).toEqual([]);
    expect(q1.pending.filter((p) => p.reason === 'Resources').every((p) => p.expectedStart !== undefined)).toBe(true);

    // The agents run what they get, in any order; every placement must find its GPUs free.
    agentsRun = true;
    for (const p of placements.values()) void release(p);
    const done = await waitFor('the queue to drain', async () => {
      const q = await queue();
      return q.totalPending === 0 && placements.size === 50 && releasing.size === 50 && held.size === 0 && q.nodes.every((n) => n.freeGpuIndices.length === 4) && q;
    }, 60_000);
    expect(done.nodes.map((n) => n.nodeId)).toEqual(['node-a', 'node-b']);
    expect(violations).toEqual([]);
    const oracle = await storeOracle();
    expect(oracle.placedAttempts).toBe(50);
    expect(oracle.jobsPlaced).toEqual(new Set(jobs.map((j) => j.jobId)));
  }, 90_000);

  it('dead-letters a malformed message and keeps placing', async () => {
    agentsRun = false;
    const jsm = await jetstreamManager(nc);
    const before = (await jsm.streams.info('GPUNET_DLQ')).state.messages;
    // Not JSON at all, and an envelope whose data breaks the JobSubmitted contract.
    await js.publish('gpunet.evt.JobSubmitted', 'not json at all', { msgID: 'malformed-1' });
    await js.publish(
      'gpunet.evt.InputsStaged',
      JSON.stringify({
        eventId: '0195f3c2-0000-7000-8000-000000000001',
        type: 'InputsStaged',
        data: { jobId: 'bad id with spaces' },
        metadata: { correlationId: 'c', causationId: 'c', producer: 'test', occurredAt: new Date().toISOString() },
        position: '999999',
      }),
      { msgID: 'malformed-2' },
    );
    const letters = await waitFor('two dead letters', async () => {
      const n = (await jsm.streams.info('GPUNET_DLQ')).state.messages;
      return n >= before + 2 && n;
    });
    expect(letters - before).toBe(2);
    const lastSeq = (await jsm.streams.info('GPUNET_DLQ')).state.last_seq;
    const dead = await Promise.all([lastSeq - 1, lastSeq].map(async (seq) => (await jsm.streams.getMessage('GPUNET_DLQ', { seq }))!.json<DeadLetter>()));
    expect(dead.map((d) => [d.consumer, d.subject, d.reason]).sort()).toEqual([
      ['placement', 'gpunet.evt.InputsStaged', 'schema_invalid'],
      ['placement', 'gpunet.evt.JobSubmitted', 'schema_invalid'],
    ]);

    await submit('job-after-poison', 2);
    const p = await waitFor('the next job placed', () => [...placements.values()].find((x) => x.jobId === 'job-after-poison'));
    expect(p.gpuIndices).toHaveLength(2);
    expect(violations).toEqual([]);
    await runAttempt(p);
  }, 30_000);

  it('withdraws a queued job on cancel, and requeues an attempt lost with its node', async () => {
    // Fill node-a and node-b so the next job waits, then cancel it.
    const blockers = ['block-a', 'block-b'];
    for (const b of blockers) await submit(b, 4);
    const blocking = await waitFor('both nodes full', () => {
      const xs = [...placements.values()].filter((x) => blockers.includes(x.jobId));
      return xs.length === 2 && xs;
    });
    await submit('to-cancel', 1);
    await writer.append('intake-job-to-cancel', [{ type: 'JobCancelRequested', data: { jobId: 'to-cancel', team: 'team-a', requestedAt: new Date().toISOString() } }]);
    const withdrawn = await waitFor('JobWithdrawn', async () => (await store.readStream('placement-job-to-cancel')).find((e) => e.type === 'JobWithdrawn'));
    expect(withdrawn.data).toMatchObject({ jobId: 'to-cancel', outcome: 'cancelled' });
    expect([...placements.values()].some((x) => x.jobId === 'to-cancel')).toBe(false);

    // node-a's agent comes back without its run: the attempt ends node_lost and is released.
    const onA = blocking.find((x) => x.nodeId === 'node-a')!;
    const onB = blocking.find((x) => x.nodeId === 'node-b')!;
    await runAttempt(onA, 'node_lost');
    const again = await waitFor('the lost job placed again', () => [...placements.values()].find((x) => x.jobId === onA.jobId && x.attempt === 2));
    expect(again).toMatchObject({ nodeId: 'node-a', attemptId: `${onA.jobId}-a2`, gpuIndices: [0, 1, 2, 3] });
    const stream = (await store.readStream(`placement-job-${onA.jobId}`)).map((e) => e.type);
    expect(stream).toEqual(['JobPlaced', 'JobRequeued', 'JobPlaced']);
    await runAttempt(again);
    await runAttempt(onB);
    expect(violations).toEqual([]);
  }, 30_000);

  it('keeps the last heartbeat of each node, and drops one that is not a heartbeat of its subject\'s node', async () => {
    const beat = (nodeId: string, sequence: number) =>
      JSON.stringify({ nodeId, freeGpuIndices: [0, 1, 2, 3], runningAttempts: [], sequence, sentAt: new Date().toISOString() });
    nc.publish(heartbeatSubject('node-b'), beat('node-a', 1)); // wrong node for the subject
    nc.publish(heartbeatSubject('node-b'), 'garbage');
    nc.publish(heartbeatSubject('node-a'), beat('node-a', 1));
    const q = await waitFor('node-a heard from', async () => {
      const r = await queue();
      return r.nodes.find((n) => n.nodeId === 'node-a')?.lastHeartbeatAt !== undefined && r;
    });
    expect(q.nodes.find((n) => n.nodeId === 'node-b')!.lastHeartbeatAt).toBeUndefined();
    expect(Date.parse(q.nodes.find((n) => n.nodeId === 'node-a')!.lastHeartbeatAt!)).toBeLessThanOrEqual(Date.now());
  });

  it('restarts from the store: no attempt placed twice, and it goes on placing', async () => {
    await submit('hold-1', 4);
    const first = await waitFor('hold-1 placed', () => [...placements.values()].find((x) => x.jobId === 'hold-1'));
    await svc!.stop();
    svc = undefined;
    // While placement is down: the GPUs of hold-1 are released, two jobs arrive.
    await runAttempt(first);
    await submit('while-down-1', 4);
    await submit('while-down-2', 4);
    svc = await startService({ ...placementService, env: env() });
    const placedAgain = await waitFor('both jobs placed after the restart', () => {
      const xs = [...placements.values()].filter((x) => x.jobId.startsWith('while-down-'));
      return xs.length === 2 && xs;
    });
    expect(new Set(placedAgain.map((x) => x.nodeId))).toEqual(new Set(['node-a', 'node-b']));
    for (const p of placedAgain) await runAttempt(p);
    await waitFor('all GPUs free', async () => (await queue()).nodes.every((n) => n.freeGpuIndices.length === 4));
    expect(violations).toEqual([]);
    await storeOracle();
  }, 30_000);
});
