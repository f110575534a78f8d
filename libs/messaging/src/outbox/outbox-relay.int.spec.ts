import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { SqliteEventStore, type EventToAppend } from '#event-store';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { buildForChildProcesses, type ChildBuild } from '../../test-fixtures/child-build.js';
import { waitFor } from '../../test-fixtures/wait-for.js';
import { provision } from '../topology/provision.js';
import { OutboxRelay } from './outbox-relay.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

function events(jobId: string, count: number, from = 0): EventToAppend[] {
  return Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    type: i % 2 === 0 ? 'JobStarted' : 'JobCheckpointed',
    data: { jobId, n: from + i },
    metadata: { correlationId: `corr-${jobId}`, causationId: `cause-${jobId}`, jobId, producer: 'test', occurredAt: '2026-01-01T00:00:00.000Z' },
  }));
}

interface BusMessage {
  seq: number;
  subject: string;
  msgId: string;
  jobId: string;
  body: { eventId: string; position: string; revision: string; data: { n: number } };
}

describe('OutboxRelay (SQLite store → nats-server)', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  let dir: string;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
    dir = await mkdtemp(join(tmpdir(), 'gpunet-relay-'));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function freshStream(name: string, prefix: string): Promise<void> {
    await provision(jsm, { streams: [{ name, subjects: [`${prefix}>`], duplicateWindow: '2m' }] }, { logger });
  }

  async function messageCount(stream: string): Promise<number> {
    return (await jsm.streams.info(stream)).state.messages;
  }

  /** Every message of a stream, in stream order, through an ordered consumer. */
  async function readAll(stream: string): Promise<BusMessage[]> {
    const total = await messageCount(stream);
    const out: BusMessage[] = [];
    if (total === 0) return out;
    const consumer = await js.consumers.get(stream);
    const iter = await consumer.consume({ max_messages: 1000 });
    for await (const m of iter) {
      out.push({
        seq: m.seq,
        subject: m.subject,
        msgId: m.headers?.get('Nats-Msg-Id') ?? '',
        jobId: m.headers?.get('Gpunet-Job-Id') ?? '',
        body: m.json(),
      });
      if (out.length === total) break;
    }
    return out;
  }

  it('publishes every event in position order with Nats-Msg-Id = event id, and resumes from its checkpoint', async () => {
    await freshStream('EVT_A', 'a.evt.');
    const store = new SqliteEventStore({ path: join(dir, 'a.db') });
    for (let j = 0; j < 10; j++) await store.appendToStream(`job-${j}`, events(`job-${j}`, 30));
    const relay = new OutboxRelay(store, nc, { name: 'relay-a', subjectOf: (e) => `a.evt.${e.type}`, logger, maxInFlight: 64, checkpointEvery: 50 });
    await relay.start();
    await waitFor(async () => (await messageCount('EVT_A')) === 300, '300 events on the bus');
    await relay.stop();
    expect(await store.loadCheckpoint('relay-a')).toBe(await store.headPosition());

    const bus = await readAll('EVT_A');
    const stored = await store.readAll({ maxCount: 1000 });
    expect(bus.map((m) => m.msgId)).toEqual(stored.map((e) => e.eventId));
    expect(bus.map((m) => m.body.position)).toEqual(stored.map((e) => e.position.toString()));
    expect(bus[0]).toMatchObject({ subject: 'a.evt.JobStarted', jobId: 'job-0', body: { revision: '0', data: { n: 0 } } });

    // A restarted relay starts at its checkpoint: only the new events are published.
    await store.appendToStream('job-x', events('job-x', 5));
    const again = new OutboxRelay(store, nc, { name: 'relay-a', subjectOf: (e) => `a.evt.${e.type}`, logger });
    await again.start();
    await waitFor(async () => (await messageCount('EVT_A')) === 305, '305 events on the bus');
    await again.stop();
    expect(again.stats).toMatchObject({ startedFrom: stored.at(-1)!.position, published: 5, duplicates: 0 });
    await store.close();
  });

  it('passes over an event larger than the bus takes, saying so, and relays the events after it', async () => {
    await freshStream('EVT_BIG', 'big.evt.');
    const store = new SqliteEventStore({ path: join(dir, 'big.db') });
    const [before] = events('job-big', 1);
    // 1.5 MB of data: over nats-server's default max_payload of 1 MB (an invoice of several thousand lines is).
    const big = { ...events('job-big', 1)[0]!, data: { jobId: 'job-big', lines: 'x'.repeat(1_500_000) } };
    const after = events('job-big', 3, 10);
    await store.appendToStream('job-big', [before!, big, ...after]);
    const logged: Record<string, unknown>[] = [];
    const sink = pino({ level: 'error' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) });
    const relay = new OutboxRelay(store, nc, { name: 'relay-big', subjectOf: (e) => `big.evt.${e.type}`, logger: sink, retryBaseMs: 20, retryMaxMs: 50 });
    try {
      await relay.start();
      await waitFor(async () => relay.position === (await store.headPosition()), 'the relay past every event');
      const bus = await readAll('EVT_BIG');
      expect(bus.map((m) => m.msgId)).toEqual([before!.eventId, ...after.map((e) => e.eventId)]);
      expect(relay.stats).toMatchObject({ tooLarge: 1, restarts: 0 });
      expect(logged).toContainEqual(expect.objectContaining({ eventId: big.eventId, msg: expect.stringMatching(/larger than the bus takes/) }));
    } finally {
      await relay.stop();
      await store.close();
    }
  });

  it('keeps retrying while no stream captures its subjects, then publishes everything once one does', async () => {
    const store = new SqliteEventStore({ path: join(dir, 'nostream.db') });
    await store.appendToStream('job-n', events('job-n', 20));
    const relay = new OutboxRelay(store, nc, { name: 'relay-n', subjectOf: (e) => `n.evt.${e.type}`, logger, retryBaseMs: 20, retryMaxMs: 50, publishTimeoutMs: 300 });
    try {
      await relay.start();
      await waitFor(() => relay.stats.restarts >= 2, 'two failed rounds');
      expect(relay.position).toBe(0n);
      await freshStream('EVT_N', 'n.evt.');
      await waitFor(async () => (await messageCount('EVT_N')) === 20 && relay.position === (await store.headPosition()), 'all 20 published');
    } finally {
      await relay.stop();
    }
    expect((await readAll('EVT_N')).map((m) => m.msgId)).toEqual((await store.readAll()).map((e) => e.eventId));
    await store.close();
  });

  it('resumes after the relay process is killed with SIGKILL mid-stream: every event on the bus exactly once', async () => {
    const build: ChildBuild = await buildForChildProcesses();
    const children: ChildProcess[] = [];
    const dbPath = join(dir, 'kill.db');
    const store = new SqliteEventStore({ path: dbPath });
    try {
      await provision(jsm, { streams: [{ name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'], duplicateWindow: '2m' }] }, { logger });

      const startRelay = async (): Promise<{ child: ChildProcess; startedFrom: bigint }> => {
        const child = spawn(process.execPath, [build.js('libs/messaging/test-fixtures/relay-process.ts'), dbPath, server.url, 'relay-kill'], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        children.push(child);
        const line = await new Promise<string>((resolve, reject) => {
          createInterface({ input: child.stdout! }).once('line', resolve);
          child.once('exit', (code) => reject(new Error(`relay exited with ${code} before it started`)));
        });
        return { child, startedFrom: BigInt((JSON.parse(line) as { startedFrom: string }).startedFrom) };
      };

      const first = await startRelay();
      expect(first.startedFrom).toBe(0n);

      // Appends run while the relays come and go: 200 jobs × 25 events, 5 events per append, interleaved.
      const JOBS = 200;
      const PER_JOB = 25;
      const TOTAL = JOBS * PER_JOB;
      let appended = 0;
      const appending = (async () => {
        for (let round = 0; round < PER_JOB / 5; round++) {
          for (let j = 0; j < JOBS; j++) {
            await store.appendToStream(`job-${j}`, events(`job-${j}`, 5, round * 5));
            appended += 5;
            // A producer's pace (about 1 append per ms), so the kill lands while appends go on.
            await new Promise((r) => setTimeout(r, 1));
          }
        }
      })();

      await waitFor(async () => (await messageCount('GPUNET_EVENTS')) >= 1000, 'the first relay to publish 1000 events', 20_000, 5);
      const killed = new Promise((r) => first.child.once('exit', r));
      first.child.kill('SIGKILL');
      await killed;
      // Killed mid-stream: appends still going, the bus behind the store.
      expect(appended).toBeLessThan(TOTAL);
      expect(await messageCount('GPUNET_EVENTS')).toBeLessThan(TOTAL);
      const checkpointAtKill = (await store.loadCheckpoint('relay-kill')) ?? 0n;

      const second = await startRelay();
      // It resumed from the checkpoint the first one saved, not from the beginning.
      expect(second.startedFrom).toBe(checkpointAtKill);
      expect(second.startedFrom).toBeGreaterThan(0n);

      await appending;
      expect(appended).toBe(TOTAL);
      await waitFor(async () => (await messageCount('GPUNET_EVENTS')) >= TOTAL, `all ${TOTAL} events on the bus`, 30_000, 20);

      const stopped = new Promise<number | null>((r) => second.child.once('exit', r));
      second.child.kill('SIGTERM');
      expect(await stopped).toBe(0);

      expect(await messageCount('GPUNET_EVENTS')).toBe(TOTAL);
      const bus = await readAll('GPUNET_EVENTS');
      const stored = await store.readAll({ maxCount: TOTAL + 1 });
      expect(stored).toHaveLength(TOTAL);
      const busIds = new Set(bus.map((m) => m.msgId));
      expect(busIds.size).toBe(TOTAL);
      expect(stored.every((e) => busIds.has(e.eventId))).toBe(true);
      expect(bus.every((m) => m.msgId === m.body.eventId)).toBe(true);
      // Per job, the bus holds the events in their append order.
      const lastN = new Map<string, number>();
      for (const m of bus) {
        const n = m.body.data.n;
        expect(n).toBe((lastN.get(m.jobId) ?? -1) + 1);
        lastN.set(m.jobId, n);
      }
      expect(await store.loadCheckpoint('relay-kill')).toBe(await store.headPosition());
    } finally {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await store.close();
      await build.remove();
    }
  }, 60_000);
});
