/**
 * Replay and dispute bundles against a real event store, SQLite and PostgreSQL (the latter with
 * an HMAC chain key): the recorded invoice re-derives identically, a what-if price list and an
 * altered copy show line diffs with their events, and a bundle checks offline until one event,
 * the invoice or a stream's end is tampered with; a bundle edited and re-chained whole (hashes,
 * heads and invoice recomputed) still checks without the public key, and fails with it.
 */
import { DIGEST_STREAM, reportSigningBytes, type InvoiceBody, type InvoiceFinalized } from '#contracts';
import { computeEventHash, GENESIS_HASH, openEventStore, type EventStore, type EventToAppend, type RecordedEvent } from '#event-store';
import { newIdentity, signBytes, type Identity } from '#identity';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { Notary, latestDigestTree } from '../digests/store-digests.js';
import { deriveInvoice } from '../domain/index.js';
import { buildBundle, verifyBundle, type BundleEvent, type DisputeBundle } from './bundle.js';
import { replayInvoice, whatIfPrices } from './invoice-replay.js';
import { replayJob } from './job-replay.js';

const TEAM = 'team-a';
const MONTH = '2026-06';

let dir: string;
let db: TestDatabase | undefined;
let store: EventStore;
/** The chain key of the adapter under test (PostgreSQL runs keyed, SQLite plain). */
let chainKey: string | undefined;

function ev(type: string, data: Record<string, unknown>, meta: { team?: string; jobId?: string; producer: string }): EventToAppend {
  const id = randomUUID();
  return { eventId: id, type, data, metadata: { correlationId: id, causationId: id, producer: meta.producer, occurredAt: '2026-06-10T00:00:00.000Z', ...(meta.team ? { team: meta.team } : {}), ...(meta.jobId ? { jobId: meta.jobId } : {}) } };
}

/** One job of `gpus` GPUs on node-1 held `ms` from `heldAt`: intake, agent and ledger streams as the services write them. */
async function job(jobId: string, heldAt: string, finishedAt: string, gpus = 1): Promise<void> {
  const spec = { work: { kind: 'script', script: { inline: 'true' } }, data: { inputs: [] }, request: { gpus, timeLimitMs: 60_000, network: false }, outputs: { globs: ['**'], maxBytes: 1_000_000 } };
  await store.appendToStream(`intake-job-${jobId}`, [ev('JobSubmitted', { jobId, team: TEAM, spec, submittedAt: heldAt }, { team: TEAM, jobId, producer: 'intake' })]);
  const attemptId = `${jobId}-a1`;
  const gpuIndices = Array.from({ length: gpus }, (_, i) => i);
  await store.appendToStream(`execution-node-1-attempt-${attemptId}`, [
    ev('ComputeHeld', { jobId, attemptId, nodeId: 'node-1', gpuIndices, gpuModel: 'sim-gpu', gpus, heldAt }, { team: TEAM, jobId, producer: 'execution' }),
    ev('JobStarted', { jobId, attemptId, nodeId: 'node-1', startedAt: heldAt }, { team: TEAM, jobId, producer: 'execution' }),
  ]);
  await store.appendToStream(`execution-node-1-attempt-${attemptId}`, [
    ev('JobFinished', { jobId, attemptId, nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt }, { team: TEAM, jobId, producer: 'execution' }),
    ev('ComputeReleased', { jobId, attemptId, nodeId: 'node-1', gpuIndices, releasedAt: finishedAt }, { team: TEAM, jobId, producer: 'execution' }),
  ]);
}

async function all(): Promise<RecordedEvent[]> {
  return store.readAll({ maxCount: 100_000 });
}

/** Finalizes the month's invoice as the ledger would: derived at the head, recorded in its own stream. */
async function finalize(): Promise<{ invoice: InvoiceBody; event: RecordedEvent }> {
  const invoice = deriveInvoice(await all(), { team: TEAM, month: MONTH, asOf: await store.headPosition() });
  const data: InvoiceFinalized = { invoice, finalizedAt: '2026-07-03T00:00:00.000Z', cutoffMs: 86_400_000 };
  await store.appendToStream(`ledger-invoice-${TEAM}-${MONTH}`, [ev('InvoiceFinalized', data as unknown as Record<string, unknown>, { team: TEAM, producer: 'ledger' })]);
  const event = (await store.readStream(`ledger-invoice-${TEAM}-${MONTH}`))[0]!;
  return { invoice, event };
}

