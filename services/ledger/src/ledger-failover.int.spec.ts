/**
 * The ledger's fail-over (decision 0029: one leader per event partition, here the unpartitioned
 * role `ledger`) with real processes (`node dist/services/ledger/src/main.js`, built by
 * `npm run build`) on one nats-server and one SQLite store file. A fake agent appends ComputeHeld
 * and JobFinished and its own relay publishes them, as the real agent's reports do.
 *
 * - SIGKILL the leader: the standby bills an attempt that ended after the kill within the lease
 *   bound, once, and the month's invoice replays identically.
 * - SIGSTOP the next leader until a third process took over, SIGCONT it: it bills nothing more
 *   and steps down.
 * - A leader the store has moved past (a term recorded behind its back, as a standby does while
 *   the leader is paused): the store refuses its next append, it steps down, and the attempt in
 *   hand is billed once, by whoever leads next.
 */
import { Queries, type EventData, type InvoiceView, type ReplayInvoiceReply, type UsageRecorded } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay, requestQuery } from '#messaging';
import { elect, EventWriter, leadershipStreamId, systemClock } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import YAML from 'yaml';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { logged, ServiceProcesses, waitFor, type ServiceProcess } from '../../../test/support/service-process.js';
import { monthOf } from './domain/index.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/ledger/src/main.js');
const quiet = pino({ level: 'silent' });
/** The default lease (GPUNET_LEASE_MS 6 s, renewed every 2 s): the bound the issue asks for. */
const TAKEOVER_BOUND_MS = 10_000;
/** sim-gpu at 3.60 per GPU-hour: one micro per GPU-ms, so an attempt's amount is its held ms × gpus. */
const PRICES = { default: 3_600_000 };

