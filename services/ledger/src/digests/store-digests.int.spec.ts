/**
 * Signed chain heads on real SQLite store files, by attack: each tampering is done as someone with
 * the file would (append-only triggers dropped, the chain and the stream heads recomputed exactly
 * as the store computes them), shown to pass the store's own `verify()` (the attack that worked
 * before digests), then caught by `verifyStoreDigests` with the stream and position named.
 */
import { CHAIN_DIGEST_FORMAT, DIGEST_STREAM, LEGACY_CHAIN_DIGEST_FORMAT, type ChainHeadsSigned, type StreamHead } from '#contracts';
import { openEventStore, projectionTablesOf, type EventStore, type EventToAppend } from '#event-store';
import { newIdentity, signBytes, type Identity } from '#identity';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deleteStream, insertIntoStream, rechainStream, truncateStream } from '../../../../test/support/store-tamper.js';
import { digestHash, digestSigningBytes, GENESIS_DIGEST_HASH, signNextDigest, sortedHeadsRoot } from './digest.js';
import { HeadsTree } from './heads-tree.js';
import { NOTARY_TABLE } from './notary-table.js';
import { ChainBrokenError, DEFAULT_MAX_HEADS, Notary, NOTARY_PAGE, readDigests, verifyStoreDigests } from './store-digests.js';

const ATTEMPT = 'execution-node-1-attempt-job-1-a1';
const USAGE = 'ledger-usage-job-1';
let dir = '';
let file = '';
let store: EventStore;
let key: Identity;

function ev(type: string, data: Record<string, unknown>): EventToAppend {
  const id = randomUUID();
  return { eventId: id, type, data, metadata: { correlationId: id, causationId: id, producer: 'fixture', occurredAt: '2026-06-10T00:00:00.000Z' } };
}

/** What the ledger's notary does: the next digest, appended with the expected revision. */
async function sign(notary = new Notary(store, key)): Promise<ChainHeadsSigned | undefined> {
  const d = (await notary.next(new Date().toISOString()))?.digest;
  if (d) await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(d) });
  return d;
}

/** Reopens the store (the attacker wrote the file behind this connection's back). */
async function reopen(): Promise<void> {
  await store.close();
  store = await openEventStore(`sqlite:${file}`);
}

async function positionOf(streamId: string, revision: bigint): Promise<bigint> {
  return (await store.readStream(streamId, { fromRevision: revision, maxCount: 1 }))[0]!.position;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-digests-'));
  file = join(dir, 'events.db');
  store = await openEventStore(`sqlite:${file}`);
  key = newIdentity();
  await store.appendToStream('ledger-pricelist', [ev('PriceListPublished', { version: 1 })]);
  await store.appendToStream(ATTEMPT, [ev('ComputeHeld', { jobId: 'job-1', heldAt: '2026-06-10T10:00:00.000Z' }), ev('JobStarted', { jobId: 'job-1' }), ev('JobFinished', { jobId: 'job-1', finishedAt: '2026-06-10T10:20:00.000Z' })]);
  await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', heldFrom: '2026-06-10T10:00:00.000Z', billableMs: 1_200_000, amountMicros: 1_200_000 })]);
});

