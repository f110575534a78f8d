/**
 * The ledger split into two event partitions (decision 0030) against a real nats-server and a
 * SQLite or PostgreSQL store: other services' facts are appended to their streams and published by outbox
 * relays that put each event on its partition, as every relay of such a network does. Partition
 * 0's process runs first alone: it bills exactly the jobs of partition 0, and partition 1's jobs
 * wait untouched on the stream for their own process. Then partition 1's process starts and bills
 * the rest: every attempt once, one JobEnded per job, invoices of several teams equal to their
 * replay and to a recomputation from the store.
 */
import { eventPartition, parseEventSubject, Queries, type EventData, type EventType, type ReplayInvoiceReply } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay, requestQuery, type BusEvent } from '#messaging';
import { partitionedEventSubject } from '#contracts';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { jetstream, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import YAML from 'yaml';
import { ledgerService } from '../../services/ledger/src/ledger.definition.js';
import { recomputeUsage, totalsByCurrency } from '../support/billing.js';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PARTITIONS = 2;
const TEAMS = ['team-a', 'team-b', 'team-c'];
const JOBS_PER_TEAM = 6;
const START = Date.now() - 60 * 60_000;
const T = (ms: number) => new Date(START + ms).toISOString();
const SPEC: EventData<'JobSubmitted'>['spec'] = {
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
};
const PREFIXES = ['intake-', 'placement-', 'execution-'];

describe.each(['sqlite', 'postgres'] as const)('a ledger in two event partitions, against nats-server and a %s store', (backend) => {
  let nats: TestNatsServer;
  let dir: string;
  let db: TestDatabase | undefined;
  let storeUrl: string;
  let topologyFile: string;
  let store: EventStore;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const ledgers: RunningService[] = [];
  const relays: OutboxRelay[] = [];
  const writers = new Map<string, EventWriter>();
  const jobs = TEAMS.flatMap((team) => Array.from({ length: JOBS_PER_TEAM }, (_, i) => ({ team, jobId: `job-${team}-${i}` })));
  const partitionOf = (jobId: string) => eventPartition(jobId, PARTITIONS);

  const startLedger = async (partition: number) => {
    const env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_TOPOLOGY_FILE: topologyFile, GPUNET_PARTITION: `${partition}/${PARTITIONS}`, GPUNET_LOG_LEVEL: 'silent' };
    const ledger = await startService({ ...ledgerService, env });
    ledgers.push(ledger);
    return ledger;
  };

  async function record<T extends EventType>(producer: string, stream: string, type: T, data: EventData<T>, team: string): Promise<void> {
    let writer = writers.get(producer);
    if (!writer) writers.set(producer, (writer = new EventWriter(store, producer, systemClock)));
    const jobId = (data as { jobId: string }).jobId;
    await writer.append(stream, [{ type, data } as never], { correlationId: `corr-${jobId}`, jobId, team });
  }

  /** A job's whole life as its services record it: submitted, placed, held, finished, released. */
  async function live(team: string, jobId: string, ms: number): Promise<void> {
    const attemptId = `${jobId}-a1`;
    const nodeId = `node-${ms % 3}`;
    const stream = `execution-${nodeId}-attempt-${attemptId}`;
    await record('intake', `intake-job-${jobId}`, 'JobSubmitted', { jobId, team, spec: SPEC, submittedAt: T(0) }, team);
    await record('placement', `placement-job-${jobId}`, 'JobPlaced', { jobId, attemptId, attempt: 1, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', placedAt: T(1) }, team);
    await record('execution', stream, 'ComputeHeld', { jobId, attemptId, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: T(10) }, team);
    await record('execution', stream, 'JobFinished', { jobId, attemptId, nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: T(10 + ms) }, team);
    await record('execution', stream, 'ComputeReleased', { jobId, attemptId, nodeId, gpuIndices: [0], releasedAt: T(20 + ms) }, team);
  }

  const endsOf = async (jobId: string): Promise<RecordedEvent[]> => store.readAll({ maxCount: 100, filter: { jobId, types: ['JobEnded'] } });
  const linesOf = async (jobId: string): Promise<RecordedEvent[]> => store.readAll({ maxCount: 100, filter: { jobId, types: ['UsageRecorded'] } });
  /** The partition's consumer has handled everything the relays published to it. */
  const drained = (partition: number) =>
    until(`ledger-p${partition} to handle its partition`, async () => {
      const info = await jsm.consumers.info('GPUNET_EVENTS', `ledger-p${partition}`);
      return info.num_pending === 0 && info.num_ack_pending === 0 ? info : undefined;
    }, { timeoutMs: 30_000 });
  const published = () =>
    until('the relays to publish every event', async () => {
      for (const prefix of PREFIXES) {
        const last = (await store.readAll({ maxCount: 100_000, filter: { streamPrefix: prefix } })).at(-1)?.position ?? 0n;
        if (((await store.loadCheckpoint(`relay-test-${prefix}`)) ?? 0n) < last) return undefined;
      }
      return true;
    }, { timeoutMs: 30_000 });

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-partitions-'));
    if (backend === 'postgres') db = await createTestDatabase('gpunet_partitions');
    storeUrl = db?.url ?? `sqlite:${join(dir, 'events.db')}`;
    // deploy/topology.yaml as it is, with the events split in two.
    const topology = YAML.parse(await readFile(join(REPO, 'deploy/topology.yaml'), 'utf8')) as { eventPartitions: number };
    topology.eventPartitions = PARTITIONS;
    topologyFile = join(dir, 'topology.yaml');
    await writeFile(topologyFile, YAML.stringify(topology));
    await startLedger(0); // provisions GPUNET_EVENTS (and ledger-p0) before the relays publish
    store = await openEventStore(storeUrl);
    nc = await connect({ servers: nats.url });
    jsm = await jetstream(nc).jetstreamManager();
    for (const prefix of PREFIXES) {
      const relay = new OutboxRelay(store, nc, {
        name: `relay-test-${prefix}`,
        filter: { streamPrefix: prefix },
        subjectOf: (e: BusEvent) => partitionedEventSubject(e.type, e.metadata, PARTITIONS),
        logger: pino({ level: 'silent' }),
        pollIntervalMs: 20,
      });
      await relay.start();
      relays.push(relay);
    }
  }, 60_000);

  afterAll(async () => {
    for (const r of relays) await r.stop();
    await nc?.close();
    for (const l of ledgers) await l.stop();
    await store?.close();
    await nats?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('refuses a partition the topology does not have, naming GPUNET_PARTITION', async () => {
    const env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_TOPOLOGY_FILE: topologyFile, GPUNET_LOG_LEVEL: 'silent' };
    await expect(startService({ ...ledgerService, env: { ...env, GPUNET_PARTITION: '0/3' } })).rejects.toThrow(/GPUNET_PARTITION: names 3 partitions .* eventPartitions is 2/);
    await expect(startService({ ...ledgerService, env })).rejects.toThrow(/GPUNET_PARTITION: the topology splits the events into 2 partitions/);
  }, 30_000);

  it('bills in each partition exactly its own jobs, every attempt once, and invoices equal their replay', async () => {
    // Both partitions have jobs of every team (the job ids are fixed, so this is a fact about them, checked here).
    for (const team of TEAMS) expect(new Set(jobs.filter((j) => j.team === team).map((j) => partitionOf(j.jobId)))).toEqual(new Set([0, 1]));
    await Promise.all(jobs.map((j, i) => live(j.team, j.jobId, 1_000 + 137 * i)));
    await published();

    // Every event is on its job's partition (the relays' subjects), and the consumer of partition 0 filters that partition only.
    const subjects = (await jsm.streams.info('GPUNET_EVENTS', { subjects_filter: '>' })).state.subjects ?? {};
    for (const subject of Object.keys(subjects)) {
      const parsed = parseEventSubject(subject)!;
      expect(parsed.partition).toBe(eventPartition(parsed.jobId, PARTITIONS));
    }
    expect((await jsm.consumers.info('GPUNET_EVENTS', 'ledger-p0')).config.filter_subject).toBe('gpunet.evt.*.*.*.0');

    // Partition 0 alone: its jobs end billed; partition 1's jobs are not touched.
    await drained(0);
    for (const { jobId } of jobs.filter((j) => partitionOf(j.jobId) === 0)) {
      await until(`the JobEnded of ${jobId}`, async () => ((await endsOf(jobId)).length === 1 ? true : undefined), { timeoutMs: 30_000 });
    }
    for (const { jobId } of jobs.filter((j) => partitionOf(j.jobId) === 1)) {
      expect({ jobId, lines: (await linesOf(jobId)).length, ends: (await endsOf(jobId)).length }).toEqual({ jobId, lines: 0, ends: 0 });
    }

    // Partition 1's process starts on its own durable and bills the rest. It leads its own
    // partition (decision 0029): partition 0's leader does not keep it waiting as a standby.
    const second = await startLedger(1);
    expect([ledgers[0]!.leadership, second.leadership].map((l) => [l?.role, l?.term])).toEqual([['ledger-p0', 1], ['ledger-p1', 1]]);
    await drained(1);
    for (const { jobId } of jobs) await until(`the JobEnded of ${jobId}`, async () => ((await endsOf(jobId)).length > 0 ? true : undefined), { timeoutMs: 30_000 });
    await published();
    await drained(0);
    await drained(1);

    // Exactly once: one usage line per attempt, one JobEnded per job, as recomputed from the store.
    const events = await store.readAll({ maxCount: 100_000 });
    const expected = recomputeUsage(events);
    expect(expected.size).toBe(jobs.length);
    for (const { jobId } of jobs) {
      const lines = (await linesOf(jobId)).map((e) => e.data as EventData<'UsageRecorded'>);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ attemptId: `${jobId}-a1`, amountMicros: expected.get(`${jobId}-a1`)!.amountMicros });
      expect(await endsOf(jobId)).toHaveLength(1);
    }

    // Each team's invoice (drafts of the open month) replays identically, and its total is the recomputation's.
    for (const team of TEAMS) {
      const months = new Set(jobs.filter((j) => j.team === team).map((j) => ((events.find((e) => e.type === 'JobFinished' && e.metadata.jobId === j.jobId)!.data as EventData<'JobFinished'>).finishedAt).slice(0, 7)));
      for (const month of months) {
        const principal = { keyId: 'billing', team, role: 'billing', allTeams: false };
        const q = Queries.ReplayInvoice;
        // Asked twice: the ledger's queue group may answer from either partition's process; both hold the whole billing fold.
        for (let ask = 0; ask < 2; ask++) {
          const replay = await requestQuery<ReplayInvoiceReply>(nc, q.subject, { invoiceId: `inv-${team}-${month}`, principal }, { request: q.schema, response: q.replySchema });
          expect({ team, month, identical: replay.identical, summary: replay.summary }).toMatchObject({ team, month, identical: true });
          const mine = [...expected.values()].filter((l) => l.jobId.startsWith(`job-${team}-`));
          expect(replay.totals.map((t) => [t.currency, t.recordedMicros])).toEqual(Object.entries(totalsByCurrency(mine.map((l) => ({ amountMicros: l.amountMicros, currency: l.currency })))));
        }
      }
    }
  }, 120_000);
});