describe('ledger fail-over: a leader and standbys on one lease per partition, fenced in the store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let env: Record<string, string>;
  let store: EventStore;
  let agent: EventWriter;
  let relay: OutboxRelay;
  let nc: NatsConnection;
  const processes = new ServiceProcesses(MAIN, REPO);
  const now = Date.now();
  const month = monthOf(now);
  /** Times in this month, before now: the team's draft invoice holds every line. */
  const at = (offsetMs: number) => new Date(Math.max(now - 3_600_000, Date.parse(`${month}-01T00:00:00.000Z`)) + offsetMs).toISOString();

  const spawnLedger = (name: string): ServiceProcess => processes.spawn(name, { ...env, GPUNET_INSTANCE: `ledger-${name}` });
  const billed = (l: ServiceProcess, jobId: string, from = 0) => l.logs.slice(from).some((x) => x.msg === 'usage recorded' && x.jobId === jobId);

  /** The fake agent: an attempt of `ms` on one GPU, ended now (its JobFinished appended and published). */
  async function attempt(jobId: string, ms: number): Promise<void> {
    const attemptId = `${jobId}-a1`;
    const stream = `execution-node-1-attempt-${attemptId}`;
    const ctx = { correlationId: `corr-${jobId}`, team: 'team-a' };
    await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId, attemptId, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: at(0) } }], ctx);
    await agent.append(stream, [{ type: 'JobFinished', data: { jobId, attemptId, nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: at(ms) } }], ctx);
  }
  const linesOf = async (jobId: string): Promise<RecordedEvent[]> => (await store.readStream(`ledger-usage-${jobId}`)).filter((e) => e.type === 'UsageRecorded');
  const terms = async () => (await store.readStream(leadershipStreamId('ledger'))).map((e) => e as RecordedEvent<'LeaderElected', EventData<'LeaderElected'>>);

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first.`);
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-ledger-failover-'));
    // A short ack wait: what a dead or deposed process held comes back within the test.
    const topology = YAML.parse(await readFile(join(REPO, 'deploy/topology.yaml'), 'utf8')) as { consumers: { durable: string; ackWait?: string }[] };
    for (const c of topology.consumers) if (c.durable === 'ledger') c.ackWait = '2s';
    await writeFile(join(dir, 'topology.yaml'), YAML.stringify(topology));
    const storeUrl = `sqlite:${join(dir, 'events.db')}`;
    env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_TOPOLOGY_FILE: join(dir, 'topology.yaml'), GPUNET_PRICES: JSON.stringify(PRICES), GPUNET_CURRENCY: 'EUR', GPUNET_LOG_LEVEL: 'info' };
    store = await openEventStore(storeUrl);
    agent = new EventWriter(store, 'execution', systemClock);
    nc = await connect({ servers: nats.url });
  }, 30_000);

  afterAll(async () => {
    processes.killAll();
    await relay?.stop();
    await nc?.close();
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the standby bills an attempt ended after SIGKILL within the lease, once; a paused leader woken after takeover bills nothing; a leader the store moved past is refused', async () => {
    // ── a leader and a standby ──
    const a = spawnLedger('a');
    await waitFor('a to lead', () => logged(a, 'service started'));
    expect(logged(a, 'leader: acquired')).toMatchObject({ role: 'ledger', term: 1 });
    // The ledger provisions GPUNET_EVENTS: the agent's relay publishes from now on.
    relay = new OutboxRelay(store, nc, { name: 'relay-test-agent', filter: { streamPrefix: 'execution-' }, logger: quiet });
    await relay.start();
    const b = spawnLedger('b');
    await waitFor('b to wait as a standby', () => logged(b, 'leader: standby, waiting for the lease'));
    expect(logged(b, 'service started')).toBeUndefined(); // a standby consumes nothing

    await attempt('job-1', 1_000);
    await waitFor('job-1 billed by a', () => billed(a, 'job-1'));

    // ── SIGKILL the leader: the standby bills an attempt that ends right after ──
    a.child.kill('SIGKILL');
    const killedAt = performance.now();
    await attempt('job-2', 2_000);
    await waitFor('job-2 billed', async () => (await linesOf('job-2')).length > 0, 20_000);
    const takeoverMs = Math.round(performance.now() - killedAt);
    const electedAfterMs = Math.round(Date.parse((await terms())[1]!.data.electedAt) - (Date.now() - (performance.now() - killedAt)));
    process.stdout.write(`ledger takeover after SIGKILL: term 2 elected ${electedAfterMs} ms after the kill, job-2 billed ${takeoverMs} ms after it (bound ${TAKEOVER_BOUND_MS} ms)\n`);
    expect(takeoverMs).toBeLessThanOrEqual(TAKEOVER_BOUND_MS);
    // Its log line may reach the test after the store shows its work: waited for.
    expect(await waitFor('b to log its term', () => logged(b, 'leader: acquired'), 5_000)).toMatchObject({ role: 'ledger', term: 2 });
    await waitFor('b to log job-2 billed', () => billed(b, 'job-2'), 5_000);

    // ── SIGSTOP the new leader until a third process took over, then SIGCONT it ──
    const c = spawnLedger('c');
    await waitFor('c to wait as a standby', () => logged(c, 'leader: standby, waiting for the lease'));
    b.child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    await waitFor('c to lead', () => logged(c, 'leader: acquired'), 20_000);
    expect(logged(c, 'leader: acquired')).toMatchObject({ term: 3 });
    // Ended while b is still paused: b's outstanding pull may be handed it; b gives it back on waking.
    await attempt('job-3', 3_000);
    const bWoke = b.logs.length;
    b.child.kill('SIGCONT');
    await waitFor('b to step down', () => logged(b, 'leader: stepped down', bWoke), 20_000);
    await waitFor('job-3 billed', async () => (await linesOf('job-3')).length > 0, 30_000);
    process.stdout.write(`ledger after SIGSTOP: job-3 billed ${Math.round(performance.now() - stoppedAt)} ms after the leader was paused\n`);
    await waitFor('c to log job-3 billed', () => billed(c, 'job-3'), 5_000);
    await waitFor('b to wait as a standby again', () => logged(b, 'leader: standby, waiting for the lease', bWoke), 20_000);
    expect(b.logs.slice(bWoke).filter((l) => l.msg === 'usage recorded')).toEqual([]);
    const wokenLines = b.logs.slice(bWoke).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('leader:'));
    process.stdout.write(`woken ledger: ${wokenLines.map((l) => `${l.msg} (${String(l.reason ?? l.term ?? '')})`).join('; ')}\n`);

    // ── the store moves past c's term behind its back: its next append is refused ──
    // What a standby that took over while c was paused records; c's lease has not told it yet.
    await elect(store, new EventWriter(store, 'ledger', systemClock), 'ledger', 'a-leader-c-never-saw', 6_000, systemClock);
    const cBefore = c.logs.length;
    const fencedAt = await store.headPosition();
    await attempt('job-4', 4_000);
    const lost = await waitFor('c to lose its term to the store', () => logged(c, 'leader: lease lost', cBefore), 20_000);
    expect(lost.reason).toMatch(/store refused an append: .*fenced off/);
    expect(logged(c, 'usage recorded', cBefore)).toBeUndefined();
    // Nothing of c's after the term it never saw; job-4 is billed once the next leader (term 5) runs.
    expect((await store.readAll({ fromPosition: fencedAt + 1n, filter: { streamPrefix: 'ledger-' } })).filter((e) => e.type === 'UsageRecorded')).toEqual([]);
    await waitFor('job-4 billed by the next leader', async () => (await linesOf('job-4')).length > 0, 30_000);
    const finalTerms = await terms();
    expect(finalTerms.map((t) => t.data.term)).toEqual([1, 2, 3, 4, 5]);
    // The store holds term 5 before its process's log line reaches the test: wait for the line.
    const lastLeader = await waitFor('the term-5 leader to log it', () => [b, c].find((l) => logged(l, 'leader: acquired', l === c ? cBefore : bWoke)?.term === 5), 10_000);
    await waitFor('the last leader to log job-4 billed', () => billed(lastLeader, 'job-4'), 5_000);

    // ── every attempt billed exactly once, at its price; the invoice replays identically ──
    // Messages a dead or deposed process held come back after the 2 s ack wait: give them time to be (not) billed again.
    await new Promise((r) => setTimeout(r, 3_000));
    const jobs = { 'job-1': 1_000, 'job-2': 2_000, 'job-3': 3_000, 'job-4': 4_000 };
    for (const [jobId, ms] of Object.entries(jobs)) {
      const lines = (await linesOf(jobId)).map((e) => e.data as UsageRecorded);
      expect({ jobId, lines: lines.map((l) => [l.attemptId, l.billableMs, l.amountMicros]) }).toEqual({ jobId, lines: [[`${jobId}-a1`, ms, ms]] });
    }
    const billing = { keyId: 'billing-a', team: 'team-a', role: 'billing', allTeams: false };
    const invoiceId = `inv-team-a-${month}`;
    const ask = <T>(name: 'ReplayInvoice' | 'GetInvoice') => requestQuery<T>(nc, Queries[name].subject, { invoiceId, principal: billing }, { request: Queries[name].schema, response: Queries[name].replySchema }, { timeoutMs: 20_000 });
    const invoice = await waitFor('the invoice with all four lines', async () => {
      const i = await ask<InvoiceView>('GetInvoice');
      return i.lines.length === 4 && i;
    });
    expect(invoice.totals).toEqual([expect.objectContaining({ currency: 'EUR', amountMicros: 10_000 })]);
    const replay = await ask<ReplayInvoiceReply>('ReplayInvoice');
    expect(replay).toMatchObject({ invoiceId, identical: true, otherChanges: [] });
    expect(replay.totals).toEqual([{ currency: 'EUR', recordedMicros: 10_000, replayedMicros: 10_000, identical: true }]);
  }, 180_000);
});
