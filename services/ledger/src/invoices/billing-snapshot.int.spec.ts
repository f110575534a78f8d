/**
 * The ledger's billing snapshot (decision 0039) on both stores: a state loaded from a snapshot
 * with the events after it folded on equals the fold from zero — strictly, as snapshot text byte
 * for byte, and as invoice digests — at every cut point tried, through restarts that each start
 * from the snapshot the one before saved; a restart with nothing new folds nothing; a snapshot
 * that cannot be trusted is not used; rebuild still folds from zero and finds every invoice
 * identical.
 */
import type { InvoiceFinalized } from '#contracts';
import { SnapshotSlot, type EventStore } from '#event-store';
import { EventWriter, systemClock } from '#service-kit';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import pino from 'pino';
import { buildHistoryStore } from '../../../../test/support/history.js';
import { storeBackends, type TestStore } from '../../../../test/support/store-backends.js';
import {
  allInvoices,
  allInvoiceViews,
  BILLING_EVENT_TYPES,
  BILLING_SNAPSHOT_FORMAT,
  canonicalJson,
  decideInvoices,
  decodeBilling,
  encodeBilling,
  initialBilling,
  invoiceStreamId,
  type BillingState,
} from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';
import { BILLING_SNAPSHOT, BillingProjectionService, foldStore } from './billing-projection.service.js';

// Each case builds a history of a few thousand events; PostgreSQL on a busy machine takes seconds.
jest.setTimeout(120_000);
const stores = storeBackends({ prefix: 'gpunet-ledger-snapshot-' });
afterEach(() => stores.cleanUp(), 60_000);

const CUTOFF = 72 * 3_600_000;
const config = { GPUNET_INVOICE_CUTOFF: CUTOFF } as LedgerConfig;

/** The fold from zero, of the ledger's own kind (its settled attempts leave it) unless `settle` is false. */
const fromZero = async (store: EventStore, to?: bigint, settle = true): Promise<BillingState> => {
  const state = initialBilling({ settle });
  await foldStore(store, state, to ?? (await store.headPosition()));
  return state;
};
/** Every invoice view's digest; finalized ones with the copies their events hold (a settling state keeps none). */
const digests = async (state: BillingState, store: EventStore) => {
  const finalized = await store.readAll({ fromPosition: 0n, maxCount: 1_000_000, filter: { types: ['InvoiceFinalized'] } });
  const stored = new Map(finalized.map((e) => [(e.data as InvoiceFinalized).invoice.invoiceId, (e.data as InvoiceFinalized).invoice]));
  return new Map([...allInvoiceViews(state, CUTOFF, stored)].map(([id, v]) => [id, createHash('sha256').update(canonicalJson(v)).digest('hex')]));
};

/** A ledger's billing projection on `store`, started, with its log lines. */
async function start(store: EventStore, settings: Partial<LedgerConfig> = {}): Promise<{ projection: BillingProjectionService; lines: { msg: string; level: number; [k: string]: unknown }[] }> {
  const lines: { msg: string; level: number }[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string; level: number }) });
  const projection = new BillingProjectionService(store, { ...config, ...settings }, logger);
  await projection.onModuleInit();
  return { projection, lines };
}

/** The projection's state, caught up to the head. */
const stateOf = (p: BillingProjectionService) => p.withState((s) => s);

/** Appends as the services write them: price lists, then a month of jobs (some nodes lost, one multi-node attempt). */
async function prices(store: TestStore, version: number, effectiveFrom: string): Promise<void> {
  const writer = new EventWriter(store, 'ledger', systemClock);
  await writer.append('ledger-pricelist', [{ type: 'PriceListPublished', data: { version, currency: 'EUR', effectiveFrom, ratesMicrosPerGpuHour: { A100: 3_500_000 + version, H100: 4_000_000, L40S: 1_200_000 }, defaultRateMicrosPerGpuHour: 2_000_000, publishedAt: effectiveFrom } }]);
}

async function multiNode(store: TestStore, jobId: string, at: string): Promise<void> {
  const agent = new EventWriter(store, 'execution', systemClock);
  const attemptId = `${jobId}-a1`;
  for (const nodeId of ['node-m1', 'node-m2']) {
    const stream = `execution-${nodeId}-attempt-${attemptId}`;
    await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId, attemptId, nodeId, gpuIndices: [0, 1], gpuModel: 'H100', gpus: 2, heldAt: at } }], { team: 'team-1' });
    await agent.append(stream, [{ type: 'JobFinished', data: { jobId, attemptId, nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date(Date.parse(at) + 5_400_017).toISOString() } }], { team: 'team-1' });
  }
}

