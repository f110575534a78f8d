/**
 * Placement's snapshot is exactly the fold of the store up to its position (decision 0037): on
 * both stores, a state loaded from a snapshot with the events after it folded on equals a fold
 * from zero — deeply, and as snapshot text byte for byte — whichever position the snapshot was
 * cut at, through several generations of snapshots each folded onto the one before. And a
 * snapshot that cannot be trusted is not used.
 */
import type { EventToAppend } from '#event-store';
import { EventWriter, type Clock } from '#service-kit';
import { Metrics } from '#telemetry';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import pino from 'pino';
import { buildHistoryStore } from '../../../../test/support/history.js';
import { storeBackends, type TestStore } from '../../../../test/support/store-backends.js';
import { initialState } from '../domain/index.js';
import { ev, T0, type Unpositioned } from '../domain/fixtures.js';
import { PlacementFold } from './placement-fold.js';
import { PlacementSnapshots } from './placement-snapshots.js';
import { PlacementMetrics } from './placement.metrics.js';
import { SchedulerService } from './scheduler.service.js';

// Each case builds a history of a few thousand events; PostgreSQL on a busy machine takes seconds.
jest.setTimeout(90_000);
const stores = storeBackends({ prefix: 'gpunet-placement-snapshot-' });
afterEach(() => stores.cleanUp(), 60_000);

const log = pino({ level: 'silent' });
const now = () => T0 + 5_000;
let n = 0;
const id = () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;

/** Appends fixture events, each in its own stream as its service writes it (placement's decisions on `placement-job-<jobId>`). */
async function append(store: TestStore, events: readonly Unpositioned[]): Promise<void> {
  for (const e of events) {
    const jobId = (e.data as { jobId?: string }).jobId;
    const decision = ['JobPlaced', 'JobRequeued', 'JobWithdrawn'].includes(e.type);
    const stream = e.type === 'NodeRegistered' ? `execution-node-${(e.data as { nodeId: string }).nodeId}` : decision ? `placement-job-${jobId}` : `test-${e.type}-${jobId}`;
    const toAppend: EventToAppend = { eventId: id(), type: e.type, data: e.data, metadata: { correlationId: jobId ?? 'c', causationId: jobId ?? 'c', ...(jobId ? { jobId } : {}), team: 'team-a', producer: 'test', occurredAt: new Date(T0).toISOString() } };
    await store.appendToStream(stream, [toAppend]);
  }
}

/** A store with nodes, a history of ended jobs (some lost and run again), and work still queued and running. */
async function history(store: TestStore): Promise<void> {
  await append(store, Array.from({ length: 8 }, (_, i) => ev.node(`node-${i}`, 8, 'A100')));
  await buildHistoryStore(store, { jobs: 120, nodes: 8, lostEvery: 7, batchJobs: 40 });
  await append(store, [
    ev.submitted('q-1', 2),
    ev.staged('q-1'),
    ev.submitted('q-2', 4, 'H100', 'team-b'),
    ev.submitted('run-1', 1),
    ev.staged('run-1'),
    ev.placed('run-1', 1, 'node-0', [7]),
    ev.held('run-1', 1, 'node-0', [7]),
    ev.submitted('gone', 1),
    ev.cancelRequested('gone'),
    ev.withdrawn('gone'),
    ev.node('node-8', 4, 'H100'),
  ]);
}

const fromZero = async (store: TestStore, head: bigint) => {
  const fold = new PlacementFold(initialState(), now);
  await fold.foldStore(store, 0n, head, log);
  return fold;
};
const comparable = (f: PlacementFold) => ({ state: { ...f.state, registeredCache: undefined }, revisions: f.revisions, correlations: f.correlations, traces: f.traces });