afterEach(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('signing the chain heads', () => {
  it('a notary catching up over many digests (a ledger starting) lets other work run between them, and signs on from the same heads', async () => {
    // 30 digests of at most 5 heads each, over 150 streams.
    const writer = new Notary(store, key, undefined, 5);
    for (let i = 0; i < 150; i++) await store.appendToStream(`ledger-usage-job-${i + 2}`, [ev('UsageRecorded', { jobId: `job-${i + 2}` })]);
    const signed: ChainHeadsSigned[] = [];
    for (let d = await sign(writer); d; d = await sign(writer)) signed.push(d);
    expect(signed.length).toBeGreaterThan(30);

    // A ledger whose table of heads is empty (its first start on a store signed before the table
    // existed, or the table folded again) catches up over every digest.
    const table = await projectionTablesOf(store)!.openProjectionTable(NOTARY_TABLE);
    expect(await table.reset(await table.checkpoint())).toBe(true);
    // The SQLite store answers synchronously: a catch-up that never yields holds the event loop
    // (and a leader's lease renewal) until it ends. A callback queued before it must run during it.
    const starting = new Notary(store, key, undefined, 5);
    let done = false;
    let ranDuring = false;
    setImmediate(() => {
      ranDuring = !done;
    });
    await starting.sync();
    done = true;
    expect(ranDuring).toBe(true);
    expect(starting.latest).toEqual(signed.at(-1));

    // Both see the same heads: the next digest after one more event is the same from either.
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const at = new Date().toISOString();
    const fromWriter = (await writer.next(at))!.digest;
    const fromStarting = (await starting.next(at))!.digest;
    expect(fromStarting.headsRoot).toBe(fromWriter.headsRoot);
    expect(fromStarting.streams).toBe(154);
  });

  it('a notary walking many events lets other work run within one page of them (queries answered during a first pass)', async () => {
    for (let i = 0; i < 20; i++) await store.appendToStream(`ledger-usage-job-${i + 2}`, Array.from({ length: 100 }, (_, k) => ev('UsageRecorded', { jobId: `job-${i + 2}`, k })));
    let done = false;
    let ranDuring = false;
    setImmediate(() => {
      ranDuring = !done;
    });
    const d = await new Notary(store, key).next(new Date().toISOString());
    done = true;
    expect(d?.digest.streams).toBe(23);
    expect(ranDuring).toBe(true);
  });

  it('a store signed as format /1 (leaves sorted by stream id) is checked as such, and a notary signs on over it as /2', async () => {
    // Two /1 digests as the notary signed them before /2: every head, sorted, rooted sorted.
    const legacy = async (previous: ChainHeadsSigned | undefined): Promise<ChainHeadsSigned> => {
      const all = new HeadsTree();
      for (const { digest } of await readDigests(store)) for (const h of digest.heads) all.set(h);
      const head = await store.headPosition();
      const changed = new Map<string, StreamHead>();
      for (const e of await store.readAll({ fromPosition: BigInt(previous?.position ?? '0'), toPosition: head })) {
        changed.set(e.streamId, { streamId: e.streamId, revision: e.revision.toString(), position: e.position.toString(), hash: e.hash });
      }
      const heads = [...changed.values()].sort((a, b) => (a.streamId < b.streamId ? -1 : 1));
      for (const h of heads) all.set(h);
      const body: Omit<ChainHeadsSigned, 'signature'> = {
        format: LEGACY_CHAIN_DIGEST_FORMAT,
        sequence: (previous?.sequence ?? 0) + 1,
        position: head.toString(),
        previousPosition: previous?.position ?? '0',
        previousDigestHash: previous ? digestHash(previous) : GENESIS_DIGEST_HASH,
        streams: all.size,
        headsRoot: sortedHeadsRoot(all.heads()),
        heads,
        signedAt: new Date().toISOString(),
        publicKey: key.publicKey,
      };
      const d = { ...body, signature: signBytes(key, digestSigningBytes(body)) };
      await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(d) });
      return d;
    };
    const l1 = await legacy(undefined);
    await store.appendToStream('a-stream-sorted-first', [ev('UsageRecorded', { jobId: 'job-2' })]);
    const l2 = await legacy(l1);
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 2 });

    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const d3 = (await sign())!;
    expect(d3).toMatchObject({ format: CHAIN_DIGEST_FORMAT, sequence: 3, previousDigestHash: digestHash(l2), streams: 5 });
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 3 });

    // The checks still bite on the /1 part: a rewritten stream is named from the first event no digest vouches for (its first: #1 signed it whole).
    const bad = await positionOf(ATTEMPT, 0n);
    await store.close();
    rechainStream(file, ATTEMPT, (e) => (e.revision === 1n ? { ...e.data, edited: true } : undefined));
    store = await openEventStore(`sqlite:${file}`);
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, streamId: ATTEMPT, firstBadPosition: bad });
  });

  it('attack: a notary will not sign on over a digest whose heads do not give its root, even one signed with the network key', async () => {
    const d1 = (await sign())!;
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const honest = (await new Notary(store, key).next(new Date().toISOString()))!.digest;
    const { signature: _s, ...body } = { ...honest, headsRoot: d1.headsRoot };
    const lying = { ...body, signature: signBytes(key, digestSigningBytes(body)) };
    await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', lying as unknown as Record<string, unknown>)], { expectedRevision: 0n });
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 3 })]);
    const notary = new Notary(store, key);
    // Refused at every try, not only at the sync that read the bad digest.
    for (let tries = 0; tries < 2; tries++) {
      const err = await notary.next(new Date().toISOString()).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ChainBrokenError);
      expect((err as Error).message).toMatch(/digest #2's heads do not give its own headsRoot/);
    }
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: false, reason: expect.stringMatching(/digest #2's heads do not give its own headsRoot/) });
  });

  it('signs every head first, then only what moved; not at all when nothing but digests was recorded', async () => {
    const notary = new Notary(store, key);
    const d1 = (await sign(notary))!;
    expect(d1).toMatchObject({ sequence: 1, position: '5', streams: 3 });
    expect(d1.heads.map((h) => h.streamId)).toEqual([ATTEMPT, 'ledger-pricelist', USAGE]);
    expect(await sign(notary)).toBeUndefined();
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const d2 = (await sign(notary))!;
    // The digest stream itself moved too, and is signed as well.
    expect(d2).toMatchObject({ sequence: 2, previousPosition: '5', streams: 4 });
    expect(d2.heads.map((h) => h.streamId)).toEqual([DIGEST_STREAM, USAGE]);
    // A second notary (another ledger, or after a restart) continues the same chain.
    await store.appendToStream(ATTEMPT, [ev('ComputeReleased', { jobId: 'job-1' })]);
    expect(await sign(new Notary(store, key))).toMatchObject({ sequence: 3, previousPosition: d2.position });
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey, exported: (await readDigests(store)).map((r) => r.digest) })).toMatchObject({ ok: true, digests: 3, exported: 3 });
  });

  it('lists at most maxHeads heads per digest: a store where more streams moved is signed in several digests, each checkable', async () => {
    for (let i = 0; i < 7; i += 1) await store.appendToStream(`intake-job-${i}`, [ev('JobSubmitted', { jobId: `job-${i}` })]);
    const notary = new Notary(store, key, undefined, 4);
    const sizes: number[] = [];
    for (;;) {
      const next = await notary.next(new Date().toISOString());
      if (!next) break;
      await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', next.digest as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(next.digest) });
      sizes.push(next.digest.heads.length);
      if (!next.partial) break;
    }
    // 3 + 7 streams: 4, 4, then the last 2 and the digest stream itself (its two digests since).
    expect(sizes).toEqual([4, 4, 3]);
    const digests = (await readDigests(store)).map((r) => r.digest);
    expect(digests.map((d) => d.streams)).toEqual([4, 8, 11]);
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey, exported: digests })).toMatchObject({ ok: true, digests: 3 });
  });

  it('a pass of several digests reads the store about once: at most one page more per digest (the rest of the page it ended in)', async () => {
    // Digests of ten streams × 100 events: each ends mid-page, and the next starts there.
    for (let i = 0; i < 40; i += 1) await store.appendToStream(`ledger-usage-job-${i + 2}`, Array.from({ length: 100 }, (_, k) => ev('UsageRecorded', { jobId: `job-${i + 2}`, k })));
    const events = Number(await store.headPosition());
    let read = 0;
    const readAll = store.readAll.bind(store);
    store.readAll = async (options) => {
      const page = await readAll(options);
      read += page.length;
      return page;
    };
    const notary = new Notary(store, key, undefined, 10);
    let digests = 0;
    for (;;) {
      const next = await notary.next(new Date().toISOString());
      if (!next) break;
      await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', next.digest as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(next.digest) });
      digests += 1;
      if (!next.partial) break;
    }
    expect(digests).toBe(5);
    // Pages of 5,000 read every event after a digest's start again for each digest: 11,215 of 4,005 here.
    expect(read).toBeLessThanOrEqual(events + digests * NOTARY_PAGE);
    // A full digest covers at least maxHeads events (each stream it lists moved), so a page no
    // longer than that reads no more again than the digest itself covers.
    expect(NOTARY_PAGE).toBeLessThanOrEqual(DEFAULT_MAX_HEADS);
    expect(read).toBeGreaterThanOrEqual(events);
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 5 });
  });

  it('reports events after the latest digest as not yet signed', async () => {
    await sign();
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 1, latest: { sequence: 1, position: '5' }, unsignedAfter: '5' });
  });

  it('attack: the notary refuses to sign over an event edited without recomputing the chain', async () => {
    await sign();
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const at = await positionOf(USAGE, 1n);
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(file);
    db.exec('DROP TRIGGER IF EXISTS events_no_update');
    db.prepare("UPDATE events SET data = json_set(data, '$.amountMicros', 5) WHERE position = ?").run(at);
    db.close();
    await reopen();
    const v = await store.verify();
    expect(v).toMatchObject({ ok: false, firstBadPosition: at, streamId: USAGE });
    await expect(new Notary(store, key).next(new Date().toISOString())).rejects.toThrow(ChainBrokenError);
  });
});