/** Finalizes what is past its cutoff and issues the credit notes owed, as the invoice closer does. */
async function close(store: TestStore): Promise<{ finalized: number; credited: number }> {
  const writer = new EventWriter(store, 'ledger', systemClock);
  const state = await fromZero(store, undefined, false);
  const { finalize } = decideInvoices(state, Date.now(), CUTOFF);
  for (const f of finalize) await writer.append(invoiceStreamId(f.invoice.team, f.invoice.month), [{ type: 'InvoiceFinalized', data: f }], { expectedRevision: 'no_stream', team: f.invoice.team });
  // A node declared lost after finalization: the charged line it ran becomes a credit note.
  const after = await fromZero(store, undefined, false);
  const line = [...after.finalized.values()].flatMap((f) => f.data.invoice.lines).find((l) => l.amountMicros > 0 && !after.attempts.get(l.lineId)?.lost);
  if (line) {
    const at = new Date().toISOString();
    await new EventWriter(store, 'placement', systemClock).append(`placement-node-${line.nodeId}`, [{ type: 'NodeLost', data: { nodeId: line.nodeId, reason: 'heartbeat_timeout', lastSeenAt: at, detectedAt: at, affectedAttempts: [{ jobId: line.jobId, attemptId: line.attemptId }] } }]);
  }
  const lost = await fromZero(store);
  const { credit } = decideInvoices(lost, Date.now(), CUTOFF);
  for (const c of credit) {
    await writer.append(invoiceStreamId(c.team, c.invoiceId.slice(-7)), [{ type: 'CreditNoteIssued', data: c }], { expectedRevision: BigInt(lost.creditNotes.get(c.invoiceId)?.length ?? 0), team: c.team });
  }
  return { finalized: finalize.length, credited: credit.length };
}

/** Stages of a history: after each one a ledger restarts. */
function stages(store: TestStore): (() => Promise<void>)[] {
  return [
    async () => {
      await prices(store, 1, '1970-01-01T00:00:00.000Z');
      await buildHistoryStore(store, { jobs: 60, nodes: 8, lostEvery: 7, batchJobs: 30, teams: 3 });
    },
    async () => {
      await buildHistoryStore(store, { jobs: 60, nodes: 8, lostEvery: 5, batchJobs: 30, teams: 3, seed: 2, start: '2026-01-10T00:00:00.000Z', days: 10 });
      await multiNode(store, 'multi-node-job', '2026-01-20T00:00:00.000Z');
    },
    async () => {
      const { finalized, credited } = await close(store);
      expect(finalized).toBeGreaterThan(1);
      expect(credited).toBeGreaterThan(0);
    },
    async () => {
      await prices(store, 2, '2026-02-01T00:00:00.000Z');
      await buildHistoryStore(store, { jobs: 40, nodes: 8, lostEvery: 3, batchJobs: 20, teams: 3, seed: 3, start: '2026-02-02T00:00:00.000Z', days: 5 });
      await rerun(store);
    },
  ];
}

/** The attempt {@link rerun} adds: of the store's first job, whose lines are on January's finalized invoice. */
const RERUN = { attempt: 'a9', nodeId: 'node-rerun' };

/** A January job runs again in February, its agent naming no team: the ledger reads the job's team from its JobSubmitted again. */
async function rerun(store: TestStore): Promise<void> {
  const [submitted] = await store.readAll({ fromPosition: 0n, maxCount: 1, filter: { types: ['JobSubmitted'] } });
  const { jobId } = submitted!.data as { jobId: string };
  const attemptId = `${jobId}-${RERUN.attempt}`;
  const agent = new EventWriter(store, 'execution', systemClock);
  const stream = `execution-${RERUN.nodeId}-attempt-${attemptId}`;
  await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId, attemptId, nodeId: RERUN.nodeId, gpuIndices: [0], gpuModel: 'A100', gpus: 1, heldAt: '2026-02-09T00:00:00.000Z' } }]);
  await agent.append(stream, [{ type: 'JobFinished', data: { jobId, attemptId, nodeId: RERUN.nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: '2026-02-09T01:00:00.000Z' } }]);
}

