/**
 * The audit projection kept in the store's database (decision 0034), on both stores: its lists
 * are the pure fold's lists; a restart folds only the events after the table's position; a table
 * whose position the store does not hold is folded again from the start; two ledgers writing the
 * one table leave it as one would.
 */
import type { AuditJobsFilter } from '#contracts';
import { projectionTablesOf, type EventStore, type ReadAllOptions, type RecordedEvent } from '#event-store';
import { afterEach, describe, expect, it } from '@jest/globals';
import { appendBatch, historyJob, type HistoryAppend, type HistoryOptions } from '../../../../test/support/history.js';
import { until } from '../../../../test/support/poll.js';
import { storeBackends, type StoreBackend, type TestStore } from '../../../../test/support/store-backends.js';
import { auditList, foldJobAudits } from './audit-projection.js';
import { AuditProjectionService, AuditTableStartError } from './audit-projection.service.js';
import { AUDIT_TABLE } from './audit-table.js';
import { capturedLogger } from '../../../../test/support/captured-logger.js';

/** 120 jobs over 3 days, 3 teams, one in 7 lost once and run again. */
const HISTORY: HistoryOptions = { jobs: 120, teams: 3, days: 3, lostEvery: 7, nodes: 5, start: '2026-03-01T00:00:00.000Z' };

const stores = storeBackends({ prefix: 'gpunet-audit-table-' });
/** Run last first, before the stores close: services stop before their store does. */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await stores.cleanUp();
}, 60_000);

/** A store on a fresh database, and more instances on it (other processes' connections). */
async function opened(backend: StoreBackend): Promise<{ store: TestStore; another: () => Promise<TestStore> }> {
  const { open } = await backend.fresh();
  return { store: await open(), another: open };
}

/** The store, with every readAll's options noted. */
function watched(store: EventStore): { store: EventStore; reads: ReadAllOptions[] } {
  const reads: ReadAllOptions[] = [];
  const readAll = store.readAll.bind(store);
  const proxy = Object.create(store) as EventStore;
  proxy.readAll = (options: ReadAllOptions = {}) => {
    reads.push(options);
    return readAll(options);
  };
  return { store: proxy, reads };
}

const services: AuditProjectionService[] = [];
async function started(store: EventStore): Promise<{ service: AuditProjectionService; lines: Record<string, unknown>[] }> {
  const { logger, lines } = capturedLogger();
  const service = new AuditProjectionService(store, logger);
  await service.onModuleInit();
  services.push(service);
  // Cleanups run last first: the service stops before its store closes.
  cleanups.push(async () => {
    if (!services.includes(service)) return;
    services.splice(services.indexOf(service), 1);
    await service.onModuleDestroy();
  });
  return { service, lines };
}

async function writeJobs(store: TestStore, from: number, to: number): Promise<void> {
  const appends: HistoryAppend[] = [];
  for (let i = from; i < to; i++) appends.push(...historyJob(i, HISTORY));
  await appendBatch(store, appends);
}

async function everyEvent(store: EventStore): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  for (;;) {
    const page = await store.readAll({ fromPosition: all.at(-1)?.position ?? 0n, maxCount: 5_000 });
    if (page.length === 0) return all;
    all.push(...page);
  }
}

const FILTERS: AuditJobsFilter[] = [
  { limit: 500, offset: 0 },
  { team: 'team-1', limit: 500, offset: 0 },
  { team: 'team-2', from: '2026-03-02T00:00:00Z', to: '2026-03-03T00:00:00Z', limit: 500, offset: 0 },
  { from: '2026-03-01T12:00:00Z', limit: 7, offset: 5 },
  { outcome: 'completed', team: 'team-0', limit: 10, offset: 3 },
  { nodeId: 'node-2', limit: 500, offset: 0 },
  { gpuModel: 'H100', team: 'team-1', limit: 4, offset: 2 },
];

/** Every filter's answer from the service equals the pure fold's over the whole store. */
async function expectSameAsTheFold(service: AuditProjectionService, store: EventStore): Promise<void> {
  const records = foldJobAudits(await everyEvent(store), new Map(), { timeline: false });
  for (const filter of FILTERS) {
    const { jobs, total } = await service.list(filter);
    expect({ filter, jobs, total }).toEqual({ filter, ...auditList(records.values(), filter) });
  }
}