describe('a history rewritten with a recomputed chain, against the signed heads', () => {
  it('attack: ComputeHeld.heldAt and the usage line rewritten and re-chained pass the chain, fail the digest at the rewritten position', async () => {
    await sign();
    const held = await positionOf(ATTEMPT, 0n);
    const usage = await positionOf(USAGE, 0n);
    await store.close();
    expect(rechainStream(file, ATTEMPT, (e) => (e.type === 'ComputeHeld' ? { ...e.data, heldAt: '2026-06-10T10:15:00.000Z' } : undefined))).toEqual([held]);
    rechainStream(file, USAGE, (e) => ({ ...e.data, heldFrom: '2026-06-10T10:15:00.000Z', billableMs: 300_000, amountMicros: 300_000 }));
    store = await openEventStore(`sqlite:${file}`);
    // Before signed heads, this passed: the chain and every stream head are consistent.
    expect(await store.verify()).toMatchObject({ ok: true });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, firstBadPosition: held, streamId: ATTEMPT, revision: '0' });
    expect(d.ok === false && d.reason).toMatch(/rewritten from its first event .* signed digest #1/);
    expect(usage).toBeGreaterThan(held);
  });

  it('attack: a rewrite after an earlier digest is named from the first revision no digest vouches for', async () => {
    await sign();
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 }), ev('UsageRecorded', { jobId: 'job-1', attempt: 3 })]);
    await sign();
    const second = await positionOf(USAGE, 1n);
    await store.close();
    rechainStream(file, USAGE, (e) => (e.revision === 2n ? { ...e.data, amountMicros: 0 } : undefined));
    store = await openEventStore(`sqlite:${file}`);
    expect(await store.verify()).toMatchObject({ ok: true });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, firstBadPosition: second, streamId: USAGE, revision: '1' });
    expect(d.ok === false && d.reason).toMatch(/after revision 0 \(position \d+\), which digest #1 vouches for/);
  });

  it('attack: a deleted tail, re-headed, passes the chain, fails the digest', async () => {
    await sign();
    const finished = await positionOf(ATTEMPT, 2n);
    await store.close();
    truncateStream(file, ATTEMPT, 2n);
    store = await openEventStore(`sqlite:${file}`);
    expect(await store.verify()).toMatchObject({ ok: true });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, firstBadPosition: finished, streamId: ATTEMPT, revision: '2' });
    expect(d.ok === false && d.reason).toMatch(/ends at revision 1 .* recorded revision 2/);
  });

  it('attack: an event inserted into a signed stream, re-chained, passes the chain, fails the digest', async () => {
    await sign();
    const started = await positionOf(ATTEMPT, 1n);
    await store.close();
    insertIntoStream(file, ATTEMPT, 0n, { eventId: randomUUID(), type: 'JobCheckpointed', data: { jobId: 'job-1' } });
    store = await openEventStore(`sqlite:${file}`);
    expect(await store.verify()).toMatchObject({ ok: true });
    expect((await store.readStream(ATTEMPT))[1]).toMatchObject({ type: 'JobCheckpointed', position: started });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, streamId: ATTEMPT });
  });

  it('attack: digests forged with another key over the rewritten history fail against the network key; so does checking with a wrong key', async () => {
    await sign();
    const mallory = newIdentity();
    const wrongKey = await verifyStoreDigests(store, { publicKey: mallory.publicKey });
    expect(wrongKey.ok === false && wrongKey.reason).toMatch(/digest #1 is signed by key .* not by the network key/);
    await store.close();
    rechainStream(file, ATTEMPT, (e) => (e.type === 'ComputeHeld' ? { ...e.data, heldAt: '2026-06-10T10:15:00.000Z' } : undefined));
    // The attacker drops the real digests and signs the rewritten heads with a key of their own.
    deleteStream(file, DIGEST_STREAM);
    store = await openEventStore(`sqlite:${file}`);
    await sign(new Notary(store, mallory));
    expect(await store.verify()).toMatchObject({ ok: true });
    expect(await verifyStoreDigests(store, { publicKey: mallory.publicKey })).toMatchObject({ ok: true });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d).toMatchObject({ ok: false, streamId: DIGEST_STREAM });
    expect(d.ok === false && d.reason).toMatch(/signed by key .* not by the network key/);

    // The network key's name on the attacker's signature does not help either.
    const [forged] = (await readDigests(store)).map((r) => r.digest);
    const relabeled = { ...forged!, publicKey: key.publicKey };
    const check = await verifyStoreDigests(store, { publicKey: key.publicKey, exported: [relabeled] });
    expect(check.ok === false && check.reason).toMatch(/does not match its signature/);
  });

  it('attack: digests deleted from the store are found with the ones exported earlier', async () => {
    await sign();
    const exported = (await readDigests(store)).map((r) => r.digest);
    await store.close();
    rechainStream(file, ATTEMPT, (e) => (e.type === 'ComputeHeld' ? { ...e.data, heldAt: '2026-06-10T10:15:00.000Z' } : undefined));
    deleteStream(file, DIGEST_STREAM);
    store = await openEventStore(`sqlite:${file}`);
    expect(await store.verify()).toMatchObject({ ok: true });
    // Without the exported digests nothing vouches for the history: said, not hidden.
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 0, unsignedAfter: '0' });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey, exported });
    expect(d).toMatchObject({ ok: false, streamId: DIGEST_STREAM, firstBadPosition: 5n });
    expect(d.ok === false && d.reason).toMatch(/digest #1 .* was exported earlier but is not in the store/);
  });

  it('attack: a digest cut out of the chain of digests is named', async () => {
    await sign();
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 2 })]);
    const d2 = (await sign())!;
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', attempt: 3 })]);
    const d3 = (await sign())!;
    await store.close();
    truncateStream(file, DIGEST_STREAM, 1n);
    store = await openEventStore(`sqlite:${file}`);
    await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d3 as unknown as Record<string, unknown>)], { expectedRevision: 0n });
    expect(await store.verify()).toMatchObject({ ok: true });
    const d = await verifyStoreDigests(store, { publicKey: key.publicKey });
    expect(d.ok === false && d.reason).toMatch(/digest #3 where #2 was due/);
    // A replacement #2 signed over other heads does not chain to what #3 says came before it.
    const other = signNextDigest({ previous: (await readDigests(store))[0]!.digest, tree: new HeadsTree(), changed: [], position: BigInt(d2.position), signedAt: d2.signedAt, identity: key });
    const e = await verifyStoreDigests(store, { publicKey: key.publicKey, exported: [other] });
    expect(e.ok).toBe(false);
  });
});