describe.each(stores.backends)('ledger billing snapshot ($name)', (backend) => {
  it('every restart loads the snapshot the one before saved and folds only the tail, equal to a fold from zero; nothing new: nothing folded', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    let previous: bigint = 0n;
    let first = true;
    for (const stage of stages(store)) {
      await stage();
      const head = await store.headPosition();
      const zero = await fromZero(store, head);
      // Every start's fold is a due save here (a stage is fewer billing events than the default's 10,000).
      const { projection, lines } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: 1 });
      const startLine = lines.find((l) => /^billing projection (loaded|folded)/.test(l.msg))!;
      expect(startLine.msg).toMatch(first ? /^billing projection folded from the store/ : new RegExp(`^billing projection loaded from its snapshot at position ${previous} `));
      expect(projection.start!.fromPosition).toBe(first ? 0n : previous);
      expect(projection.start!.events).toBe((await store.readAll({ fromPosition: previous, toPosition: head, maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } })).length);
      const state = await stateOf(projection);
      expect(state).toStrictEqual(zero);
      expect(encodeBilling(state)).toEqual(encodeBilling(zero));
      expect(await digests(state, store)).toEqual(await digests(zero, store));
      // Saved at once after the start's fold, at the head.
      expect(lines.map((l) => l.msg)).toContain('billing snapshot saved');
      const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
      const saved = (await slot.load(() => undefined))!;
      expect(saved.checkpoint.position).toBe(head);
      expect(decodeBilling(saved.parts)).toStrictEqual(zero);
      await projection.onApplicationShutdown();
      previous = head;
      first = false;
    }
    const final = await fromZero(store);
    expect(final.finalized.size).toBeGreaterThan(1);
    expect(final.creditNotes.size).toBeGreaterThan(0);
    const losses = [...final.attempts.values()].filter((a) => a.lost).length + [...final.finalized.values()].reduce((n, f) => n + f.losses!.size, 0);
    expect(losses).toBeGreaterThan(3);
    expect(final.prices.size).toBe(2);
    // Every line on a finalized invoice left the state: the ledger's state holds the other attempts only.
    expect(final.settled.has('multi-node-job-a1@node-m2')).toBe(true);
    expect(final.settled.size).toBe([...final.finalized.values()].reduce((n, f) => n + f.lines, 0));
    const kept = await fromZero(store, undefined, false);
    expect(final.attempts.size).toBe(kept.attempts.size - final.settled.size);
    expect(final.jobTeams.size).toBeLessThan(kept.jobTeams.size);
    // The January job that ran again in February, with no team from its agent: its team was read again, and its line is on the draft as a fold that keeps everything has it.
    const again = [...final.attempts.values()].find((a) => a.key.endsWith(`-${RERUN.attempt}@${RERUN.nodeId}`))!;
    expect(final.jobTeams.get(again.held!.data.jobId)).toEqual(kept.jobTeams.get(again.held!.data.jobId));
    const drafts = (state: BillingState) => [...allInvoices(state)].filter(([id]) => !state.finalized.has(id)).map(([, invoice]) => canonicalJson(invoice));
    expect(drafts(final).some((d) => d.includes(again.key))).toBe(true);
    expect(drafts(final)).toEqual(drafts(kept));

    // Nothing written since: the restart folds nothing and holds the same state; rebuild agrees.
    const { projection, lines } = await start(store);
    expect(projection.start).toEqual({ fromPosition: previous, position: previous, events: 0 });
    expect(lines.map((l) => l.msg)).not.toContain('billing snapshot saved');
    expect(await stateOf(projection)).toStrictEqual(final);
    const rebuilt = await projection.rebuild();
    expect(rebuilt.identical).toBe(true);
    expect(rebuilt.finalized.length).toBe(final.finalized.size);
    // From zero, as before: every billing event of the store, more than once for the finalized ones' positions.
    expect(rebuilt.events).toBeGreaterThanOrEqual((await store.readAll({ maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } })).length);
    await projection.onApplicationShutdown();
  });

  it('a restart that folds a shorter tail than a save is due for serves without rewriting the snapshot; nor does its shutdown, and the next start folds the tail again', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second] = stages(store);
    await first!();
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    const { projection: before } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: 50, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    await before.onApplicationShutdown();
    const saved = (await slot.checkpoint()).position;
    expect(saved).toBe(await store.headPosition());

    await second!();
    const head = await store.headPosition();
    const tail = (await store.readAll({ fromPosition: saved, toPosition: head, maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } })).length;
    expect(tail).toBeGreaterThan(0);
    // A save is due after more billing events than the tail: the start folds it and saves nothing.
    const settings = { GPUNET_LEDGER_SNAPSHOT_EVENTS: tail + 1, GPUNET_LEDGER_SNAPSHOT_MS: 0 };
    for (let restart = 0; restart < 2; restart++) {
      const { projection, lines } = await start(store, settings);
      expect(projection.start).toEqual({ fromPosition: saved, position: head, events: tail });
      expect(await stateOf(projection)).toStrictEqual(await fromZero(store, head));
      // Neither does its shutdown: the next start folds the same tail from the same snapshot.
      await projection.onApplicationShutdown();
      expect(lines.map((l) => l.msg)).not.toContain('billing snapshot saved');
      expect((await slot.checkpoint()).position).toBe(saved);
    }
  });

  it('a restart that folds as many billing events as a save is due for saves at once', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second] = stages(store);
    await first!();
    const { projection: before } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: 50, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    await before.onApplicationShutdown();
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    const saved = (await slot.checkpoint()).position;
    await second!();
    const head = await store.headPosition();
    const tail = (await store.readAll({ fromPosition: saved, toPosition: head, maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } })).length;
    const { projection, lines } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: tail, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    expect(projection.start!.events).toBe(tail);
    // onModuleInit waited for the write: saved before the ledger serves.
    expect(lines.map((l) => l.msg)).toContain('billing snapshot saved');
    expect((await slot.checkpoint()).position).toBe(head);
    await projection.onApplicationShutdown();
  });

  it('a finalized invoice weighs its lines: a start whose tail is a few invoices of more lines than a save is due for saves at once', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second, third] = stages(store);
    await first!();
    await second!();
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    const { projection: before } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: 50, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    await before.onApplicationShutdown();
    const saved = (await slot.checkpoint()).position;
    await third!();
    const head = await store.headPosition();
    const tail = await store.readAll({ fromPosition: saved, toPosition: head, maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } });
    const lines = tail.filter((e) => e.type === 'InvoiceFinalized').reduce((n, e) => n + (e.data as InvoiceFinalized).invoice.lines.length, 0);
    expect(lines).toBeGreaterThan(tail.length + 1);
    // Counted as events the tail is not a save's worth; counted with its lines it is.
    const { projection, lines: log } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: tail.length + 1, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    expect(projection.start!.events).toBe(tail.length);
    expect(log.map((l) => l.msg)).toContain('billing snapshot saved');
    expect((await slot.checkpoint()).position).toBe(head);
    await projection.onApplicationShutdown();
  });

  it('while it runs, the snapshot is saved every so many billing events folded, spaced by its own cost', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second] = stages(store);
    await first!();
    const { projection, lines } = await start(store, { GPUNET_LEDGER_SNAPSHOT_EVENTS: 50, GPUNET_LEDGER_SNAPSHOT_MS: 0 });
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    const started = (await slot.checkpoint()).position;
    expect(started).toBe(await store.headPosition());
    await second!();
    const head = await store.headPosition();
    // Reads (the invoice closer's passes) fold the new events, more than 50: a save is due once
    // a hundred times the last save's duration has passed since it, and is written after a read.
    const end = Date.now() + 30_000;
    while ((await slot.checkpoint()).position !== head) {
      if (Date.now() > end) throw new Error(`snapshot not saved at ${head}: ${JSON.stringify(lines.map((l) => l.msg))}`);
      await stateOf(projection);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(decodeBilling((await slot.load(() => undefined))!.parts)).toStrictEqual(await fromZero(store, head));
    expect(lines.filter((l) => l.msg === 'billing snapshot saved').length).toBe(2);
    await projection.onApplicationShutdown();
  });

  it('snapshot + tail equals a fold from zero at cut points all through the store, as read back from it', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    for (const stage of stages(store)) await stage();
    const head = await store.headPosition();
    const zero = await fromZero(store, head);
    const zeroText = encodeBilling(zero);
    // Positions need not start at 1 nor be dense (PostgreSQL): cut at the k-th event.
    const positions = (await store.readAll({ maxCount: 1_000_000 })).map((e) => e.position);
    const nth = (fraction: number) => positions[Math.min(positions.length - 1, Math.floor(fraction * positions.length))]!;
    const cuts = [positions[0]!, nth(0.1), nth(1 / 3), nth(0.5), nth(0.75), nth(0.9), positions.at(-6)!, positions.at(-2)!, head];
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    for (const cut of cuts) {
      const [at] = await store.readAll({ fromPosition: cut - 1n, toPosition: cut, maxCount: 1 });
      expect(await slot.save(await slot.checkpoint(), { position: cut, eventId: at!.eventId }, encodeBilling(await fromZero(store, cut), { partChars: 4_000 }))).toBe(true);
      const loaded = (await slot.load(() => undefined))!;
      const state = decodeBilling(loaded.parts);
      expect(state).toStrictEqual(await fromZero(store, cut));
      await foldStore(store, state, head);
      expect(state).toStrictEqual(zero);
      expect(encodeBilling(state)).toEqual(zeroText);
      expect(await digests(state, store)).toEqual(await digests(zero, store));
    }
  });

  it('a snapshot the store does not hold, of another format, or whose state is not the fold up to its position, is ignored: the start folds from zero', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [stage] = stages(store);
    await stage!();
    const head = await store.headPosition();
    const zero = await fromZero(store, head);
    expect(zero.attempts.size).toBeGreaterThan(50);
    const positions = (await store.readAll({ maxCount: 1_000_000 })).map((e) => e.position);
    const mid = positions[Math.floor(positions.length / 2)]!;
    const [midEvent] = await store.readAll({ fromPosition: mid - 1n, toPosition: mid, maxCount: 1 });
    const expectFromZero = async (why: RegExp) => {
      const { projection, lines } = await start(store);
      expect(lines.find((l) => /^billing snapshot ignored/.test(l.msg))?.msg).toMatch(why);
      expect(projection.start!.fromPosition).toBe(0n);
      expect(await stateOf(projection)).toStrictEqual(zero);
      await projection.onApplicationShutdown();
    };

    // Another format (a release that writes another text): ignored, and replaced once further.
    const other = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT + 1))!;
    expect(await other.save(await other.checkpoint(), { position: mid, eventId: midEvent!.eventId }, 'whatever it writes')).toBe(true);
    await expectFromZero(new RegExp(`^billing snapshot ignored, folding from the start of the store: its format is ${BILLING_SNAPSHOT_FORMAT + 1}, this release reads ${BILLING_SNAPSHOT_FORMAT}`));

    // A position the store does not hold (another store's snapshot, or a store restored from an
    // older backup): emptied and not used.
    const slot = (await SnapshotSlot.open(store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT))!;
    const beyond = head + 1_000n;
    expect(await slot.save(await slot.checkpoint(), { position: beyond, eventId: '00000000-0000-4000-8000-00000000beef' }, encodeBilling(zero))).toBe(true);
    await expectFromZero(/^billing snapshot ignored, folding from the start of the store: it holds position \d+ .* but the store has no event there/);

    // At a position the store holds, with its event, but the state of another position: never
    // trusted beyond (or short of) its position.
    await prices(store, 3, '2026-03-01T00:00:00.000Z');
    const newHead = await store.headPosition();
    const [headEvent] = await store.readAll({ fromPosition: newHead - 1n, toPosition: newHead, maxCount: 1 });
    expect(await slot.save(await slot.checkpoint(), { position: newHead, eventId: headEvent!.eventId }, encodeBilling(await fromZero(store, mid)))).toBe(true);
    const fresh = await fromZero(store, newHead);
    const { projection, lines } = await start(store);
    expect(lines.find((l) => /^billing snapshot ignored/.test(l.msg))?.msg).toMatch(new RegExp(`its state is the fold up to position ${mid}, its row says ${newHead}`));
    expect(projection.start!.fromPosition).toBe(0n);
    expect(await stateOf(projection)).toStrictEqual(fresh);
    await projection.onApplicationShutdown();
  });
});
