/**
 * The JobEnded writer in a real ledger (in process, its JetStream consumer and relay) against a
 * real nats-server and a SQLite store: other services' facts are appended to their own streams and
 * published by their own outbox relays, as the services do, and the ledger is expected to record
 * exactly one JobEnded per job once nothing more happens to it — redelivered, raced, restarted.
 */
import type { EventData, EventType } from '#contracts';
import { SqliteEventStore, type RecordedEvent } from '#event-store';
import { encodeEvent, OutboxRelay } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { until } from '../../../../test/support/poll.js';
import { ledgerService } from '../ledger.definition.js';
import { JobEndRecorderService } from './job-end-recorder.service.js';

const T = (s: number) => new Date(Date.parse('2025-06-01T10:00:00.000Z') + s).toISOString();
const SPEC: EventData<'JobSubmitted'>['spec'] = {
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
};

describe('JobEnded writer in the ledger, against nats-server and a SQLite store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let dbPath: string;
  let ledger: RunningService | undefined;
  let store: SqliteEventStore;
  let nc: NatsConnection;
  const relays: OutboxRelay[] = [];
  const writers = new Map<string, EventWriter>();

  const startLedger = async () => {
    ledger = await startService({ ...ledgerService, env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${dbPath}`, GPUNET_LOG_LEVEL: 'silent' } });
  };

  /** Appends one fact as `producer` would, to the stream it writes. */
  async function record<T extends EventType>(producer: string, stream: string, type: T, data: EventData<T>, team = 'team-a'): Promise<void> {
    let writer = writers.get(producer);
    if (!writer) writers.set(producer, (writer = new EventWriter(store, producer, systemClock)));
    const jobId = (data as { jobId?: string }).jobId;
    await writer.append(stream, [{ type, data } as never], { correlationId: `corr-${jobId ?? 'x'}`, ...(jobId ? { jobId } : {}), team });
  }

  const submit = (jobId: string, retry?: EventData<'JobSubmitted'>['spec']['retry']) =>
    record('intake', `intake-job-${jobId}`, 'JobSubmitted', { jobId, team: 'team-a', spec: { ...SPEC, ...(retry ? { retry } : {}) }, submittedAt: T(0) });
  const place = (jobId: string, n: number, nodeId = 'node-1') =>
    record('placement', `placement-job-${jobId}`, 'JobPlaced', { jobId, attemptId: `${jobId}-a${n}`, attempt: n, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', placedAt: T(1) });
  /** The agent's facts of one attempt, up to (not including) its release. */
  async function run(jobId: string, n: number, outcome: EventData<'JobFinished'>['outcome'], ms: number, options: { exitCode?: number | null; nodeId?: string; outputs?: string[] } = {}): Promise<void> {
    const nodeId = options.nodeId ?? 'node-1';
    const attemptId = `${jobId}-a${n}`;
    const stream = `execution-${nodeId}-attempt-${attemptId}`;
    await record('execution', stream, 'ComputeHeld', { jobId, attemptId, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: T(10) });
    await record('execution', stream, 'JobFinished', { jobId, attemptId, nodeId, outcome, exitCode: options.exitCode ?? (outcome === 'completed' ? 0 : 1), signal: null, finishedAt: T(10 + ms) });
    if (options.outputs) {
      const files = options.outputs.map((path) => ({ path, sha256: 'b'.repeat(64), size: 4 }));
      await record('storage', `storage-job-${jobId}`, 'OutputsStored', { jobId, attemptId, files, totalBytes: 4 * files.length, truncated: false, rejected: [], logs: [], storedAt: T(20 + ms) });
    }
  }
  const release = (jobId: string, n: number, nodeId = 'node-1') =>
    record('execution', `execution-${nodeId}-attempt-${jobId}-a${n}`, 'ComputeReleased', { jobId, attemptId: `${jobId}-a${n}`, nodeId, gpuIndices: [0], releasedAt: T(99_000) });

  const endsOf = async (jobId: string): Promise<RecordedEvent[]> => store.readAll({ maxCount: 100, filter: { jobId, types: ['JobEnded'] } });
  const ended = (jobId: string) => until(`the JobEnded of ${jobId}`, async () => ((await endsOf(jobId)).length > 0 ? (await endsOf(jobId))[0]!.data as EventData<'JobEnded'> : undefined), { timeoutMs: 20_000 });
  const PREFIXES = ['intake-', 'placement-', 'execution-', 'storage-'];
  /** Every relay published every event of its streams, and the ledger handled all of them: its consumer has nothing pending. */
  const settled = async () => {
    await until('the relays to publish every event', async () => {
      for (const prefix of PREFIXES) {
        const last = (await store.readAll({ maxCount: 100_000, filter: { streamPrefix: prefix } })).at(-1)?.position ?? 0n;
        if (((await store.loadCheckpoint(`relay-test-${prefix}`)) ?? 0n) < last) return undefined;
      }
      return true;
    }, { timeoutMs: 20_000 });
    // A message a stopped ledger had been delivered but not acknowledged is delivered again only
    // after the consumer's ack wait (30 s, deploy/topology.yaml): wait past it.
    await until('the ledger to handle every published event', async () => {
      const info = await (await jetstream(nc).jetstreamManager()).consumers.info('GPUNET_EVENTS', 'ledger');
      return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
    }, { timeoutMs: 50_000 });
  };

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-job-end-'));
    dbPath = join(dir, 'events.db');
    await startLedger(); // provisions GPUNET_EVENTS before the relays publish
    store = new SqliteEventStore({ path: dbPath });
    nc = await connect({ servers: nats.url });
    for (const prefix of PREFIXES) {
      const relay = new OutboxRelay(store, nc, { name: `relay-test-${prefix}`, filter: { streamPrefix: prefix }, logger: pino({ level: 'silent' }), pollIntervalMs: 20 });
      await relay.start();
      relays.push(relay);
    }
  }, 30_000);

  afterAll(async () => {
    for (const r of relays) await r.stop();
    await nc?.close();
    await ledger?.stop();
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('records one JobEnded after the release of a completed run, with its usage total and outputs, and none before', async () => {
    await submit('job-ok');
    await place('job-ok', 1);
    await run('job-ok', 1, 'completed', 1_234, { outputs: ['model.bin', 'log.txt'] });
    await until('the usage line', async () => ((await store.readStream('ledger-usage-job-ok')).length > 0 ? true : undefined));
    await settled();
    expect(await endsOf('job-ok')).toEqual([]); // GPUs still held: not over

    await release('job-ok', 1);
    const end = await ended('job-ok');
    expect(end).toMatchObject({
      jobId: 'job-ok',
      team: 'team-a',
      outcome: 'completed',
      attempts: 1,
      exitCode: 0,
      // sim-gpu at 3.60/h (the default list) is one micro per GPU-ms.
      billed: { billableMs: 1_234, totals: [{ currency: 'EUR', amountMicros: 1_234 }] },
      outputs: { files: [{ path: 'model.bin' }, { path: 'log.txt' }], totalBytes: 8, rejected: 0 },
    });
    const [recorded] = await endsOf('job-ok');
    expect(recorded).toMatchObject({ streamId: 'ledger-job-job-ok', revision: 0n, metadata: { producer: 'ledger', jobId: 'job-ok', team: 'team-a', correlationId: 'corr-job-ok' } });
  }, 30_000);

  it('records it once however often the last event is delivered, and when two looks race', async () => {
    await submit('job-dup');
    await place('job-dup', 1);
    await run('job-dup', 1, 'failed', 500, { exitCode: 2 });
    await release('job-dup', 1);
    await ended('job-dup');
    // The release published again under another Nats-Msg-Id, as a relay does after its duplicate window.
    const released = (await store.readStream('execution-node-1-attempt-job-dup-a1')).find((e) => e.type === 'ComputeReleased')!;
    const encoded = encodeEvent(released);
    await jetstream(nc).publish(encoded.subject, encoded.payload, { headers: encoded.headers, msgID: `again-${released.eventId}` });
    await settled();
    // Looks at it directly, several at once, as a redelivery racing a restart would.
    const recorder = ledger!.app.get(JobEndRecorderService);
    const looks = await Promise.all([1, 2, 3].map(() => recorder.check('job-dup', undefined, ledger!.ctx.logger)));
    expect(looks.map((l) => l.kind)).toEqual(['already_recorded', 'already_recorded', 'already_recorded']);
    expect(await endsOf('job-dup')).toHaveLength(1);
    expect((await endsOf('job-dup'))[0]!.data).toMatchObject({ outcome: 'failed', exitCode: 2, billed: { billableMs: 500 } });
  }, 30_000);

  it('a job whose looks race before any is recorded still gets one JobEnded', async () => {
    // Written with the relays' events ending here, then looked at many times at once.
    await submit('job-race');
    await record('placement', 'placement-job-job-race', 'JobWithdrawn', { jobId: 'job-race', team: 'team-a', outcome: 'deadline', message: 'too late', withdrawnAt: T(5) });
    const recorder = ledger!.app.get(JobEndRecorderService);
    const looks = await Promise.all(Array.from({ length: 6 }, () => recorder.check('job-race', undefined, ledger!.ctx.logger)));
    expect(looks.filter((l) => l.kind === 'recorded').length).toBeLessThanOrEqual(1);
    await settled();
    expect(await endsOf('job-race')).toHaveLength(1);
    expect((await endsOf('job-race'))[0]!.data).toMatchObject({ outcome: 'deadline', reason: 'too late', attempts: 0, billed: { billableMs: 0, totals: [] }, outputs: null });
  }, 30_000);

  it('ends a retried job after its last attempt only, billed for both; a cancel while queued and a failed staging at once', async () => {
    await submit('job-retry', { exitCodes: [3], maxAttempts: 2 });
    await place('job-retry', 1);
    await run('job-retry', 1, 'failed', 100, { exitCode: 3 });
    await release('job-retry', 1);
    await record('placement', 'placement-job-job-retry', 'JobRequeued', { jobId: 'job-retry', previousAttemptId: 'job-retry-a1', reason: 'retry', nextAttempt: 2, requeuedAt: T(200) });
    await place('job-retry', 2);
    await settled();
    expect(await endsOf('job-retry')).toEqual([]);
    await run('job-retry', 2, 'completed', 300);
    await release('job-retry', 2);
    expect(await ended('job-retry')).toMatchObject({ outcome: 'completed', attempts: 2, billed: { billableMs: 400, totals: [{ currency: 'EUR', amountMicros: 400 }] } });

    await submit('job-cancel');
    await record('intake', 'intake-job-job-cancel', 'JobCancelRequested', { jobId: 'job-cancel', team: 'team-a', requestedAt: T(1) });
    await record('placement', 'placement-job-job-cancel', 'JobWithdrawn', { jobId: 'job-cancel', team: 'team-a', outcome: 'cancelled', message: 'Cancelled while queued; it never held compute.', withdrawnAt: T(2) });
    expect(await ended('job-cancel')).toMatchObject({ outcome: 'cancelled', attempts: 0, billed: { billableMs: 0, totals: [] }, outputs: null });

    await submit('job-staging');
    await record('storage', 'storage-job-job-staging', 'StagingFailed', { jobId: 'job-staging', reason: 'blob_missing', inputName: 'data', message: 'upload it first', failedAt: T(1) });
    expect(await ended('job-staging')).toMatchObject({ outcome: 'failed', reason: 'upload it first', attempts: 0 });
  }, 40_000);

  it('a lost node: not over at the loss, over at placement\'s withdrawal after a cancel, without the lost attempt ever releasing', async () => {
    await submit('job-lost');
    await place('job-lost', 1, 'node-gone');
    await record('execution', 'execution-node-gone-attempt-job-lost-a1', 'ComputeHeld', { jobId: 'job-lost', attemptId: 'job-lost-a1', nodeId: 'node-gone', gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: T(10) });
    await record('placement', 'placement-node-node-gone', 'NodeLost', { nodeId: 'node-gone', reason: 'heartbeat_timeout', lastSeenAt: T(20), detectedAt: T(30), affectedAttempts: [{ jobId: 'job-lost', attemptId: 'job-lost-a1' }] });
    await record('intake', 'intake-job-job-lost', 'JobCancelRequested', { jobId: 'job-lost', team: 'team-a', requestedAt: T(40) });
    await settled();
    expect(await endsOf('job-lost')).toEqual([]);
    await record('placement', 'placement-job-job-lost', 'JobWithdrawn', { jobId: 'job-lost', team: 'team-a', outcome: 'cancelled', message: 'Cancelled after attempt 1 ended node_lost', withdrawnAt: T(50) });
    expect(await ended('job-lost')).toMatchObject({ outcome: 'cancelled', attempts: 1, billed: { billableMs: 0, totals: [] } });
  }, 30_000);

  it('a ledger down when the job ends records its JobEnded once it is back, and a restart records none again', async () => {
    await submit('job-down');
    await place('job-down', 1);
    await run('job-down', 1, 'timeout', 700);
    await until('the usage line', async () => ((await store.readStream('ledger-usage-job-down')).length > 0 ? true : undefined));
    await ledger!.stop();
    ledger = undefined;
    await release('job-down', 1);
    await until('the release to be published while nobody consumes', async () => ((await store.loadCheckpoint('relay-test-execution-')) ?? 0n) >= (await store.headPosition()) || undefined);
    expect(await endsOf('job-down')).toEqual([]);
    await startLedger();
    expect(await ended('job-down')).toMatchObject({ outcome: 'timeout', reason: 'stopped at its time limit', billed: { billableMs: 700 } });
    await ledger!.stop();
    await startLedger();
    await settled();
    for (const jobId of ['job-ok', 'job-dup', 'job-race', 'job-retry', 'job-cancel', 'job-staging', 'job-lost', 'job-down']) expect({ jobId, ends: (await endsOf(jobId)).length }).toEqual({ jobId, ends: 1 });
  }, 120_000);
});
