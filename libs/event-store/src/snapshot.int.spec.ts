/**
 * Snapshots on both adapters: saved with the position they are the fold of, never moved
 * backwards or from a position the writer did not read, and never trusted beyond that position:
 * a position the store does not hold, an emptied table or another format is ignored, with why.
 */
import { afterEach, describe, expect, it } from '@jest/globals';
import { storeBackends } from '../../../test/support/store-backends.js';
import { newEvents } from './conformance/fixtures.js';
import { projectionTablesOf } from './projection-table.js';
import { SnapshotSlot, type SnapshotIgnored } from './snapshot.js';

const stores = storeBackends({ prefix: 'gpunet-snapshot-' });
afterEach(() => stores.cleanUp(), 60_000);

describe.each(stores.backends)('snapshot ($name)', (backend) => {
  it('saves a state at a position the store holds and loads it again; a second writer cannot move it backwards or from where it did not read', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    const b = await open();
    await a.appendToStream('s', newEvents(3));
    const [e1, e2, e3] = await a.readAll();
    const sa = (await SnapshotSlot.open(a, 'thing', 1))!;
    const sb = (await SnapshotSlot.open(b, 'thing', 1))!;
    const ignored: SnapshotIgnored[] = [];
    expect(await sa.load((w) => ignored.push(w))).toBeUndefined();

    const zero = await sa.checkpoint();
    const at2 = { position: e2!.position, eventId: e2!.eventId };
    expect(await sa.save(zero, at2, '{"n":2}')).toBe(true);
    expect(await sb.load((w) => ignored.push(w))).toEqual({ checkpoint: at2, parts: ['{"n":2}'] });

    // b read position 0 too: its save loses, and so does one that would go back.
    expect(await sb.save(zero, { position: e1!.position, eventId: e1!.eventId }, '{"n":1}')).toBe(false);
    expect(await sb.save(at2, { position: e1!.position, eventId: e1!.eventId }, '{"n":1}')).toBe(false);
    expect(await sb.save(at2, { position: e3!.position, eventId: e3!.eventId }, '{"n":3}')).toBe(true);
    expect((await sa.load((w) => ignored.push(w)))?.parts).toEqual(['{"n":3}']);
    expect(ignored).toEqual([]);
  });

  it('a snapshot at a position the store does not hold (another store, an older backup) is ignored and the table emptied', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    await a.appendToStream('s', newEvents(2));
    const [, e2] = await a.readAll();
    const slot = (await SnapshotSlot.open(a, 'thing', 1))!;
    // Ahead of the store: position past its head.
    expect(await slot.save(await slot.checkpoint(), { position: e2!.position + 100n, eventId: e2!.eventId }, '{"n":99}')).toBe(true);
    const ignored: SnapshotIgnored[] = [];
    expect(await slot.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored).toHaveLength(1);
    expect(ignored[0]!.reason).toBe('not_in_store');
    expect(ignored[0]!.detail).toMatch(/store has no event there/);
    expect(await slot.checkpoint()).toEqual({ position: 0n, eventId: null });

    // A position the store holds, but another event there (another store's snapshot).
    expect(await slot.save(await slot.checkpoint(), { position: e2!.position, eventId: 'not-the-event' }, '{"n":2}')).toBe(true);
    expect(await slot.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored[1]!.detail).toContain(`event ${e2!.eventId} there`);
    // Emptied: the next reader finds nothing and folds from zero.
    expect(await slot.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored).toHaveLength(2);
  });

  it('a snapshot of another format is ignored (told why) without being emptied, and a writer of this format replaces it once it is further', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    const b = await open();
    await a.appendToStream('s', newEvents(3));
    const [, e2, e3] = await a.readAll();
    const v1 = (await SnapshotSlot.open(a, 'thing', 1))!;
    const v2 = (await SnapshotSlot.open(b, 'thing', 2))!;
    const at2 = { position: e2!.position, eventId: e2!.eventId };
    expect(await v1.save(await v1.checkpoint(), at2, 'old')).toBe(true);
    const ignored: SnapshotIgnored[] = [];
    expect(await v2.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored).toEqual([{ reason: 'other_format', detail: 'its format is 1, this release reads 2', checkpoint: at2 }]);
    // Still there for the release that reads it.
    expect((await v1.load(() => undefined))?.parts).toEqual(['old']);
    expect(await v2.save(at2, { position: e3!.position, eventId: e3!.eventId }, 'new')).toBe(true);
    expect((await v2.load(() => undefined))?.parts).toEqual(['new']);
    expect(await v1.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored[1]!.reason).toBe('other_format');
  });

  it('a state in parts loads as those parts; a later state in fewer parts never reads the rows the longer one left', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    await a.appendToStream('s', newEvents(3));
    const [e1, e2, e3] = (await a.readAll()).map((e) => ({ position: e.position, eventId: e.eventId }));
    const slot = (await SnapshotSlot.open(a, 'thing', 1))!;
    const ignored: SnapshotIgnored[] = [];
    // More parts than one read takes, so the load reads them in several.
    const big = ['[1,', '"two\nlines",', 'x'.repeat(100_000), ...Array.from({ length: 10 }, (_, i) => `,${i}`), ']'];
    expect(await slot.save(await slot.checkpoint(), e1!, big)).toBe(true);
    expect(await slot.load((w) => ignored.push(w))).toEqual({ checkpoint: e1, parts: big });
    expect(await slot.save(e1!, e2!, ['short', 'er'])).toBe(true);
    expect((await slot.load((w) => ignored.push(w)))?.parts).toEqual(['short', 'er']);
    expect(await slot.save(e2!, e3!, 'one')).toBe(true);
    expect((await slot.load((w) => ignored.push(w)))?.parts).toEqual(['one']);
    expect(ignored).toEqual([]);
    expect(() => slot.save(e3!, e3!, [])).toThrow(/at least one part/);
  });

  it('writes a state\'s parts a few to a transaction with turns of the event loop between, and leaves behind no rows: neither those it replaced nor, when it lost, its own', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    await a.appendToStream('s', newEvents(4));
    const [e1, e2, e3, e4] = (await a.readAll()).map((e) => ({ position: e.position, eventId: e.eventId }));
    const table = await projectionTablesOf(a)!.openProjectionTable({ name: 'snapshot_thing', version: 1, columns: [], indexes: [] });
    const keys = async () => (await table.query({})).rows.map((r) => r.key).sort();
    // As an earlier release wrote it: parts without a generation.
    await table.commit({ position: 0n, eventId: null }, e1!, [{ key: 'snapshot', doc: 'gpunet-snapshot 1 parts=2\nold-', values: {} }, { key: 'snapshot.1', doc: 'state', values: {} }]);
    const slot = (await SnapshotSlot.open(a, 'thing', 1))!;
    const ignored: SnapshotIgnored[] = [];
    expect((await slot.load((w) => ignored.push(w)))?.parts).toEqual(['old-', 'state']);

    // Thirteen parts: the twelve after the header's go in three transactions, with a turn after each.
    let turns = 0;
    let ticking = true;
    const tick = () => {
      if (!ticking) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const parts = Array.from({ length: 13 }, (_, i) => `part-${i}`);
    expect(await slot.save(e1!, e2!, parts)).toBe(true);
    ticking = false;
    expect(turns).toBeGreaterThanOrEqual(3);
    expect((await slot.load((w) => ignored.push(w)))?.parts).toEqual(parts);
    // The old parts went; the new ones are of a generation of their own.
    const gen = /gen=([0-9a-z]+)/.exec((await table.get(['snapshot'])).get('snapshot')!)![1]!;
    expect(await keys()).toEqual(['snapshot', ...parts.slice(1).map((_, i) => `snapshot.${gen}.${i + 1}`)].sort());

    // A writer that read an older position loses, and deletes what it wrote.
    expect(await slot.save(e1!, e3!, ['lost', 'parts', 'here'])).toBe(false);
    expect(await keys()).toEqual(['snapshot', ...parts.slice(1).map((_, i) => `snapshot.${gen}.${i + 1}`)].sort());
    // A state of one part replaces them all.
    expect(await slot.save(e2!, e4!, 'one')).toBe(true);
    expect(await keys()).toEqual(['snapshot']);
    expect((await slot.load((w) => ignored.push(w)))?.parts).toEqual(['one']);
    expect(ignored).toEqual([]);
  });

  it('a state whose header counts a part the table does not hold is unreadable, told why', async () => {
    const { open } = await backend.fresh();
    const a = await open();
    await a.appendToStream('s', newEvents(1));
    const [e1] = (await a.readAll()).map((e) => ({ position: e.position, eventId: e.eventId }));
    // Written as the slot writes it, less its last part: what a table edited by hand would hold.
    const table = await projectionTablesOf(a)!.openProjectionTable({ name: 'snapshot_thing', version: 1, columns: [], indexes: [] });
    await table.commit({ position: 0n, eventId: null }, e1!, [{ key: 'snapshot', doc: 'gpunet-snapshot 1 parts=3\nfirst', values: {} }, { key: 'snapshot.1', doc: 'second', values: {} }]);
    const slot = (await SnapshotSlot.open(a, 'thing', 1))!;
    const ignored: SnapshotIgnored[] = [];
    expect(await slot.load((w) => ignored.push(w))).toBeUndefined();
    expect(ignored).toEqual([{ reason: 'unreadable', detail: 'its header says 3 parts but the row snapshot.2 is missing', checkpoint: e1 }]);
  });
});
