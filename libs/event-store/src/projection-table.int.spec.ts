/**
 * Projection tables on both adapters: rows and position move together, only forward, only from
 * where the writer read them; a query answers rows, total and position from one snapshot; a
 * table of another derivation is emptied when opened.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { storeBackends, type StoreBackend } from '../../../test/support/store-backends.js';
import type { EventStore } from './event-store.js';
import { newEvent } from './conformance/fixtures.js';
import { commitForward, projectionTablesOf, trustedCheckpoint } from './projection-table.js';
import { thing, THINGS } from './projection-table.fixtures.js';

const stores = storeBackends({ prefix: 'gpunet-projection-' });
afterEach(() => stores.cleanUp(), 60_000);

/** Two store instances (two processes' worth of connections) on one fresh database. */
async function two(backend: StoreBackend): Promise<{ a: EventStore; b: EventStore }> {
  const { open } = await backend.fresh();
  return { a: await open(), b: await open() };
}

describe.each(stores.backends)('projection table ($name)', (backend) => {
  it('starts empty at position 0; a commit writes rows and position together, only forward and only from where the writer read it', async () => {
    const { a, b } = await two(backend);
    const t = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    const other = await projectionTablesOf(b)!.openProjectionTable(THINGS);
    const zero = await t.checkpoint();
    expect(zero).toEqual({ position: 0n, eventId: null });

    expect(await t.commit(zero, { position: 10n, eventId: 'e10' }, [thing('k1', 'team-a', 1_000), thing('k2', 'team-b', 2_000)])).toBe(true);
    expect(await other.checkpoint()).toEqual({ position: 10n, eventId: 'e10' });
    expect([...(await other.get(['k1', 'k2', 'nope']))].sort()).toEqual([
      ['k1', '{"key":"k1"}'],
      ['k2', '{"key":"k2"}'],
    ]);

    // A second writer that read position 0 lost the race: nothing of its is written.
    expect(await other.commit(zero, { position: 20n, eventId: 'e20' }, [thing('k1', 'team-z', 9), thing('k3', 'team-z', 9)])).toBe(false);
    expect(await t.checkpoint()).toEqual({ position: 10n, eventId: 'e10' });
    expect([...(await t.get(['k1', 'k3']))]).toEqual([['k1', '{"key":"k1"}']]);

    // Never backwards, never in place.
    const at10 = await t.checkpoint();
    expect(await t.commit(at10, { position: 10n, eventId: 'e10' }, [thing('k1', 'x', 1)])).toBe(false);
    expect(await t.commit(at10, { position: 5n, eventId: 'e5' }, [thing('k1', 'x', 1)])).toBe(false);
    expect(await t.commit(at10, { position: 20n, eventId: 'e20' }, [thing('k1', 'team-a', 1_500, '{"v":2}')])).toBe(true);
    expect((await other.get(['k1'])).get('k1')).toBe('{"v":2}');
  });

  it('commitForward writes from where this writer held the table, goes on from where another moved it, writes nothing it already holds, and says when it went back', async () => {
    const { a, b } = await two(backend);
    const t = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    const other = await projectionTablesOf(b)!.openProjectionTable(THINGS);
    const zero = await t.checkpoint();
    const at = (n: number) => ({ position: BigInt(n), eventId: `e${n}` });

    expect(await commitForward(t, zero, at(5), [thing('k1', 'a', 1)])).toEqual({ held: at(5) });
    // Another writer moved it to 8 meanwhile: this one, still holding 5, writes from 8 on.
    expect(await other.commit(at(5), at(8), [thing('k2', 'b', 2)])).toBe(true);
    expect(await commitForward(t, at(5), at(12), [thing('k3', 'a', 3)])).toEqual({ held: at(12) });
    expect([...(await other.get(['k1', 'k2', 'k3']))].map(([k]) => k).sort()).toEqual(['k1', 'k2', 'k3']);
    // The other is already further than this writer's rows go: nothing written, and it says where the table is.
    expect(await other.commit(at(12), at(20), [])).toBe(true);
    expect(await commitForward(t, at(12), at(15), [thing('k4', 'a', 4)])).toEqual({ held: at(20) });
    expect((await t.get(['k4'])).size).toBe(0);
    // Emptied under it: nothing written, and it says the table went back.
    expect(await other.reset(at(20))).toBe(true);
    expect(await commitForward(t, at(20), at(25), [thing('k5', 'a', 5)])).toEqual({ behind: { position: 0n, eventId: null } });
    expect((await t.get(['k5'])).size).toBe(0);
  });

  it('several processes opening different tables at once on a fresh database all succeed (the table of positions is made once)', async () => {
    // Placement's snapshot and the ledger's audit table opened at the same moment on a new
    // database: both made the shared table of positions, and PostgreSQL refused one
    // (`duplicate key value violates unique constraint "pg_type_typname_nsp_index"`).
    for (let round = 0; round < 4; round++) {
      const { open } = await backend.fresh();
      const stores = await Promise.all([open(), open(), open(), open()]);
      const names = stores.map((_, i) => ({ ...THINGS, name: `things_${i}` }));
      const opened = await Promise.all(stores.map((store, i) => projectionTablesOf(store)!.openProjectionTable(names[i]!)));
      expect(await Promise.all(opened.map(async (t) => (await t.checkpoint()).position))).toEqual([0n, 0n, 0n, 0n]);
    }
  });

  it('two writers racing from the same position: exactly one wins each round, and the table holds the winner\'s rows', async () => {
    const { a, b } = await two(backend);
    const ta = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    const tb = await projectionTablesOf(b)!.openProjectionTable(THINGS);
    for (let round = 1; round <= 5; round++) {
      const [ca, cb] = await Promise.all([ta.checkpoint(), tb.checkpoint()]);
      const to = { position: BigInt(round * 10), eventId: `e${round}` };
      const [wa, wb] = await Promise.all([ta.commit(ca, to, [thing('k', 'a', round, `"a${round}"`)]), tb.commit(cb, to, [thing('k', 'b', round, `"b${round}"`)])]);
      expect([wa, wb].filter(Boolean)).toHaveLength(1);
      expect((await ta.get(['k'])).get('k')).toBe(wa ? `"a${round}"` : `"b${round}"`);
    }
  });

  it('a query filters and orders by the indexed columns, pages, counts every match, and says the position it holds', async () => {
    const { a } = await two(backend);
    const t = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    const rows = [thing('j5', 'team-a', 5), thing('j1', 'team-a', 1), thing('j3', 'team-b', 3), thing('j2', 'team-a', 2), thing('j4', 'team-a', 2), thing('j0', null, null)];
    await t.commit(await t.checkpoint(), { position: 7n, eventId: 'e7' }, rows);
    const answer = await t.query({
      where: [
        { column: 'team', op: '=', value: 'team-a' },
        { column: 'at_ms', op: '>=', value: 2 },
        { column: 'at_ms', op: '<', value: 10 },
      ],
      orderBy: ['at_ms', 'key'],
      limit: 2,
      offset: 1,
    });
    expect(answer).toEqual({ checkpoint: { position: 7n, eventId: 'e7' }, total: 3, rows: [{ key: 'j4', doc: '{"key":"j4"}' }, { key: 'j5', doc: '{"key":"j5"}' }] });
    const all = await t.query({ where: [{ column: 'at_ms', op: 'not null' }], orderBy: ['at_ms', 'key'] });
    expect(all.rows.map((r) => r.key)).toEqual(['j1', 'j2', 'j4', 'j3', 'j5']);
    expect(all.total).toBe(5);
    await expect(t.query({ where: [{ column: 'doc; DROP TABLE x', op: 'not null' }] })).rejects.toThrow(/no column/);
    // `in` a list of values, and a group-by count beside the page.
    const some = await t.query({ where: [{ column: 'team', op: 'in', values: ['team-b', 'team-z'] }], orderBy: ['key'] });
    expect(some.rows.map((r) => r.key)).toEqual(['j3']);
    const times = await t.query({ where: [{ column: 'at_ms', op: 'in', values: [1, 2] }], orderBy: ['key'], limit: 0, countBy: 'team' });
    expect(times).toMatchObject({ rows: [], total: 3, counts: [{ value: 'team-a', count: 3 }] });
    const byTime = await t.query({ where: [{ column: 'team', op: '=', value: 'team-a' }], limit: 0, countBy: 'at_ms' });
    expect([...byTime.counts!].sort((x, y) => Number(x.value) - Number(y.value))).toEqual([
      { value: 1, count: 1 },
      { value: 2, count: 2 },
      { value: 5, count: 1 },
    ]);
  });

  it('reset empties the table only from the position it names; a table of another version is emptied when opened', async () => {
    const { a, b } = await two(backend);
    const t = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    await t.commit(await t.checkpoint(), { position: 3n, eventId: 'e3' }, [thing('k', 'a', 1)]);
    expect(await t.reset({ position: 2n, eventId: 'e2' })).toBe(false);
    expect((await t.get(['k'])).size).toBe(1);
    expect(await t.reset(await t.checkpoint())).toBe(true);
    expect(await t.checkpoint()).toEqual({ position: 0n, eventId: null });
    expect((await t.get(['k'])).size).toBe(0);

    await t.commit(await t.checkpoint(), { position: 4n, eventId: 'e4' }, [thing('k', 'a', 1)]);
    const again = await projectionTablesOf(b)!.openProjectionTable(THINGS);
    expect(await again.checkpoint()).toEqual({ position: 4n, eventId: 'e4' });
    const v2 = await projectionTablesOf(b)!.openProjectionTable({ ...THINGS, version: 2 });
    expect(await v2.checkpoint()).toEqual({ position: 0n, eventId: null });
    expect((await v2.get(['k'])).size).toBe(0);
    const relaid = await projectionTablesOf(b)!.openProjectionTable({ ...THINGS, version: 2, columns: [...THINGS.columns, { name: 'extra', type: 'text' }] });
    await relaid.commit(await relaid.checkpoint(), { position: 1n, eventId: 'e1' }, [{ key: 'k', doc: '1', values: { team: 'a', at_ms: 1, extra: 'x' } }]);
    expect((await relaid.query({ where: [{ column: 'extra', op: '=', value: 'x' }] })).total).toBe(1);
  });

  it('trusts a position by the id of the event the store holds there alone, and empties a table whose position names another event or none', async () => {
    const { a } = await backend.fresh().then(async (db) => ({ a: await db.open() }));
    // A store whose events cannot be read whole: the check must not need one (an invoice's event may be tens of MB).
    const idsOnly = new Proxy(a, {
      get: (target, prop) => (prop === 'readAll' || prop === 'readStream' ? () => Promise.reject(new Error('read a whole event')) : (Reflect.get(target, prop) as unknown as (...args: unknown[]) => unknown)?.bind?.(target) ?? Reflect.get(target, prop)),
    });
    const event = newEvent({ data: { big: 'x'.repeat(100_000) } });
    const { position } = await a.appendToStream('s', [event]);
    const t = await projectionTablesOf(a)!.openProjectionTable(THINGS);
    const told: unknown[] = [];
    const untrusted = (held: unknown, found: string | null) => void told.push([held, found]);
    expect(await trustedCheckpoint(idsOnly, t, untrusted)).toEqual({ position: 0n, eventId: null });

    await t.commit(await t.checkpoint(), { position, eventId: event.eventId }, [thing('k', 'a', 1)]);
    expect(await trustedCheckpoint(idsOnly, t, untrusted)).toEqual({ position, eventId: event.eventId });
    expect(told).toEqual([]);

    // Another event at that position (a table copied beside another store): emptied, and told what was found.
    await t.reset(await t.checkpoint());
    await t.commit(await t.checkpoint(), { position, eventId: 'evt-other' }, [thing('k', 'a', 1)]);
    expect(await trustedCheckpoint(idsOnly, t, untrusted)).toEqual({ position: 0n, eventId: null });
    expect((await t.get(['k'])).size).toBe(0);
    // A position past the store's head: emptied, nothing found there.
    await t.commit(await t.checkpoint(), { position: position + 5n, eventId: 'evt-9' }, [thing('k', 'a', 1)]);
    expect(await trustedCheckpoint(idsOnly, t, untrusted)).toEqual({ position: 0n, eventId: null });
    expect(told).toEqual([
      [{ position, eventId: 'evt-other' }, event.eventId],
      [{ position: position + 5n, eventId: 'evt-9' }, null],
    ]);
  });

  it('dropProjectionTable drops a table and its position, says whether there was one, and leaves every other table as it was', async () => {
    const { a, b } = await two(backend);
    const host = projectionTablesOf(a)!;
    expect(await host.dropProjectionTable('never_made')).toBe(false);
    const gone = await host.openProjectionTable({ ...THINGS, name: 'retired' });
    await gone.commit(await gone.checkpoint(), { position: 5n, eventId: 'e5' }, [thing('k', 'a', 1)]);
    const kept = await host.openProjectionTable(THINGS);
    await kept.commit(await kept.checkpoint(), { position: 6n, eventId: 'e6' }, [thing('k', 'a', 1)]);

    expect(await projectionTablesOf(b)!.dropProjectionTable('retired')).toBe(true);
    expect(await host.dropProjectionTable('retired')).toBe(false);
    // Made again, it starts empty at position 0: neither its rows nor its position were left behind.
    const anew = await host.openProjectionTable({ ...THINGS, name: 'retired' });
    expect(await anew.checkpoint()).toEqual({ position: 0n, eventId: null });
    expect((await anew.get(['k'])).size).toBe(0);
    expect(await kept.checkpoint()).toEqual({ position: 6n, eventId: 'e6' });
    expect((await kept.get(['k'])).size).toBe(1);
    await expect(host.dropProjectionTable('Not-A-Name')).rejects.toThrow(/lower-case identifier/);
  });
});
