/**
 * The ledger against a real nats-server and a SQLite store file: a fake execution agent appends
 * ComputeHeld / JobFinished to its attempt streams and its own outbox relay publishes them, as
 * the real agent does. The ledger runs as its real process (`node dist/services/ledger/src/main.js`,
 * built by `npm run build`), so SIGKILL is a real crash.
 */
import { querySubject, type EventData, type GetChargesReply, type JobOutcome, type UsageRecorded } from '#contracts';
import { SqliteEventStore, type RecordedEvent } from '#event-store';
import { encodeEvent, OutboxRelay, requestQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import YAML from 'yaml';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { ledgerService } from './ledger.definition.js';
import { UsageRecorderService } from './usage/usage-recorder.service.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/ledger/src/main.js');

/** Prices the ledger under test is configured with (micros per GPU-hour). */
const PRICES = { default: 2_000_000, 'sim-gpu': 3_600_000, A100: 3_500_000 } as const;
const rateOf = (model: string) => (PRICES as Record<string, number>)[model] ?? PRICES.default;

/** The reference charge, computed here independently of the ledger's code: exact, then half up once. */
function referenceAmount(gpus: number, heldAt: string, finishedAt: string, outcome: JobOutcome, model: string): { ms: number; amount: number } {
  if (outcome === 'node_lost') return { ms: 0, amount: 0 };
  const ms = Math.max(0, Date.parse(finishedAt) - Date.parse(heldAt));
  const exact = BigInt(gpus) * BigInt(ms) * BigInt(rateOf(model));
  return { ms, amount: Number((exact * 2n + 3_600_000n) / 7_200_000n) };
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** A copy of deploy/topology.yaml with a short ack wait for the ledger, so a crash's unacked messages come back within the test. */
async function testTopology(dir: string): Promise<string> {
  const topology = YAML.parse(await readFile(join(REPO, 'deploy/topology.yaml'), 'utf8')) as { consumers: { durable: string; ackWait?: string }[] };
  for (const c of topology.consumers) if (c.durable === 'ledger') c.ackWait = '2s';
  const file = join(dir, 'topology.yaml');
  await writeFile(file, YAML.stringify(topology));
  return file;
}

interface LedgerProcess {
  child: ChildProcess;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
}

/** Spawns the built ledger and resolves once it logs `service started`. */
async function spawnLedger(env: Record<string, string>): Promise<LedgerProcess> {
  const child = spawn(process.execPath, [MAIN], { cwd: REPO, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  await Promise.race([
    // A failure guard: at a load average of 25 the ledger twice took over 20 s to start.
    waitFor('the ledger to start', async () => logs.some((l) => l.msg === 'service started'), 60_000).catch((err: Error) => {
      child.kill('SIGKILL');
      throw new Error(`${err.message}:\n${stderr}\n${logs.map((l) => JSON.stringify(l)).join('\n')}`);
    }),
    exited.then((code) => {
      throw new Error(`the ledger exited with ${code} before it started:\n${stderr}\n${logs.map((l) => JSON.stringify(l)).join('\n')}`);
    }),
  ]);
  return { child, logs, exited };
}

describe('ledger process against nats-server and a SQLite store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let env: Record<string, string>;
  let ledger: LedgerProcess;
  let store: SqliteEventStore;
  let nc: NatsConnection;
  let relay: OutboxRelay;
  let agent: EventWriter;

  interface Attempt {
    jobId: string;
    attempt?: number;
    team?: string;
    gpus?: number;
    gpuModel?: string;
    heldAt?: string;
    finishedAt?: string;
    outcome?: JobOutcome;
    held?: boolean;
  }

  /** The fake agent: ComputeHeld then JobFinished in the attempt's stream, with the team in metadata when given. */
  async function runAttempt(a: Attempt): Promise<{ attemptId: string; stream: string }> {
    const nodeId = 'node-t';
    const attemptId = `${a.jobId}-a${a.attempt ?? 1}`;
    const stream = `execution-${nodeId}-attempt-${attemptId}`;
    const gpus = a.gpus ?? 1;
    const ctx = { correlationId: `corr-${a.jobId}`, jobId: a.jobId, ...(a.team ? { team: a.team } : {}) };
    if (a.held !== false) {
      const held: EventData<'ComputeHeld'> = {
        jobId: a.jobId,
        attemptId,
        nodeId,
        gpuIndices: [...Array(gpus).keys()],
        gpuModel: a.gpuModel ?? 'sim-gpu',
        gpus,
        heldAt: a.heldAt ?? '2025-06-01T10:00:00.000Z',
      };
      await agent.append(stream, [{ type: 'ComputeHeld', data: held }], ctx);
    }
    const outcome = a.outcome ?? 'completed';
    const finished: EventData<'JobFinished'> = {
      jobId: a.jobId,
      attemptId,
      nodeId,
      outcome,
      exitCode: outcome === 'completed' ? 0 : null,
      signal: null,
      finishedAt: a.finishedAt ?? '2025-06-01T10:00:01.000Z',
    };
    await agent.append(stream, [{ type: 'JobFinished', data: finished }], ctx);
    return { attemptId, stream };
  }

  const linesOf = async (jobId: string): Promise<UsageRecorded[]> =>
    (await store.readStream(`ledger-usage-${jobId}`)).filter((e) => e.type === 'UsageRecorded').map((e) => e.data as UsageRecorded);
  const allLines = async (): Promise<RecordedEvent[]> => store.readAll({ maxCount: 100_000, filter: { types: ['UsageRecorded'] } });

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first (\`npm test\` does).`);
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-ledger-'));
    const dbPath = join(dir, 'events.db');
    env = {
      GPUNET_NATS_URL: nats.url,
      GPUNET_STORE_URL: `sqlite:${dbPath}`,
      GPUNET_TOPOLOGY_FILE: await testTopology(dir),
      GPUNET_PRICES: JSON.stringify(PRICES),
      GPUNET_CURRENCY: 'EUR',
      GPUNET_LOG_LEVEL: 'info',
    };
    ledger = await spawnLedger(env); // provisions GPUNET_EVENTS before the agent's relay publishes
    store = new SqliteEventStore({ path: dbPath });
    nc = await connect({ servers: nats.url });
    agent = new EventWriter(store, 'execution', systemClock);
    relay = new OutboxRelay(store, nc, { name: 'relay-test-agent', filter: { streamPrefix: 'execution-' }, logger: pino({ level: 'silent' }) });
    await relay.start();
  }, 90_000);

  afterAll(async () => {
    await relay?.stop();
    await nc?.close();
    if (ledger && ledger.child.exitCode === null) {
      ledger.child.kill('SIGTERM');
      await ledger.exited;
    }
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('publishes the configured price list once, as version 1 in force from the epoch', async () => {
    const events = await store.readStream('ledger-pricelist');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'PriceListPublished',
      data: { version: 1, currency: 'EUR', effectiveFrom: '1970-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000, A100: 3_500_000 }, defaultRateMicrosPerGpuHour: 2_000_000 },
      metadata: { producer: 'ledger' },
    });
  });

  it('bills held → finished ms × gpus at the rate of the GPU model, rounded half up once per line', async () => {
    await runAttempt({ jobId: 'job-exact', team: 'team-a', gpus: 2, heldAt: '2025-06-01T10:00:00.000Z', finishedAt: '2025-06-01T10:20:34.567Z' });
    await runAttempt({ jobId: 'job-round', team: 'team-a', gpuModel: 'A100', heldAt: '2025-06-01T10:00:00.000Z', finishedAt: '2025-06-01T10:00:01.026Z' });
    await runAttempt({ jobId: 'job-other-model', team: 'team-a', gpuModel: 'T4', heldAt: '2025-06-01T10:00:00.000Z', finishedAt: '2025-06-01T11:00:00.000Z' });

    const [exact] = await waitFor('the usage line of job-exact', async () => (await linesOf('job-exact')).length > 0 && linesOf('job-exact'));
    // 2 GPUs × 1,234,567 ms × 3,600,000 µ/h ÷ 3,600,000 ms/h = 2,469,134 µ exactly.
    expect(exact).toMatchObject({
      attemptId: 'job-exact-a1',
      team: 'team-a',
      nodeId: 'node-t',
      gpuModel: 'sim-gpu',
      gpus: 2,
      outcome: 'completed',
      heldFrom: '2025-06-01T10:00:00.000Z',
      finishedAt: '2025-06-01T10:20:34.567Z',
      billableMs: 1_234_567,
      rateMicrosPerGpuHour: 3_600_000,
      amountMicros: 2_469_134,
      currency: 'EUR',
      priceListVersion: 1,
      rounding: 'per-line-half-up-micros',
    });
    // 1 A100 × 1,026 ms at 3.50/h = 997.5 µ exactly → 998 (half up).
    const [round] = await waitFor('job-round', async () => (await linesOf('job-round')).length > 0 && linesOf('job-round'));
    expect(round).toMatchObject({ billableMs: 1_026, rateMicrosPerGpuHour: 3_500_000, amountMicros: 998 });
    // A model the list does not name: the default rate, one hour = 2.00.
    const [other] = await waitFor('job-other-model', async () => (await linesOf('job-other-model')).length > 0 && linesOf('job-other-model'));
    expect(other).toMatchObject({ gpuModel: 'T4', rateMicrosPerGpuHour: 2_000_000, amountMicros: 2_000_000 });

    const [recorded] = await store.readStream('ledger-usage-job-exact');
    expect(recorded!.metadata).toMatchObject({ producer: 'ledger', jobId: 'job-exact', team: 'team-a', correlationId: 'corr-job-exact' });
  }, 30_000);

  it('records a lost node at 0 with the reason, and no line for an attempt that never held compute', async () => {
    await runAttempt({ jobId: 'job-lost', team: 'team-a', gpus: 4, outcome: 'node_lost', finishedAt: '2025-06-01T12:00:00.000Z' });
    await runAttempt({ jobId: 'job-never-held', team: 'team-a', held: false, outcome: 'cancelled' });

    const [lost] = await waitFor('job-lost', async () => (await linesOf('job-lost')).length > 0 && linesOf('job-lost'));
    expect(lost).toMatchObject({ outcome: 'node_lost', gpus: 4, billableMs: 0, amountMicros: 0, waivedReason: 'platform_fault' });
    await waitFor('the ledger to say job-never-held has nothing to bill', async () =>
      ledger.logs.some((l) => l.jobId === 'job-never-held' && l.msg === 'attempt never held compute: no usage line, nothing billed'),
    );
    expect(await linesOf('job-never-held')).toEqual([]);
  }, 30_000);

  it("takes the team from intake's JobSubmitted when the agent's events do not carry it", async () => {
    const submitted: EventData<'JobSubmitted'> = {
      jobId: 'job-no-team',
      team: 'team-b',
      spec: {
        work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
        data: { inputs: [] },
        request: { gpus: 1, timeLimitMs: 60_000, network: false },
        outputs: { globs: ['**'] },
      },
      submittedAt: '2025-06-01T09:59:00.000Z',
    };
    await new EventWriter(store, 'intake', systemClock).append('intake-job-job-no-team', [{ type: 'JobSubmitted', data: submitted }], { expectedRevision: 'no_stream' });
    await runAttempt({ jobId: 'job-no-team' });
    const [line] = await waitFor('job-no-team', async () => (await linesOf('job-no-team')).length > 0 && linesOf('job-no-team'));
    expect(line).toMatchObject({ team: 'team-b', amountMicros: 1_000 });
  }, 30_000);

  it('bills a JobFinished delivered twice once', async () => {
    const { stream } = await runAttempt({ jobId: 'job-twice', team: 'team-a' });
    await waitFor('the first line', async () => (await linesOf('job-twice')).length === 1);
    // The same event published again under another Nats-Msg-Id: JetStream stores it as a new
    // message, as when a relay re-publishes after its duplicate window.
    const finished = (await store.readStream(stream)).find((e) => e.type === 'JobFinished')!;
    const encoded = encodeEvent(finished);
    await jetstream(nc).publish(encoded.subject, encoded.payload, { headers: encoded.headers, msgID: `again-${finished.eventId}` });
    // A second attempt of the same job comes after it on the bus; per-job order means the
    // duplicate has been handled once this line exists.
    await runAttempt({ jobId: 'job-twice', attempt: 2, team: 'team-a', heldAt: '2025-06-01T10:05:00.000Z', finishedAt: '2025-06-01T10:05:02.000Z' });
    const lines = await waitFor('the second attempt', async () => (await linesOf('job-twice')).length >= 2 && linesOf('job-twice'));
    expect(lines.map((l) => l.attemptId)).toEqual(['job-twice-a1', 'job-twice-a2']);
  }, 30_000);

  it('killed with SIGKILL mid-stream and restarted, loses nothing and bills nothing twice', async () => {
    const expected = new Map<string, { ms: number; amount: number }>();
    const feed = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const a: Attempt = {
          jobId: `job-crash-${i}`,
          team: 'team-c',
          gpus: 1 + (i % 3),
          gpuModel: i % 4 === 0 ? 'A100' : 'sim-gpu',
          heldAt: '2025-06-02T08:00:00.000Z',
          finishedAt: new Date(Date.parse('2025-06-02T08:00:00.000Z') + 1_000 + i * 7_919).toISOString(),
          outcome: i % 10 === 9 ? 'node_lost' : 'completed',
        };
        expected.set(`job-crash-${i}-a1`, referenceAmount(a.gpus!, a.heldAt!, a.finishedAt!, a.outcome!, a.gpuModel!));
        await runAttempt(a);
      }
    };
    const crashLines = async () => (await allLines()).filter((e) => (e.data as UsageRecorded).team === 'team-c');

    // The agent's relay is held back while 100 attempts finish, then publishes them at once:
    // the ledger gets a burst far faster than it bills, so the kill lands with messages in hand.
    await relay.stop();
    await feed(0, 100);
    relay = new OutboxRelay(store, nc, { name: 'relay-test-agent', filter: { streamPrefix: 'execution-' }, logger: pino({ level: 'silent' }) });
    await relay.start();
    await waitFor('some lines before the crash', async () => (await crashLines()).length >= 10, 20_000);
    ledger.child.kill('SIGKILL');
    expect(await ledger.exited).toBeNull(); // killed by the signal, no exit code
    expect((await crashLines()).length).toBeLessThan(100); // work was waiting: the crash was mid-stream
    await feed(100, 120); // the agent goes on while the ledger is down

    ledger = await spawnLedger(env);
    await waitFor('all 120 lines after the restart', async () => (await crashLines()).length >= 120, 30_000);
    // Messages the dead process held unacked come back after the 2 s ack wait: wait until the
    // ledger's consumer has delivered and had acknowledged every one (not a guessed 3 s), so a
    // second billing of any would be in the store now.
    const jsm = await jetstreamManager(nc);
    await waitFor('the ledger consumer to have nothing pending or unacknowledged', async () => {
      const info = await jsm.consumers.info('GPUNET_EVENTS', 'ledger');
      return info.num_pending === 0 && info.num_ack_pending === 0;
    }, 30_000);

    const after = await crashLines();
    expect(after).toHaveLength(120);
    const byAttempt = new Map(after.map((e) => [(e.data as UsageRecorded).attemptId, e.data as UsageRecorded]));
    expect(byAttempt.size).toBe(120);
    for (const [attemptId, want] of expected) {
      expect({ attemptId, ms: byAttempt.get(attemptId)?.billableMs, amount: byAttempt.get(attemptId)?.amountMicros }).toEqual({ attemptId, ...want });
    }
    expect(await store.readStream('ledger-pricelist')).toHaveLength(1); // a restart publishes no second list
  }, 90_000);

  it('GetCharges totals equal a recomputation from the agent events in the store', async () => {
    // The reference: every attempt of the store's execution streams with ComputeHeld and
    // JobFinished, priced here; the team from the agent's metadata, else intake's JobSubmitted.
    const agentEvents = await store.readAll({ maxCount: 100_000, filter: { streamPrefix: 'execution-' } });
    const submitted = await store.readAll({ maxCount: 100_000, filter: { types: ['JobSubmitted'] } });
    const teamOfJob = new Map(submitted.map((e) => [(e.data as { jobId: string }).jobId, (e.data as { team: string }).team]));
    const attempts = new Map<string, { held?: RecordedEvent; finished?: RecordedEvent }>();
    for (const e of agentEvents) {
      const slot = attempts.get(e.streamId) ?? {};
      if (e.type === 'ComputeHeld') slot.held = e;
      if (e.type === 'JobFinished') slot.finished = e;
      attempts.set(e.streamId, slot);
    }
    const reference = new Map<string, { amount: number; ms: number; lines: number }>();
    for (const { held, finished } of attempts.values()) {
      if (!held || !finished) continue;
      const h = held.data as EventData<'ComputeHeld'>;
      const f = finished.data as EventData<'JobFinished'>;
      const team = held.metadata.team ?? teamOfJob.get(h.jobId)!;
      const { ms, amount } = referenceAmount(h.gpus, h.heldAt, f.finishedAt, f.outcome, h.gpuModel);
      const sum = reference.get(team) ?? { amount: 0, ms: 0, lines: 0 };
      reference.set(team, { amount: sum.amount + amount, ms: sum.ms + ms, lines: sum.lines + 1 });
    }
    expect([...reference.keys()].sort()).toEqual(['team-a', 'team-b', 'team-c']);

    for (const [team, want] of reference) {
      const reply = await requestQuery<GetChargesReply>(nc, querySubject('ledger', 'GetCharges'), { principal: { keyId: 'k', team, role: 'producer', allTeams: false } }, {}, { timeoutMs: 5_000 });
      expect({ team, lines: reply.lines.length, totals: reply.totals, billableMs: reply.billableMs }).toEqual({
        team,
        lines: want.lines,
        totals: [{ currency: 'EUR', amountMicros: want.amount }],
        billableMs: want.ms,
      });
    }

    const job = await requestQuery<GetChargesReply>(nc, querySubject('ledger', 'GetCharges'), { principal: { keyId: 'k', team: 'team-a', role: 'producer', allTeams: false }, jobId: 'job-twice' });
    expect(job.lines.map((l) => l.attemptId)).toEqual(['job-twice-a1', 'job-twice-a2']);
    expect(job.totals).toEqual([{ currency: 'EUR', amountMicros: 1_000 + 2_000 }]);
    const foreign = await requestQuery<GetChargesReply>(nc, querySubject('ledger', 'GetCharges'), { principal: { keyId: 'k', team: 'team-a', role: 'producer', allTeams: false }, jobId: 'job-no-team' });
    expect(foreign).toEqual({ team: 'team-a', lines: [], totals: [], billableMs: 0 });
    const window = await requestQuery<GetChargesReply>(nc, querySubject('ledger', 'GetCharges'), { principal: { keyId: 'k', team: 'team-a', role: 'producer', allTeams: false }, from: '2025-06-01T11:00:00Z' });
    expect(window.lines.map((l) => l.jobId).sort()).toEqual(['job-lost', 'job-other-model']);
  }, 30_000);
});

