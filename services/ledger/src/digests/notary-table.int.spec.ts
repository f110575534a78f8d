/**
 * The notary's heads in the store's database (decision 0051), on both adapters: the tree it folds
 * there gives the same roots as the whole tree in memory; a restarted notary reads only the
 * digests recorded after its table's; and, by attack, rows changed behind its back (a head, a
 * block node, a table from another store) are found before anything is signed over them, and the
 * table is folded again from the signed digests.
 */
import { DIGEST_STREAM, type ChainHeadsSigned, type StreamHead } from '#contracts';
import { projectionTablesOf, type EventStore, type EventToAppend } from '#event-store';
import { newIdentity } from '#identity';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import { storeBackends } from '../../../../test/support/store-backends.js';
import { HeadsTree } from './heads-tree.js';
import { BLOCK_LEAVES, NOTARY_TABLE, NotaryTable } from './notary-table.js';
import { ChainBrokenError, Notary, verifyStoreDigests } from './store-digests.js';

const stores = storeBackends({ prefix: 'gpunet-notary-table-' });
afterEach(() => stores.cleanUp(), 60_000);

function ev(type: string, data: Record<string, unknown>): EventToAppend {
  const id = randomUUID();
  return { eventId: id, type, data, metadata: { correlationId: id, causationId: id, producer: 'fixture', occurredAt: '2026-06-10T00:00:00.000Z' } };
}

/** What the ledger's notary does: the next digest, appended with the expected revision, then folded. */
async function sign(store: EventStore, notary: Notary): Promise<ChainHeadsSigned | undefined> {
  const d = (await notary.next(new Date().toISOString()))?.digest;
  if (d) await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(d) });
  await notary.sync();
  return d;
}

/** Signs until a digest covers the head. */
async function signAll(store: EventStore, notary: Notary): Promise<ChainHeadsSigned[]> {
  const out: ChainHeadsSigned[] = [];
  for (let d = await sign(store, notary); d; d = await sign(store, notary)) out.push(d);
  return out;
}

async function streams(store: EventStore, count: number, prefix = 'ledger-usage-job-'): Promise<void> {
  for (let i = 0; i < count; i++) await store.appendToStream(`${prefix}${i}`, [ev('UsageRecorded', { i })]);
}

