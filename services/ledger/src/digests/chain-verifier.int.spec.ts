/**
 * The chain's verification status on real SQLite store files, by attack: someone with the store
 * file edits an event row (with or without recomputing the chain); the status says not verified
 * and names the position. Between attacks, passes after the first read only the tail.
 */
import { DIGEST_STREAM } from '#contracts';
import { openEventStore, type EventStore, type EventToAppend } from '#event-store';
import { newIdentity, type Identity } from '#identity';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alterEvent, rechainStream } from '../../../../test/support/store-tamper.js';
import { ChainVerifier } from './chain-verifier.js';
import { Notary } from './store-digests.js';

const USAGE = 'ledger-usage-job-1';
let dir = '';
let file = '';
let store: EventStore;
let key: Identity;

function ev(type: string, data: Record<string, unknown>): EventToAppend {
  const id = randomUUID();
  return { eventId: id, type, data, metadata: { correlationId: id, causationId: id, producer: 'fixture', occurredAt: '2026-06-10T00:00:00.000Z' } };
}

async function sign(): Promise<void> {
  const d = (await new Notary(store, key).next(new Date().toISOString()))!.digest;
  await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d as unknown as Record<string, unknown>)], { expectedRevision: Notary.expectedRevision(d) });
}

async function reopen(): Promise<void> {
  await store.close();
  store = await openEventStore(`sqlite:${file}`);
}

const verifier = (publicKey?: string) => new ChainVerifier(store, { publicKey, now: () => new Date() });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-chain-'));
  file = join(dir, 'events.db');
  store = await openEventStore(`sqlite:${file}`);
  key = newIdentity();
  await store.appendToStream('ledger-pricelist', [ev('PriceListPublished', { version: 1 })]);
  await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', amountMicros: 1_200_000 }), ev('UsageRecorded', { jobId: 'job-1', amountMicros: 300_000 })]);
});

afterEach(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the chain verification status', () => {
  it('verifies a fresh store, then only the tail, up to the head each time', async () => {
    await sign();
    const v = verifier(key.publicKey);
    expect(await v.check(false)).toMatchObject({ verified: true, pass: 'full', verifiedUpTo: '4', events: 4, streams: 3, signatures: 'checked', latestSignedHead: { sequence: 1, position: '3', publicKey: key.publicKey } });
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', amountMicros: 5 })]);
    await store.appendToStream('ledger-usage-job-2', [ev('UsageRecorded', { jobId: 'job-2', amountMicros: 7 })]);
    await sign();
    const tail = await v.check(false);
    expect(tail).toMatchObject({ verified: true, pass: 'tail', verifiedUpTo: '7', checkedNow: 3, events: 7, streams: 4, latestSignedHead: { sequence: 2, position: '6' } });
    expect(tail.firstBad).toBeUndefined();
  });

  it('names the position of an event row edited in the store file, on a full pass ("verify now")', async () => {
    const v = verifier();
    expect(await v.check(false)).toMatchObject({ verified: true, verifiedUpTo: '3', signatures: 'unchecked' });
    // Someone with the file lowers the charge of the first usage event (position 2), hash untouched.
    alterEvent(file, 2n, { jobId: 'job-1', amountMicros: 600_000 });
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', amountMicros: 5 })]);
    // A tail pass reads only what is new, and the new event links to an untouched one: it says
    // "verified up to 4" on the strength of the last full pass, which is why "verify now" is full.
    expect(await v.check(false)).toMatchObject({ verified: true, pass: 'tail', verifiedUpTo: '4', checkedNow: 1 });
    expect(await v.check(true)).toMatchObject({ verified: false, pass: 'full', verifiedUpTo: '1', lastFullAt: null, firstBad: { position: '2', streamId: USAGE, reason: expect.stringContaining('hash does not match') } });
  });

  it('finds an event edited in the tail since the last pass, and keeps saying so', async () => {
    const v = verifier();
    await v.check(false);
    await store.appendToStream(USAGE, [ev('UsageRecorded', { jobId: 'job-1', amountMicros: 5 })]);
    alterEvent(file, 4n, { jobId: 'job-1', amountMicros: 1 });
    expect(await v.check(false)).toMatchObject({ verified: false, pass: 'tail', verifiedUpTo: '3', firstBad: { position: '4', streamId: USAGE } });
    // Once broken, the next question walks the whole store again (and finds it still broken).
    expect(await v.check(false)).toMatchObject({ verified: false, pass: 'full', firstBad: { position: '4', streamId: USAGE } });
  });

  it('with the public key, catches a rewrite that recomputed the chain: the store no longer reaches its signed heads', async () => {
    await sign();
    const v = verifier(key.publicKey);
    expect(await v.check(false)).toMatchObject({ verified: true });
    await reopen();
    rechainStream(file, USAGE, (e) => (e.revision === 0n ? { ...e.data, amountMicros: 1 } : undefined));
    expect((await store.verify()).ok).toBe(true); // the links alone hold again
    expect(await verifier(key.publicKey).check(true)).toMatchObject({ verified: false, firstBad: { position: '2', streamId: USAGE, reason: expect.stringContaining('rewritten') } });
  });
});