describe.each(stores.backends)('placement snapshot ($name)', (backend) => {
  it('snapshot + tail equals a fold from zero at every cut point, through generations of snapshots', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    await history(store);
    const head = await store.headPosition();
    const zero = await fromZero(store, head);
    // Ended jobs are forgotten as they end (decision 0043): what stays is the work still queued and running.
    expect(zero.state.forgottenJobs).toBeGreaterThan(120);
    expect([...zero.state.jobs.values()].filter((j) => j.phase === 'ended')).toEqual([]);
    expect([...zero.state.jobs.keys()].sort()).toEqual(['q-1', 'q-2', 'run-1']);
    expect(zero.state.queue.length).toBeGreaterThan(0);
    expect(zero.state.live.size).toBe(1);
    // The bookkeeping of placement's streams is kept for the jobs it still knows only.
    expect([...zero.revisions.keys()]).toEqual(['run-1']);
    const zeroText = zero.encode();

    const snapshots = (await PlacementSnapshots.open(store, {}, now, log))!;
    // Positions need not start at 1 nor be dense (PostgreSQL): cut at the k-th event.
    const positions = (await store.readAll({ maxCount: 100_000 })).map((e) => e.position);
    const nth = (fraction: number) => positions[Math.min(positions.length - 1, Math.floor(fraction * positions.length))]!;
    const cuts = [positions[0]!, nth(0.1), nth(1 / 3), nth(0.5), nth(0.75), positions.at(-6)!, positions.at(-2)!, head];
    for (const cut of cuts) {
      await snapshots.step(cut);
      const loaded = (await snapshots.load())!;
      expect(loaded.checkpoint.position).toBeLessThanOrEqual(cut);
      // The snapshot is the fold up to its own position, exactly.
      expect(comparable(loaded.fold)).toEqual(comparable(await fromZero(store, loaded.checkpoint.position)));
      await loaded.fold.foldStore(store, loaded.checkpoint.position, head, log);
      expect(comparable(loaded.fold)).toEqual(comparable(zero));
      expect(loaded.fold.encode()).toBe(zeroText);
      // The queue holds the jobs of the map, not copies: evolve finds them there by identity.
      for (const job of loaded.fold.state.queue) expect(loaded.fold.state.jobs.get(job.jobId)).toBe(job);
    }
    expect((await snapshots.checkpoint()).position).toBeGreaterThan(positions.at(-12)!);
  });

  it('a snapshot folded with another fair-share half-life, or ahead of the store, is ignored: the step folds from zero again', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    await history(store);
    const head = await store.headPosition();
    const week = (await PlacementSnapshots.open(store, {}, now, log))!;
    const positions = (await store.readAll({ maxCount: 100_000 })).map((e) => e.position);
    await week.step(positions[Math.floor(positions.length / 2)]!);
    const warnings: string[] = [];
    const watching = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line).msg as string) });
    const day = (await PlacementSnapshots.open(store, { usageHalfLifeMs: 86_400_000 }, now, watching))!;
    expect(await day.load()).toBeUndefined();
    expect(warnings.at(-1)).toMatch(/placement snapshot ignored, folding from the start of the store: folded with a fair-share half-life of 604800000 ms, this placement uses 86400000 ms/);
    const step = await day.step(head);
    // From zero: every placement event of the store folded, none skipped.
    const all = await new PlacementFold(initialState(), now).foldStore(store, 0n, head, log);
    expect(step).toEqual({ events: all.events, position: all.last!.position, saved: true });
    expect((await day.load())!.fold.state.usageHalfLifeMs).toBe(86_400_000);

    // A snapshot from another store (a position this one does not hold) is emptied and not used.
    const { open: openOther } = await backend.fresh();
    const other = await openOther();
    await append(other, [ev.node('node-x', 1)]);
    const foreign = (await PlacementSnapshots.open(other, {}, now, watching))!;
    const fold = new PlacementFold(initialState(), now);
    expect(await foreign.saveText(await foreign.checkpoint(), { position: head, eventId: id() }, fold.encode())).toBe(true);
    expect(await foreign.load()).toBeUndefined();
    expect(warnings.at(-1)).toMatch(/placement snapshot ignored, folding from the start of the store: it holds position \d+ .* but the store has no event there/);
    expect((await foreign.checkpoint()).position).toBe(0n);
  });
});

describe.each(stores.backends)('placement restart from its snapshot ($name)', (backend) => {
  it('a start folds the whole store once and saves the snapshot; shutdown moves it past its own decisions; the next start folds nothing and holds the same state', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    await history(store);
    const clock: Clock = { now: () => new Date(now()) };
    const start = async () => {
      const lines: { msg: string; events?: number }[] = [];
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string }) });
      const metrics = new Metrics({ service: 'placement', instance: 'p' }, { processMetrics: false });
      const scheduler = new SchedulerService(store, new EventWriter(store, 'placement', clock), clock, logger, { GPUNET_NODE_LEASE_MS: 600_000 }, new PlacementMetrics(metrics, clock));
      await scheduler.onModuleInit();
      return { scheduler, lines };
    };
    const first = await start();
    const folded = first.lines.find((l) => /^state folded from the store/.test(l.msg))!;
    expect(folded.events).toBeGreaterThan(900);
    // Its first pass placed the queued work (decisions after the start's snapshot).
    const placedBefore = (await store.readAll({ filter: { types: ['JobPlaced'] } })).length;
    await first.scheduler.onApplicationShutdown();
    expect(first.lines.map((l) => l.msg)).toContain('placement snapshot saved');

    const second = await start();
    const loaded = second.lines.find((l) => /^state loaded from its snapshot/.test(l.msg))!;
    expect(loaded).toBeDefined();
    expect(loaded.events).toBe(0);
    expect(comparable(new PlacementFold(second.scheduler.state, now))).toEqual(comparable(new PlacementFold((await fromZero(store, await store.headPosition())).state, now)));
    // Nothing decided twice.
    expect((await store.readAll({ filter: { types: ['JobPlaced'] } })).length).toBe(placedBefore);
    await second.scheduler.onApplicationShutdown();
  });
});