describe.each(stores.backends)('audit projection in the store\'s database ($name)', (backend) => {
  it('lists what the pure fold lists, for every filter; a restart folds only the events after the table\'s position', async () => {
    const { store } = await opened(backend);
    await writeJobs(store, 0, 80);
    const first = await started(store);
    await expectSameAsTheFold(first.service, store);
    const held = await first.service.position();
    expect(held).toBe(await store.headPosition());
    await first.service.onModuleDestroy();
    services.splice(services.indexOf(first.service), 1);

    await writeJobs(store, 80, 120);
    const tail = (await store.readAll({ fromPosition: held, maxCount: 100_000 })).length;
    const { store: seen, reads } = watched(store);
    const second = await started(seen);
    const caughtUp = second.lines.find((l) => l.msg === 'audit projection caught up from its table')!;
    expect(caughtUp).toMatchObject({ from: String(held), events: tail });
    // Nothing before the table's position was read, but the one event that proves the store holds it.
    expect(reads.every((r) => (r.fromPosition ?? 0n) >= held - 1n)).toBe(true);
    await expectSameAsTheFold(second.service, store);
  });

  it('a table ahead of the store, or at a position whose event the store holds under another id, is folded again from the start', async () => {
    const { store } = await opened(backend);
    await writeJobs(store, 0, 60);
    const first = await started(store);
    await first.service.onModuleDestroy();
    services.splice(services.indexOf(first.service), 1);
    const table = await projectionTablesOf(store)!.openProjectionTable(AUDIT_TABLE);

    // Ahead: a position past the head (the store restored from an older backup than the table, say).
    const head = await store.headPosition();
    await table.commit(await table.checkpoint(), { position: head + 1_000n, eventId: 'not-in-this-store' }, []);
    const ahead = await started(store);
    expect(ahead.lines.some((l) => String(l.msg).includes('holds a position whose event this store does not hold'))).toBe(true);
    expect(ahead.lines.find((l) => l.msg === 'audit projection caught up from its table')).toMatchObject({ from: '0' });
    await expectSameAsTheFold(ahead.service, store);
    await ahead.service.onModuleDestroy();
    services.splice(services.indexOf(ahead.service), 1);

    // Another store's table: a position this store has, another event there. The rows of jobs it
    // never had must go too (a bogus row is planted to see it go).
    await writeJobs(store, 60, 70);
    const at = await table.checkpoint();
    const later = await store.headPosition();
    await table.commit(at, { position: later, eventId: 'someone-else' }, [{ key: 'bogus-job', doc: '{}', values: { team: 'team-1', submitted_ms: 0, submitted_at: '1970-01-01T00:00:00.000Z', outcome: 'completed' } }]);
    const other = await started(store);
    expect(other.lines.find((l) => l.msg === 'audit projection caught up from its table')).toMatchObject({ from: '0' });
    expect((await other.service.list({ team: 'team-1', limit: 500, offset: 0 })).jobs.map((j) => j.jobId)).not.toContain('bogus-job');
    await expectSameAsTheFold(other.service, store);
  });

  it('between queries the table follows the store: the events its subscription delivers are folded, without a query asking or a read of its own', async () => {
    const { store, another } = await opened(backend);
    await writeJobs(store, 0, 20);
    const { store: seen, reads } = watched(store);
    const { service } = await started(seen);
    const readsAtStart = reads.length;
    // Written through another instance (another process's connection): no in-process wake-up.
    const writer = await another();
    await writeJobs(writer, 20, 40);
    const head = await store.headPosition();
    await until('the audit table at the store head, with no query', async () => (await service.position()) >= head, { timeoutMs: 15_000, describe: () => `head ${head}` });
    expect(reads.slice(readsAtStart)).toEqual([]);
    await expectSameAsTheFold(service, store);
  });

  it('a start that cannot fold up to the head in GPUNET_AUDIT_CATCH_UP fails naming the table, where it is and the fix; the next start goes on', async () => {
    const { store } = await opened(backend);
    await writeJobs(store, 0, 30);
    const { logger } = capturedLogger();
    const hurried = new AuditProjectionService(store, logger, { GPUNET_AUDIT_CATCH_UP: 0 });
    const failed = await hurried.onModuleInit().then(
      () => undefined,
      (err: unknown) => err,
    );
    await hurried.onModuleDestroy();
    expect(failed).toBeInstanceOf(AuditTableStartError);
    expect((failed as Error).message).toMatch(/audit table \(projection_audit_jobs\) did not reach the store head \d+ within 0 s.*holds position 0.*starting the ledger again goes on from 0.*raise GPUNET_AUDIT_CATCH_UP/);
    const { service } = await started(store);
    await expectSameAsTheFold(service, store);
  });

  it('two ledgers on one store (partitions, or a deposed leader still running) keep one table as one would, while jobs are written', async () => {
    const { store, another } = await opened(backend);
    await writeJobs(store, 0, 30);
    const a = await started(store);
    const b = await started(await another());
    for (let from = 30; from < 120; from += 10) {
      await writeJobs(store, from, from + 10);
      // Both step at once: each asks for a list, which folds up to the head.
      await Promise.all([a.service.list({ limit: 1, offset: 0 }), b.service.list({ limit: 1, offset: 0 })]);
    }
    await expectSameAsTheFold(a.service, store);
    await expectSameAsTheFold(b.service, store);
  });
});

// The SQLite store answers synchronously: a fold of awaited steps would never give timers a turn.
describe('audit projection in the store\'s database (sqlite, synchronous)', () => {
  it('a long fold lets timers run between its steps (the leader lease is renewed by one)', async () => {
    const { store } = await opened(stores.backends[0]!);
    await writeJobs(store, 0, 450); // about 5,400 events: two steps
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 1);
    try {
      const { lines } = await started(store);
      expect(lines.find((l) => l.msg === 'audit projection caught up from its table')).toMatchObject({ events: expect.any(Number) });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThanOrEqual(1);
  });
});