describe('usage recorder in process, the inbox bypassed (as after a crash between append and ack)', () => {
  let nats: TestNatsServer;
  let dir: string;
  let running: RunningService;

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-ledger-inproc-'));
    running = await startService({
      ...ledgerService,
      env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`, GPUNET_LOG_LEVEL: 'silent' },
    });
  }, 30_000);
  afterAll(async () => {
    await running?.stop();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('handles the same JobFinished again, and twice at once, and appends one line', async () => {
    const { store, logger } = running.ctx;
    const agent = new EventWriter(store, 'execution', systemClock);
    const stream = 'execution-node-x-attempt-job-x-a1';
    const ctx = { correlationId: 'corr-x', team: 'team-x' };
    await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId: 'job-x', attemptId: 'job-x-a1', nodeId: 'node-x', gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: '2025-06-01T10:00:00.000Z' } }], ctx);
    const finishedData: EventData<'JobFinished'> = { jobId: 'job-x', attemptId: 'job-x-a1', nodeId: 'node-x', outcome: 'completed', exitCode: 0, signal: null, finishedAt: '2025-06-01T10:00:00.250Z' };
    await agent.append(stream, [{ type: 'JobFinished', data: finishedData }], ctx);
    const finished = (await store.readStream(stream))[1]!;

    const recorder = running.app.get(UsageRecorderService);
    const first = await recorder.onJobFinished(finishedData, finished, logger);
    const again = await recorder.onJobFinished(finishedData, finished, logger);
    expect(first).toMatchObject({ kind: 'recorded', line: { amountMicros: 250 } });
    expect(again).toEqual({ kind: 'already_recorded', line: (first as { line: UsageRecorded }).line });

    // Default prices at work here: sim-gpu 3.60/h is one micro per GPU-ms.
    const other = { ...finishedData, attemptId: 'job-x-a2', finishedAt: '2025-06-01T10:00:01.000Z' };
    const stream2 = 'execution-node-x-attempt-job-x-a2';
    await agent.append(stream2, [{ type: 'ComputeHeld', data: { jobId: 'job-x', attemptId: 'job-x-a2', nodeId: 'node-x', gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: '2025-06-01T10:00:00.000Z' } }], ctx);
    await agent.append(stream2, [{ type: 'JobFinished', data: other }], ctx);
    const finished2 = (await store.readStream(stream2))[1]!;
    const both = await Promise.all([recorder.onJobFinished(other, finished2, logger), recorder.onJobFinished(other, finished2, logger)]);
    // One of them records the line. The other either finds it (`already_recorded`) or, when both
    // computed byte-identical lines (same recordedAt millisecond), its append is the store's
    // idempotent replay of the first and it reports `recorded` too: either way one line, below.
    const kinds = both.map((o) => o.kind).sort();
    expect([['already_recorded', 'recorded'], ['recorded', 'recorded']]).toContainEqual(kinds);

    const lines = (await store.readStream('ledger-usage-job-x')).map((e) => e.data as UsageRecorded);
    expect(lines.map((l) => [l.attemptId, l.amountMicros])).toEqual([
      ['job-x-a1', 250],
      ['job-x-a2', 1_000],
    ]);
  }, 30_000);
});