/** The table as someone with the database would reach it: its own rows, its position left as it is. */
async function tableOf(store: EventStore) {
  return projectionTablesOf(store)!.openProjectionTable(NOTARY_TABLE);
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const head = (streamId: string, revision: number, position: number): StreamHead => ({ streamId, revision: String(revision), position: String(position), hash: sha(`${streamId}/${revision}`) });

describe.each(stores.backends)('the notary\'s table ($name)', (backend) => {
  /** A fresh database with `count` streams, every one signed, and its notary table. */
  async function signedStore(count: number) {
    const db = await backend.fresh();
    const store = await db.open();
    const key = newIdentity();
    await streams(store, count);
    const signed = await signAll(store, new Notary(store, key));
    return { db, store, key, signed, table: await tableOf(store) };
  }

  it('folds changes into the same roots as the whole tree in memory, across blocks, new streams and old, repeated ones in one set', async () => {
    const store = await (await backend.fresh()).open();
    const table = await NotaryTable.open(store);
    expect(await table.load(() => undefined)).toBe(0n);
    const memory = new HeadsTree();
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    let known = 0;
    const revision = new Map<string, number>();
    for (let step = 1; step <= 25; step++) {
      const changes: StreamHead[] = [];
      // Some new streams (sometimes more than a block), some old ones again, now and then one twice.
      const fresh = step === 3 ? BLOCK_LEAVES * 2 + 5 : rand(40);
      for (let i = 0; i < fresh; i++) changes.push(head(`s-${known++}`, 0, step * 1_000 + i));
      for (let i = 0, old = rand(30); i < old && known > 0; i++) {
        const id = `s-${rand(known)}`;
        revision.set(id, (revision.get(id) ?? 0) + 1);
        changes.push(head(id, revision.get(id)!, step * 1_000 + 500 + i));
      }
      if (changes.length > 1 && step % 4 === 0) changes.push({ ...changes[0]!, hash: sha(`again-${step}`) });
      const plan = await table.plan(changes);
      expect(plan).toMatchObject(memory.rootWith(changes));
      expect(await table.fold(plan, { position: BigInt(step), eventId: `digest-${step}` })).toBe(true);
      for (const h of changes) memory.set(h);
      expect([table.size, table.root()]).toEqual([memory.size, memory.root()]);
    }
    expect(table.size).toBeGreaterThan(3 * BLOCK_LEAVES);
    // The heads it holds are the last ones set.
    const ids = ['s-0', 's-1', `s-${known - 1}`, 'no-such-stream'];
    expect(await table.heads(ids)).toEqual(new Map(ids.filter((id) => memory.get(id)).map((id) => [id, memory.get(id)!])));
  });

  it('a restarted notary reads only the digests recorded after its table\'s, and signs on from the same heads', async () => {
    const db = await backend.fresh();
    const store = await db.open();
    const key = newIdentity();
    await streams(store, 150);
    const writer = new Notary(store, key, undefined, 20);
    const signed = await signAll(store, writer);
    expect(signed.length).toBeGreaterThanOrEqual(8);

    const again = await db.open();
    const read = jest.spyOn(again, 'readStream');
    const restarted = new Notary(again, key, undefined, 20);
    await restarted.sync();
    expect(restarted.latest).toEqual(signed.at(-1));
    expect(restarted.streams).toBe(writer.streams);
    // One read of the digest stream, from after the digest the table holds.
    const digestReads = read.mock.calls.filter(([streamId]) => streamId === DIGEST_STREAM);
    expect(digestReads.map(([, options]) => options?.fromRevision)).toEqual([BigInt(signed.length)]);

    await store.appendToStream('ledger-usage-job-3', [ev('UsageRecorded', { again: true })]);
    const at = new Date().toISOString();
    const fromWriter = (await writer.next(at))!.digest;
    const fromRestarted = (await restarted.next(at))!.digest;
    expect(fromRestarted).toEqual(fromWriter);
  });

  it('two notaries on one table: the one left behind loads the table again and signs on over the other\'s digest', async () => {
    const db = await backend.fresh();
    const [a, b] = [await db.open(), await db.open()];
    const key = newIdentity();
    await streams(a, 30);
    const one = new Notary(a, key);
    const two = new Notary(b, key);
    expect(await sign(a, one)).toMatchObject({ sequence: 1 });
    await two.sync();
    await streams(a, 10, 'ledger-usage-more-');
    expect(await sign(a, one)).toMatchObject({ sequence: 2 });
    await streams(a, 3, 'ledger-usage-late-');
    const d3 = await sign(b, two);
    expect(d3).toMatchObject({ sequence: 3, streams: 44 });
    expect(await verifyStoreDigests(a, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 3 });
  });

  it('attack: a head changed in the table is found before a digest is signed over it; the next pass folds the table again from the signed digests', async () => {
    const store = await (await backend.fresh()).open();
    const key = newIdentity();
    await streams(store, 100);
    const notary = new Notary(store, key);
    await signAll(store, notary);

    // Someone with the database points a stream's head at a history of their own.
    const table = await tableOf(store);
    const victim = 'ledger-usage-job-42';
    const [row] = (await table.query({ where: [{ column: 'key', op: '=', value: `l:${victim}` }] })).rows;
    const [leaf, revision, position] = JSON.parse(row!.doc) as [number, string, string, string];
    await table.put([{ key: row!.key, doc: JSON.stringify([leaf, revision, position, sha('forged')]), values: { kind: 'l', blk: Math.floor(leaf / BLOCK_LEAVES), leaf } }]);

    await store.appendToStream(victim, [ev('UsageRecorded', { after: 'tampering' })]);
    // Its next event does not link to the forged head: the table is looked at before the store is blamed.
    const refused = await notary.next(new Date().toISOString()).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ChainBrokenError);
    expect((refused as Error).message).toMatch(/^the notary's table \(projection_notary_heads\) holds heads for block \d+ \(leaves \d+–\d+\) that do not give its node: a head was changed behind the notary's back; it is folded again from the signed digests at the next pass$/);
    expect((await sign(store, notary))!.heads).toContainEqual(expect.objectContaining({ streamId: victim, revision: '1' }));

    // A head changed in a block where another stream moves: found by the check of the block before its node is computed again.
    const other = 'ledger-usage-job-7';
    const [row7] = (await table.query({ where: [{ column: 'key', op: '=', value: `l:${other}` }] })).rows;
    const [leaf7, rev7, pos7] = JSON.parse(row7!.doc) as [number, string, string, string];
    const block7 = Math.floor(leaf7 / BLOCK_LEAVES);
    await table.put([{ key: row7!.key, doc: JSON.stringify([leaf7, rev7, pos7, sha('forged-7')]), values: { kind: 'l', blk: block7, leaf: leaf7 } }]);
    const neighbour = (await table.query({ where: [{ column: 'kind', op: '=', value: 'l' }, { column: 'blk', op: '=', value: block7 }] })).rows.find((r) => r.key !== row7!.key)!.key.slice(2);
    await store.appendToStream(neighbour, [ev('UsageRecorded', { same: 'block' })]);
    const refolded = new Notary(store, key);
    const found = await refolded.next(new Date().toISOString()).catch((err: unknown) => err);
    expect(found).toBeInstanceOf(ChainBrokenError);
    expect((found as Error).message).toMatch(new RegExp(`holds heads for block ${block7} .* that do not give its node: a head was changed behind the notary's back; it is folded again from the signed digests at the next pass`));

    // The next pass empties the table, folds every digest again and signs over the true heads.
    const d = await sign(store, refolded);
    expect(d).toBeDefined();
    const fresh = new HeadsTree();
    for (const { digest } of await import('./store-digests.js').then((m) => m.readDigests(store))) for (const h of digest.heads) fresh.set(h);
    expect(d!.headsRoot).toBe(fresh.root());
    expect(await table.get([`l:${other}`])).toEqual(new Map([[`l:${other}`, row7!.doc]]));
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true });
  });

  it('attack: a block node changed in the table is found at load; the notary folds the table again and says why', async () => {
    const { db, key, signed, table } = await signedStore(100);
    await table.put([{ key: 'b:1', doc: JSON.stringify(sha('forged-block')), values: { kind: 'b', blk: 1, leaf: null } }]);

    const restarted = new Notary(await db.open(), key);
    const reasons: string[] = [];
    restarted.onRefold = (why) => reasons.push(why);
    await restarted.sync();
    expect(reasons).toEqual([`its nodes do not give digest #${signed.at(-1)!.sequence}'s headsRoot`]);
    expect(restarted.latest).toEqual(signed.at(-1));
    expect((await table.get(['b:1'])).get('b:1')).not.toBe(JSON.stringify(sha('forged-block')));
  });

  it('attack: the table of another store (its position not in this one) is not trusted: emptied and folded from this store\'s digests', async () => {
    const { db, key, signed, table } = await signedStore(40);
    // The table says it folded a digest at a position this store holds another event at.
    const cp = await table.checkpoint();
    expect(await table.reset(cp)).toBe(true);
    expect(await table.commit({ position: 0n, eventId: null }, { position: cp.position, eventId: 'an-event-of-another-store' }, [])).toBe(true);

    const restarted = new Notary(await db.open(), key);
    const reasons: string[] = [];
    restarted.onRefold = (why) => reasons.push(why);
    await restarted.sync();
    expect(reasons).toEqual([`its position ${cp.position} (event an-event-of-another-store) is not in this store (found ${cp.eventId} there)`]);
    expect(restarted.latest).toEqual(signed.at(-1));
    expect(await table.checkpoint()).toEqual(cp);
  });
});