async function bundleOf(invoice: InvoiceBody, finalized: RecordedEvent): Promise<DisputeBundle> {
  const events = await all();
  const streams = new Set([finalized.streamId, 'ledger-pricelist', ...events.filter((e) => invoice.lines.some((l) => l.eventIds.includes(e.eventId))).map((e) => e.streamId)]);
  const whole = await Promise.all([...streams].map((s) => store.readStream(s)));
  const signed = await latestDigestTree(store);
  return buildBundle({ invoice, invoiceStatus: 'finalized', finalizedEventId: finalized.eventId, streams: whole, chainKeyed: chainKey !== undefined, createdAt: '2026-07-04T00:00:00.000Z', ...(signed ? { signed } : {}) });
}

/** What the ledger's notary does with the network key: sign the heads, record the digest. */
async function signHeads(key: Identity): Promise<void> {
  const d = (await new Notary(store, key, chainKey).next('2026-07-04T00:00:00.000Z'))!.digest;
  await store.appendToStream(DIGEST_STREAM, [ev('ChainHeadsSigned', d as unknown as Record<string, unknown>, { producer: 'ledger' })], { expectedRevision: Notary.expectedRevision(d) });
}

/** An attacker's re-chain of a bundle stream: every hash from genesis and the head recomputed (they know sha256, and the key if there is one). */
function rechain(bundle: DisputeBundle, streamId: string): void {
  const s = bundle.streams.find((x) => x.streamId === streamId)!;
  let prev = GENESIS_HASH;
  for (const e of s.events) {
    e.hash = computeEventHash(prev, { ...e, revision: BigInt(e.revision), position: BigInt(e.position) }, chainKey);
    prev = e.hash;
  }
  const last = s.events[s.events.length - 1]!;
  s.head = { revision: last.revision, position: last.position, hash: last.hash };
}

/** JobFinished of job-1 ten minutes earlier, the invoice re-derived and its InvoiceFinalized rewritten, every chain recomputed. */
function forge(bundle: DisputeBundle): DisputeBundle {
  const forged = structuredClone(bundle);
  const all = forged.streams.flatMap((s) => s.events);
  const finished = all.find((e) => e.type === 'JobFinished' && (e.data as { jobId: string }).jobId === 'job-1')!;
  (finished.data as { finishedAt: string }).finishedAt = '2026-06-10T10:10:00.000Z';
  const stored = (es: BundleEvent[]) => [...es].sort((a, b) => Number(BigInt(a.position) - BigInt(b.position))).map((e) => ({ ...e, position: BigInt(e.position) }));
  const fin = all.find((e) => e.type === 'InvoiceFinalized')!;
  const invoice = deriveInvoice(stored(all.filter((e) => e !== fin)), { team: TEAM, month: MONTH, asOf: BigInt(forged.invoice.derivedAtPosition) });
  (fin.data as InvoiceFinalized).invoice = invoice;
  forged.invoice = invoice;
  rechain(forged, finished.streamId);
  rechain(forged, fin.streamId);
  return forged;
}

const ADAPTERS = ['sqlite', 'postgres'] as const;

