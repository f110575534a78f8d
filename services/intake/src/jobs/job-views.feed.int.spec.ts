/**
 * The job views in the store's database (decision 0035), on both adapters: lists answered from
 * the table as the walk over every view answers them, a restart that folds only the tail, two
 * intakes sharing one table, and views read from the table once they left memory.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import type { EventData } from '#contracts';
import { ValidationError } from '#errors';
import { projectionTablesOf, type EventStore } from '#event-store';
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { storeBackends, type StoreBackend } from '../../../../test/support/store-backends.js';
import { foldJobs } from '../domain/job-view.js';
import { pageOf, type ListQuery } from '../domain/job-views.js';
import { JobViewsFeed, type JobViewsFeedOptions } from './job-views.feed.js';
import { JOB_VIEWS_TABLE } from './job-views.table.js';

const logger = pino({ level: 'silent' });
const spec: EventData<'JobSubmitted'>['spec'] = {
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
};

const stores = storeBackends({ prefix: 'gpunet-job-views-' });
/** What the test started on the stores (feeds): stopped before the stores close. */
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await stores.cleanUp();
}, 60_000);

/** Two store instances (two intakes' worth of connections) on one fresh database. */
async function pair(backend: StoreBackend): Promise<{ a: EventStore; b: EventStore }> {
  const { open } = await backend.fresh();
  return { a: await open(), b: await open() };
}

async function append(store: EventStore, type: string, jobId: string, data: Record<string, unknown>): Promise<bigint> {
  const r = await store.appendToStream(`test-job-${jobId}`, [
    { eventId: randomUUID(), type, data: { jobId, ...data }, metadata: { correlationId: randomUUID(), causationId: randomUUID(), jobId, producer: 'test', occurredAt: '2025-06-01T00:00:00.000Z' } },
  ]);
  return r.position;
}
const submit = (store: EventStore, jobId: string, team = 'team-a', extra: { submittedAt?: string; gpuModel?: string } = {}) =>
  append(store, 'JobSubmitted', jobId, {
    team,
    spec: { ...spec, request: { ...spec.request, ...(extra.gpuModel ? { gpuModel: extra.gpuModel } : {}) } },
    submittedAt: extra.submittedAt ?? '2025-06-01T00:00:00.000Z',
  });
const stage = (store: EventStore, jobId: string) => append(store, 'InputsStaged', jobId, { inputs: [], totalBytes: 0, stagedAt: '2025-06-01T00:00:01.000Z' });

async function started(store: EventStore, options: JobViewsFeedOptions = {}): Promise<JobViewsFeed> {
  const feed = new JobViewsFeed(store, logger, options);
  await feed.start();
  cleanups.push(() => feed.close());
  return feed;
}

/** The views as of the store's head (what JobsService waits for before it reads). */
async function current(feed: JobViewsFeed, store: EventStore): Promise<JobViewsFeed> {
  expect(await feed.waitFor(await store.headPosition(), 10_000)).toBe(true);
  return feed;
}

/** Every job's record folded from the whole store in memory: the oracle. */
async function folded(store: EventStore) {
  return foldJobs(await store.readAll({ maxCount: 100_000 }));
}

const ids = (r: { jobs: { jobId: string }[] }) => r.jobs.map((j) => j.jobId);
const byState = (r: { countsByState?: { state: string; count: number }[] | undefined }) => [...(r.countsByState ?? [])].sort((x, y) => x.state.localeCompare(y.state));

