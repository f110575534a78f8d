/**
 * The scheduler while its consumer is behind (decision 0033): events handled with more in hand
 * behind them are applied at once and share one pass, which places exactly what a pass per event
 * places; an event left without a pass gets one from the timer; the echo of placement's own
 * decision runs none. A temporary SQLite store, the scheduler built without Nest.
 */
import type { JobSpec } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import type { BusEvent } from '#messaging';
import { EventWriter, systemClock } from '#service-kit';
import { Metrics } from '#telemetry';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { PlacementMetrics } from './placement.metrics.js';
import { SchedulerService } from './scheduler.service.js';

const quiet = pino({ level: 'silent' });
const JOBS = 10;
const GPUS = 4;

interface Harness {
  store: EventStore;
  scheduler: SchedulerService;
  metrics: Metrics;
  /** The jobs' JobSubmitted and InputsStaged, in store order, for the test to hand to the scheduler. */
  events: RecordedEvent[];
}

let dir: string;
const opened: Harness[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-scheduler-'));
});

afterAll(async () => {
  for (const h of opened) {
    await h.scheduler.onApplicationShutdown();
    await h.store.close();
  }
  await rm(dir, { recursive: true, force: true });
});

/** A store with one node of GPUS GPUs (folded at start) and JOBS one-GPU jobs submitted and staged after it. */
async function harness(name: string): Promise<Harness> {
  const store = await openEventStore(`sqlite:${join(dir, `${name}.db`)}`);
  const agent = new EventWriter(store, 'execution', systemClock);
  await agent.append('execution-node-a-node', [
    {
      type: 'NodeRegistered',
      data: { nodeId: 'node-a', gpus: Array.from({ length: GPUS }, (_, index) => ({ index, model: 'A100' })), simulated: true, networkIsolation: false, heartbeatIntervalMs: 1_000, registeredAt: new Date().toISOString() },
    },
  ]);
  const metrics = new Metrics({ service: 'placement', instance: name }, { processMetrics: false });
  const scheduler = new SchedulerService(store, new EventWriter(store, 'placement', systemClock), systemClock, quiet, { GPUNET_NODE_LEASE_MS: 600_000 }, new PlacementMetrics(metrics, systemClock));
  await scheduler.onModuleInit();
  const from = await store.headPosition();
  const intake = new EventWriter(store, 'intake', systemClock);
  const storage = new EventWriter(store, 'storage', systemClock);
  for (let i = 0; i < JOBS; i++) {
    const jobId = `job-${String(i).padStart(2, '0')}`;
    const spec: JobSpec = { work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} }, data: { inputs: [] }, request: { gpus: 1, timeLimitMs: 60_000, network: false }, outputs: { globs: ['**'] } };
    await intake.append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team: 'team-a', spec, submittedAt: new Date().toISOString() } }], { jobId, team: 'team-a' });
    await storage.append(`storage-job-${jobId}`, [{ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }], { jobId, team: 'team-a' });
  }
  const events = await store.readAll({ fromPosition: from });
  const h = { store, scheduler, metrics, events };
  opened.push(h);
  return h;
}

/** `decide` calls so far (one histogram observation each). */
async function decides(metrics: Metrics): Promise<number> {
  const line = (await metrics.text()).split('\n').filter((l) => l.startsWith('gpunet_placement_pass_seconds_count'));
  return line.reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}

async function placed(store: EventStore): Promise<RecordedEvent[]> {
  return store.readAll({ filter: { types: ['JobPlaced'] } });
}

const asBus = (e: RecordedEvent) => e as unknown as BusEvent;

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const got = await check();
    if (got !== undefined && got !== false) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('SchedulerService while its consumer is behind', () => {
  it('runs one pass for a run of events in hand, placing what a pass per event places', async () => {
    const each = await harness('each');
    const run = await harness('run');
    const decidedBefore = [await decides(each.metrics), await decides(run.metrics)] as const;

    for (const e of each.events) await each.scheduler.handle(asBus(e), quiet, 0);
    for (const [i, e] of run.events.entries()) await run.scheduler.handle(asBus(e), quiet, run.events.length - 1 - i);

    const jobsOf = async (h: Harness) => (await placed(h.store)).map((e) => (e.data as { jobId: string }).jobId).sort();
    expect(await jobsOf(run)).toEqual(await jobsOf(each));
    expect(await jobsOf(run)).toHaveLength(GPUS);
    // A pass per event: at least one decide per event; one run: one pass (its decide, and one more that finds nothing left).
    expect((await decides(each.metrics)) - decidedBefore[0]).toBeGreaterThanOrEqual(each.events.length);
    expect((await decides(run.metrics)) - decidedBefore[1]).toBeLessThanOrEqual(2);
  });

  it('gives an event left without a pass its pass soon, even if nothing follows it', async () => {
    const h = await harness('owed');
    // Both events of the first job, each as if more were in hand behind it; nothing follows.
    for (const e of h.events.slice(0, 2)) await h.scheduler.handle(asBus(e), quiet, 5);
    const [first] = await until('the owed pass to place the job', async () => {
      const p = await placed(h.store);
      return p.length > 0 && p;
    });
    expect(first!.metadata.jobId).toBe('job-00');
  });

  it('runs no pass for the echo of its own decision', async () => {
    const h = await harness('echo');
    for (const e of h.events) await h.scheduler.handle(asBus(e), quiet, 0);
    const decided = await decides(h.metrics);
    for (const e of await placed(h.store)) await h.scheduler.handle(asBus(e), quiet, 0);
    expect(await decides(h.metrics)).toBe(decided);
  });
});