async function open(adapter: (typeof ADAPTERS)[number]): Promise<void> {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-replay-'));
  if (adapter === 'postgres') {
    db = await createTestDatabase();
    chainKey = 'test-chain-key';
    store = await openEventStore(db.url, { chainKey, postgres: { poolSize: 2 } });
  } else {
    chainKey = undefined;
    store = await openEventStore(`sqlite:${join(dir, 'events.db')}`);
  }
  await store.appendToStream('ledger-pricelist', [
    ev('PriceListPublished', { version: 1, currency: 'EUR', effectiveFrom: '2026-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000 }, publishedAt: '2026-01-01T00:00:00.000Z' }, { producer: 'ledger' }),
  ]);
  await job('job-1', '2026-06-10T10:00:00.000Z', '2026-06-10T10:20:34.567Z', 2);
  await job('job-2', '2026-06-11T10:00:00.000Z', '2026-06-11T10:00:01.000Z', 1);
}

afterEach(async () => {
  await store.close();
  await db?.drop();
  db = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe.each(ADAPTERS)('on %s', (adapter) => {
  beforeEach(() => open(adapter));

  describe('gpunet replay invoice', () => {
    it('re-derives a finalized invoice as of its recorded position byte for byte, even after later events', async () => {
      const { invoice } = await finalize();
      await job('job-3', '2026-06-20T10:00:00.000Z', '2026-06-20T11:00:00.000Z');
      const r = replayInvoice(await all(), invoice);
      expect(r.identical).toBe(true);
      expect(r.lines.map((l) => [l.lineId, l.status])).toEqual([
        ['job-1-a1@node-1', 'same'],
        ['job-2-a1@node-1', 'same'],
      ]);
      // Each line names its events: ComputeHeld, JobFinished, then the price list.
      const types = new Map((await all()).map((e) => [e.eventId, e.type]));
      expect(r.lines[0]!.eventIds.map((id) => types.get(id))).toEqual(['ComputeHeld', 'JobFinished', 'PriceListPublished']);
    });

    it('under a what-if price list every line differs in rate and amount, and nothing is written', async () => {
      const { invoice } = await finalize();
      const before = await store.headPosition();
      const r = replayInvoice(await all(), invoice, { prices: whatIfPrices({ currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 7_200_000 } }) });
      expect(r.identical).toBe(false);
      expect(r.whatIf).toBe(true);
      const line = r.lines.find((l) => l.lineId === 'job-1-a1@node-1')!;
      expect(line.status).toBe('changed');
      expect(line.changes).toEqual(expect.arrayContaining([{ field: 'rateMicrosPerGpuHour', recorded: 3_600_000, derived: 7_200_000 }, { field: 'amountMicros', recorded: 2_469_134, derived: 4_938_268 }]));
      expect(r.totals).toEqual([{ currency: 'EUR', recorded: invoice.totals[0]!.amountMicros, derived: 2 * invoice.totals[0]!.amountMicros }]);
      expect(await store.headPosition()).toBe(before);
    });

    it('an altered copy of the invoice (an amount, a missing line) is named line by line', async () => {
      const { invoice } = await finalize();
      const altered = structuredClone(invoice);
      altered.lines[0]!.amountMicros += 1;
      const dropped = altered.lines.splice(1, 1)[0]!;
      const r = replayInvoice(await all(), altered);
      expect(r.identical).toBe(false);
      expect(r.lines.find((l) => l.lineId === altered.lines[0]!.lineId)).toMatchObject({ status: 'changed', changes: [{ field: 'amountMicros', recorded: 2_469_135, derived: 2_469_134 }] });
      expect(r.lines.find((l) => l.lineId === dropped.lineId)).toMatchObject({ status: 'extra', eventIds: dropped.eventIds });
    });

    it('whatIfPrices names the field of a bad price file', () => {
      expect(() => whatIfPrices({ currency: 'euro', ratesMicrosPerGpuHour: { a: 1.5 } })).toThrow(expect.objectContaining({ issues: expect.arrayContaining([expect.objectContaining({ path: 'currency' }), expect.objectContaining({ path: 'ratesMicrosPerGpuHour' })]) }));
    });
  });

  describe('gpunet replay job', () => {
    it("re-derives a job's usage lines from the agents' events and flags a recorded line that does not follow from them", async () => {
      const line = (jobId: string, amountMicros: number) => ({
        jobId,
        attemptId: `${jobId}-a1`,
        team: TEAM,
        nodeId: 'node-1',
        gpuModel: 'sim-gpu',
        gpus: jobId === 'job-1' ? 2 : 1,
        outcome: 'completed',
        heldFrom: jobId === 'job-1' ? '2026-06-10T10:00:00.000Z' : '2026-06-11T10:00:00.000Z',
        finishedAt: jobId === 'job-1' ? '2026-06-10T10:20:34.567Z' : '2026-06-11T10:00:01.000Z',
        billableMs: jobId === 'job-1' ? 1_234_567 : 1_000,
        rateMicrosPerGpuHour: 3_600_000,
        amountMicros,
        currency: 'EUR',
        priceListVersion: 1,
        rounding: 'per-line-half-up-micros',
        recordedAt: '2026-06-12T00:00:00.000Z',
      });
      await store.appendToStream('ledger-usage-job-1', [ev('UsageRecorded', line('job-1', 2_469_134), { team: TEAM, jobId: 'job-1', producer: 'ledger' })]);
      await store.appendToStream('ledger-usage-job-2', [ev('UsageRecorded', line('job-2', 999), { team: TEAM, jobId: 'job-2', producer: 'ledger' })]);
      const events = await all();
      const head = await store.headPosition();
      const ok = replayJob(events, 'job-1', head);
      expect(ok.identical).toBe(true);
      expect(ok.lines[0]!.eventIds).toHaveLength(4);
      const bad = replayJob(events, 'job-2', head);
      expect(bad.identical).toBe(false);
      expect(bad.lines[0]).toMatchObject({ status: 'changed', changes: [{ field: 'amountMicros', recorded: 999, derived: 1_000 }] });
    });
  });

  describe('dispute bundle, checked offline', () => {
    it('holds when untouched: whole streams from genesis to their heads, and the invoice re-derived byte for byte', async () => {
      const { invoice, event } = await finalize();
      const bundle = await bundleOf(invoice, event);
      // A round trip through JSON, as the file goes: no store, no network from here on.
      const v = verifyBundle(JSON.parse(JSON.stringify(bundle)), chainKey);
      expect(v.problems).toEqual([]);
      expect(v.ok).toBe(true);
      expect(v.streams).toBe(bundle.streams.length);
      expect(bundle.contributingEventIds).toContain(event.eventId);
    });

    it('one altered event fails, naming that event; so does a removed event, a cut stream end, an altered invoice, a missing key', async () => {
      const { invoice, event } = await finalize();
      const bundle = await bundleOf(invoice, event);
      const attempt = bundle.streams.find((s) => s.streamId === 'execution-node-1-attempt-job-1-a1')!;
      const finished = attempt.events.find((e) => e.type === 'JobFinished')!;

      const edited = structuredClone(bundle);
      const target = edited.streams.find((s) => s.streamId === attempt.streamId)!.events.find((e) => e.eventId === finished.eventId)!;
      (target.data as { finishedAt: string }).finishedAt = '2026-06-10T10:10:00.000Z';
      const v1 = verifyBundle(JSON.parse(JSON.stringify(edited)), chainKey);
      expect(v1.ok).toBe(false);
      expect(v1.problems[0]).toMatchObject({ check: 'chain', eventId: finished.eventId, streamId: attempt.streamId });
      expect(v1.problems[0]!.message).toContain(finished.eventId);

      const removed = structuredClone(bundle);
      removed.streams.find((s) => s.streamId === attempt.streamId)!.events.splice(1, 1);
      expect(verifyBundle(removed, chainKey).problems[0]).toMatchObject({ check: 'chain', streamId: attempt.streamId });

      const cut = structuredClone(bundle);
      cut.streams.find((s) => s.streamId === attempt.streamId)!.events.pop();
      expect(verifyBundle(cut, chainKey).problems).toEqual([expect.objectContaining({ check: 'head', streamId: attempt.streamId })]);

      const cheaper = structuredClone(bundle);
      cheaper.invoice.lines[0]!.amountMicros -= 1;
      const v4 = verifyBundle(cheaper, chainKey);
      expect(v4.ok).toBe(false);
      expect(v4.problems.map((p) => p.message).join('\n')).toMatch(/not the one InvoiceFinalized|amountMicros/);

      const keyed = { ...structuredClone(bundle), chain: 'hmac-sha256' };
      expect(verifyBundle(keyed).problems[0]!.message).toMatch(/GPUNET_CHAIN_KEY/);
      // A keyed chain checked with the wrong key fails at the first event.
      if (chainKey) expect(verifyBundle(bundle, 'wrong-key').problems[0]).toMatchObject({ check: 'chain' });
    });

    it('attack: a bundle edited and re-chained whole passes without the public key, and fails with it, naming the stream', async () => {
      const { invoice, event } = await finalize();
      const key = newIdentity();
      await signHeads(key);
      const bundle = await bundleOf(invoice, event);
      expect(bundle.signedHeads?.digest).toMatchObject({ sequence: 1, publicKey: key.publicKey });
      expect(verifyBundle(JSON.parse(JSON.stringify(bundle)), chainKey, key.publicKey)).toMatchObject({ ok: true, problems: [], signedBy: { sequence: 1, publicKey: key.publicKey } });

      const forged = forge(bundle);
      expect(forged.invoice.lines[0]!.amountMicros).toBeLessThan(invoice.lines[0]!.amountMicros);
      // Before signed heads this was the whole check, and the forgery passed it.
      expect(verifyBundle(JSON.parse(JSON.stringify(forged)), chainKey)).toMatchObject({ ok: true });
      const v = verifyBundle(JSON.parse(JSON.stringify(forged)), chainKey, key.publicKey);
      expect(v.ok).toBe(false);
      expect(v.problems.map((p) => p.streamId)).toEqual(expect.arrayContaining(['execution-node-1-attempt-job-1-a1', `ledger-invoice-${TEAM}-${MONTH}`]));
      expect(v.problems[0]).toMatchObject({ check: 'signature' });
      expect(v.problems[0]!.message).toMatch(/edited and re-chained/);

      // The proofs rewritten to the forged heads do not reach the signed root; a digest re-signed with another key is not the network's.
      const proofsToo = structuredClone(forged);
      for (const p of proofsToo.signedHeads!.proofs) {
        const s = proofsToo.streams.find((x) => x.streamId === p.head.streamId)!;
        const at = s.events.filter((e) => BigInt(e.position) <= BigInt(proofsToo.signedHeads!.digest.position)).pop()!;
        p.head = { ...p.head, hash: at.hash };
      }
      expect(verifyBundle(proofsToo, chainKey, key.publicKey).problems[0]!.message).toMatch(/is not in the root digest #1 signed/);
      const resigned = structuredClone(forged);
      resigned.signedHeads!.digest = { ...resigned.signedHeads!.digest, headsRoot: '0'.repeat(64) };
      expect(verifyBundle(resigned, chainKey, key.publicKey).problems[0]).toMatchObject({ check: 'signature', message: expect.stringMatching(/does not match its signature/) });
      expect(verifyBundle(bundle, chainKey, newIdentity().publicKey).problems[0]!.message).toMatch(/not by the network key/);

      // A bundle without signed heads cannot pass a check that asks for them.
      const unsigned = structuredClone(bundle);
      delete unsigned.signedHeads;
      expect(verifyBundle(unsigned, chainKey, key.publicKey).problems[0]!.message).toMatch(/carries no signed chain heads/);
    });

    it('carries and checks node report signatures; an event the node did not sign that way fails', async () => {
      const node = newIdentity();
      const data = { jobId: 'job-9', attemptId: 'job-9-a1', nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: '2026-06-12T10:00:00.000Z' };
      const e = ev('JobFinished', data, { team: TEAM, jobId: 'job-9', producer: 'execution' });
      // Signed as a node signs its report; kept as the recorder keeps it (metadata.report).
      const streamId = 'execution-node-1-attempt-job-9-a1';
      const nodeMetadata = { correlationId: e.metadata.correlationId, causationId: e.metadata.causationId, jobId: 'job-9', producer: 'execution', occurredAt: e.metadata.occurredAt };
      const body = { nodeId: 'node-1', journal: 'j1', seq: '7', event: { streamId, eventId: e.eventId, type: 'JobFinished', data, metadata: nodeMetadata } };
      const report = { nodeId: 'node-1', publicKey: node.publicKey, signature: signBytes(node, reportSigningBytes(body)), journal: 'j1', seq: '7', metadata: nodeMetadata };
      await store.appendToStream(streamId, [{ ...e, metadata: { ...e.metadata, report } as typeof e.metadata }]);
      const { invoice, event } = await finalize();
      const key = newIdentity();
      await signHeads(key);
      const whole = await bundleOf(invoice, event);
      const bundle = buildBundle({ invoice, invoiceStatus: 'finalized', finalizedEventId: event.eventId, streams: [...(await Promise.all(whole.streams.map((s) => store.readStream(s.streamId)))), await store.readStream('execution-node-1-attempt-job-9-a1')], chainKeyed: chainKey !== undefined, createdAt: '2026-07-04T00:00:00.000Z', signed: (await latestDigestTree(store))! });
      expect(bundle.reports).toEqual([expect.objectContaining({ nodeId: 'node-1', publicKey: node.publicKey })]);
      expect(verifyBundle(JSON.parse(JSON.stringify(bundle)), chainKey, key.publicKey)).toMatchObject({ ok: true, reports: 1 });

      const edited = structuredClone(bundle);
      const s = edited.streams.find((x) => x.streamId === 'execution-node-1-attempt-job-9-a1')!;
      (s.events[0]!.data as { exitCode: number }).exitCode = 1;
      rechain(edited, s.streamId);
      const v = verifyBundle(edited, chainKey);
      expect(v.problems).toEqual([expect.objectContaining({ check: 'report', streamId: s.streamId, message: expect.stringMatching(/node node-1's report signature .* does not hold/) })]);
    });
  });
});