describe.each(stores.backends)('job views in the store\'s database ($name)', (backend) => {
  it('lists a team\'s jobs newest first, never another team\'s; every team\'s with the count per team; filters by state; pages with a cursor that stays put', async () => {
    const { a } = await pair(backend);
    const feed = await started(a);
    for (const [id, team] of [['j1', 'team-a'], ['x1', 'team-b'], ['j2', 'team-a'], ['j3', 'team-a'], ['y1', 'team-c']] as const) await submit(a, id, team);
    await stage(a, 'j1');
    await current(feed, a);
    expect(ids(await feed.list({ limit: 50 }, { team: 'team-a' }))).toEqual(['j3', 'j2', 'j1']);
    expect(ids(await feed.list({ limit: 50 }, { team: 'team-b' }))).toEqual(['x1']);
    expect(await feed.list({ limit: 50 }, { team: 'team-z' })).toEqual({ jobs: [], nextCursor: null, countsByState: [] });
    expect(ids(await feed.list({ limit: 50, states: ['staged'] }, { team: 'team-a' }))).toEqual(['j1']);
    expect(ids(await feed.list({ limit: 50, states: ['submitted', 'staged'] }, { team: 'team-a' }))).toHaveLength(3);

    const all = await feed.list({ limit: 2 }, { allTeams: true });
    expect(ids(all)).toEqual(['y1', 'j3']);
    expect(all.nextCursor).not.toBeNull();
    expect(all.countsByTeam).toEqual([{ team: 'team-a', count: 3 }, { team: 'team-b', count: 1 }, { team: 'team-c', count: 1 }]);
    const teamA = await feed.list({ limit: 50, team: 'team-a', states: ['staged'] }, { allTeams: true });
    expect(ids(teamA)).toEqual(['j1']);
    expect(teamA.countsByTeam).toEqual(all.countsByTeam);
    expect(byState(teamA)).toEqual([{ state: 'staged', count: 1 }, { state: 'submitted', count: 2 }]);

    const first = await feed.list({ limit: 2 }, { team: 'team-a' });
    expect(ids(first)).toEqual(['j3', 'j2']);
    await submit(a, 'j4');
    await current(feed, a);
    const second = await feed.list({ limit: 2, cursor: first.nextCursor! }, { team: 'team-a' });
    expect(second).toMatchObject({ jobs: [{ jobId: 'j1' }], nextCursor: null });
    await expect(feed.list({ limit: 2, cursor: 'garbage' }, { team: 'team-a' })).rejects.toBeInstanceOf(ValidationError);
  });

  it('pages, filters and counts exactly as the walk over every view does (the table\'s indexes, or its candidates and the views for a GPU model or node)', async () => {
    const { a } = await pair(backend);
    const feed = await started(a);
    const teams = ['team-a', 'team-b', 'team-a', 'team-c'];
    for (let i = 1; i <= 24; i++) await submit(a, `j${i}`, teams[i % 4], { submittedAt: `2025-06-${String(1 + (i % 5)).padStart(2, '0')}T00:00:00.000Z`, ...(i % 3 === 0 ? { gpuModel: 'A100' } : {}) });
    for (const i of [2, 3, 7, 11, 19, 22, 23]) await stage(a, `j${i}`);
    await current(feed, a);
    const records = [...(await folded(a)).values()].sort((x, y) => Number(y.submittedPosition - x.submittedPosition));
    const queries: ListQuery[] = [
      { limit: 3 },
      { limit: 3, states: ['staged'] },
      { limit: 4, states: ['submitted', 'staged'] },
      { limit: 3, submittedFrom: '2025-06-02T00:00:00.000Z', submittedTo: '2025-06-04T00:00:00.000Z' },
      { limit: 2, gpuModel: 'A100' },
      { limit: 2, nodeId: 'node-1' },
      { limit: 50, outcome: 'failed' },
    ];
    for (const q of queries) {
      for (const scope of [{ team: 'team-a' }, { team: 'team-b' }, { team: 'team-z' }, { all: true }, { all: true, team: 'team-a' }] as { team?: string; all?: boolean }[]) {
        // Every team's list takes its team in the query; a team's list takes it as its scope.
        const query: ListQuery = { ...q, ...(scope.all && scope.team ? { team: scope.team } : {}) };
        const walkQuery: ListQuery = { ...q, ...(scope.team ? { team: scope.team } : {}) };
        let cursor: string | undefined;
        do {
          const paged = { ...query, ...(cursor ? { cursor } : {}) };
          const got = await feed.list(paged, scope.all ? { allTeams: true } : { team: scope.team! });
          const want = pageOf(records, { ...walkQuery, ...(cursor ? { cursor } : {}) }, { byTeam: scope.all === true });
          expect({ ...got, countsByState: byState(got) }).toEqual({ ...want, countsByState: byState(want) });
          cursor = got.nextCursor ?? undefined;
        } while (cursor);
      }
    }
  }, 60_000);

  it('a restart folds only the events after the table\'s position, and reads the views before it from the table', async () => {
    const { a } = await pair(backend);
    const first = await started(a);
    for (let i = 1; i <= 20; i++) await submit(a, `j${i}`);
    await stage(a, 'j3');
    await current(first, a);
    expect(first.folded).toBe(21);
    await first.close();
    await stage(a, 'j5');
    await submit(a, 'k1', 'team-b');
    const again = await started(a);
    expect(again.folded).toBe(2);
    expect((await again.get('j3'))?.state).toBe('staged');
    expect((await again.get('j5'))?.state).toBe('staged');
    expect(await again.size()).toBe(21);
    expect(ids(await again.list({ limit: 3 }, { team: 'team-a' }))).toEqual(['j20', 'j19', 'j18']);
  });

  it('two intakes share one table: each folds every event and writes from where the table is, both answer the same, and the table holds the fold of the whole store', async () => {
    const { a, b } = await pair(backend);
    const one = await started(a, { commitEveryMs: 20 });
    const two = await started(b, { commitEveryMs: 20 });
    for (let i = 1; i <= 30; i++) {
      await submit(i % 2 === 0 ? a : b, `j${i}`, i % 3 === 0 ? 'team-b' : 'team-a');
      if (i % 4 === 0) await stage(i % 2 === 0 ? b : a, `j${i - 1}`);
    }
    await current(one, a);
    await current(two, b);
    const [x, y] = [await one.list({ limit: 100 }, { allTeams: true }), await two.list({ limit: 100 }, { allTeams: true })];
    expect(x).toEqual(y);
    expect(x.jobs).toHaveLength(30);
    const oracle = await folded(a);
    for (const [id, record] of oracle) {
      expect(await one.get(id)).toEqual(record.view);
      expect(await two.get(id)).toEqual(record.view);
    }
    // What the table holds is the fold of the whole store, whoever wrote which rows.
    await one.close();
    await two.close();
    const third = await started(a);
    expect(third.folded).toBe(0);
    for (const [id, record] of oracle) expect(await third.get(id)).toEqual(record.view);
  });

  it('an intake whose table was emptied under it (another found a position the store does not hold) writes no more onto it', async () => {
    const { a, b } = await pair(backend);
    const feed = await started(a);
    await submit(a, 'j1');
    await current(feed, a);
    await feed.flush();
    const table = await projectionTablesOf(b)!.openProjectionTable(JOB_VIEWS_TABLE);
    expect(await table.reset(await table.checkpoint())).toBe(true);
    await submit(a, 'j2');
    await current(feed, a);
    await feed.flush();
    // Its records are the fold from 0, not from the emptied table's start: written, j1 would be lost.
    expect(await table.checkpoint()).toEqual({ position: 0n, eventId: null });
    expect((await table.get(['j1', 'j2'])).size).toBe(0);
  });

  it('finished and old views leave memory and are read from the table; an event of a job no longer in memory folds onto its row', async () => {
    const { a } = await pair(backend);
    const feed = await started(a, { cacheSize: 2 });
    for (let i = 1; i <= 6; i++) await submit(a, `j${i}`);
    await current(feed, a);
    await feed.flush();
    // j1 left memory (two records kept): read from the table.
    expect((await feed.get('j1'))?.jobId).toBe('j1');
    await stage(a, 'j1');
    await current(feed, a);
    expect((await feed.get('j1'))?.state).toBe('staged');
    await feed.flush();
    const oracle = await folded(a);
    for (const [id, record] of oracle) expect(await feed.get(id)).toEqual(record.view);
    expect(await feed.get('nope')).toBeUndefined();
  });

  it('a final job\'s record leaves memory once the table holds it; a job still moving stays', async () => {
    const { a } = await pair(backend);
    const feed = await started(a);
    await submit(a, 'r1');
    await submit(a, 'r2');
    await append(a, 'JobRejected', 'r1', { team: 'team-a', reason: 'unsatisfiable', message: 'never fits', issues: [], rejectedAt: '2025-06-01T00:00:02.000Z' });
    await current(feed, a);
    await feed.flush();
    expect(feed.cached).toBe(1);
    expect((await feed.get('r1'))?.state).toBe('rejected');
    expect((await feed.get('r2'))?.state).toBe('submitted');
    expect(feed.cached).toBe(1); // a read from the table does not bring it back
    const oracle = await folded(a);
    for (const [id, record] of oracle) expect(await feed.get(id)).toEqual(record.view);
  });

  it('counts for /metrics and /healthz what it folded, not what it last wrote', async () => {
    const { a } = await pair(backend);
    // No write for a minute unless a reader asks: the counts must make the table current themselves.
    const feed = await started(a, { commitEveryMs: 60_000 });
    await submit(a, 'c1');
    await submit(a, 'c2');
    await stage(a, 'c2');
    await current(feed, a);
    expect(Object.fromEntries(await feed.countsByState())).toEqual({ submitted: 1, staged: 1 });
    await submit(a, 'c3');
    await current(feed, a);
    expect(await feed.size()).toBe(3);
  });
});
