/**
 * The ledger's billing table (decision 0053) on both stores: the lines in the store's database,
 * the headers in memory. Through restarts that each start from the table the one before left, at
 * cut points all through the store, and with two ledgers folding into one table in turn, every
 * invoice (drafts and finalized, with credit notes) is the same, byte for byte, as the fold from
 * zero in memory; memory holds no line between folds; a table the store does not vouch for is
 * folded again from zero; and a line changed in the table is found by a rebuild, which folds the
 * table again.
 */
import type { InvoiceFinalized } from '#contracts';
import { openSnapshotSlot, projectionTablesOf, type EventStore } from '#event-store';
import { EventWriter, systemClock } from '#service-kit';
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import pino from 'pino';
import { buildHistoryStore } from '../../../../test/support/history.js';
import { storeBackends, type TestStore } from '../../../../test/support/store-backends.js';
import { allInvoices, allInvoiceViews, BILLING_EVENT_TYPES, canonicalJson, decideInvoices, initialBilling, invoiceOf, invoiceStreamId, invoiceSummaries, nextMonth, parseInvoiceId, type BillingState } from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';
import { BillingProjectionService, foldIntoTable, foldStore, RETIRED_BILLING_SNAPSHOT } from './billing-projection.service.js';
import { BILLING_TABLE, BillingTable } from './billing-table.js';

// Each case builds a history of a few thousand events; PostgreSQL on a busy machine takes seconds.
jest.setTimeout(180_000);
const stores = storeBackends({ prefix: 'gpunet-ledger-table-' });
afterEach(() => stores.cleanUp(), 60_000);

const CUTOFF = 72 * 3_600_000;
const config = { GPUNET_INVOICE_CUTOFF: CUTOFF } as LedgerConfig;

/** The fold from zero in memory, of the ledger's own kind (its settled attempts leave it) unless `settle` is false. */
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
/** The drafts of a state, as canonical text. */
const drafts = (state: BillingState) => [...allInvoices(state)].filter(([id]) => !state.finalized.has(id)).map(([, invoice]) => canonicalJson(invoice));

/** The projection's state caught up to the head, as a view with every open line; and the state as memory holds it. */
const viewOf = (p: BillingProjectionService) => p.withState(async (state, lines) => ({ view: await lines({}), held: state }));

/** A ledger's billing projection on `store`, started, with its log lines. */
async function start(store: EventStore, settings: Partial<LedgerConfig> = {}): Promise<{ projection: BillingProjectionService; lines: { msg: string; level: number; [k: string]: unknown }[] }> {
  const lines: { msg: string; level: number }[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as { msg: string; level: number }) });
  const projection = new BillingProjectionService(store, { ...config, ...settings }, logger);
  await projection.onModuleInit();
  return { projection, lines };
}

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


/** Expects the table-backed view and the fold from zero in memory to bill the same: every invoice view's digest, the drafts, the headers. */
async function expectSame(view: BillingState, zero: BillingState, store: EventStore): Promise<void> {
  expect(view.position).toBe(zero.position);
  expect(await digests(view, store)).toEqual(await digests(zero, store));
  expect(drafts(view)).toEqual(drafts(zero));
  expect(view.prices).toEqual(zero.prices);
  expect(view.finalized).toEqual(zero.finalized);
  expect(view.creditNotes).toEqual(zero.creditNotes);
  // The open lines: those of the fold from zero, with the same facts.
  expect(new Map([...view.attempts].filter(([, f]) => f.finished))).toEqual(new Map([...zero.attempts].filter(([, f]) => f.finished)));
}

describe.each(stores.backends)('ledger billing table ($name)', (backend) => {
  it('every restart loads the table the one before left and folds only the tail; every invoice is the fold from zero; memory holds no line', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    let previous: bigint = 0n;
    for (const stage of stages(store)) {
      await stage();
      const head = await store.headPosition();
      const zero = await fromZero(store, head);
      const { projection, lines } = await start(store);
      const startLine = lines.find((l) => /^billing projection loaded/.test(l.msg))!;
      expect(startLine.msg).toMatch(new RegExp(`^billing projection loaded from its table at position ${previous} `));
      const tail = await store.readAll({ fromPosition: previous, toPosition: head, maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } });
      expect(projection.start).toEqual({ fromPosition: previous, position: head, events: tail.length });
      const { view, held } = await viewOf(projection);
      await expectSame(view, zero, store);
      // Between folds memory holds the headers only.
      expect(held.attempts.size + held.settled.size + held.jobTeams.size).toBe(0);
      await projection.onApplicationShutdown();
      // The table is at the last billing event folded.
      previous = tail.length > 0 ? tail.at(-1)!.position : previous;
      const table = await projectionTablesOf(store)!.openProjectionTable(BILLING_TABLE);
      expect((await table.checkpoint()).position).toBe(previous);
    }
    const final = await fromZero(store);
    expect(final.finalized.size).toBeGreaterThan(1);
    expect(final.creditNotes.size).toBeGreaterThan(0);
    expect(final.prices.size).toBe(2);
    const table = await projectionTablesOf(store)!.openProjectionTable(BILLING_TABLE);
    // Every line on a finalized invoice is a settled row; every job a row of its team.
    const settled = await table.query({ where: [{ column: 'kind', op: '=', value: 's' }], limit: 0 });
    expect(settled.total).toBe([...final.finalized.values()].reduce((n, f) => n + f.lines, 0));
    const kept = await fromZero(store, undefined, false);
    const jobs = await table.query({ where: [{ column: 'kind', op: '=', value: 'j' }], limit: 0 });
    expect(jobs.total).toBe(kept.jobTeams.size);
    const open_ = await table.query({ where: [{ column: 'kind', op: '=', value: 'a' }], limit: 0 });
    expect(open_.total).toBe(final.attempts.size);

    // Nothing written since: the restart folds nothing and bills the same; rebuild agrees and keeps the table.
    const { projection, lines } = await start(store);
    expect(projection.start).toEqual({ fromPosition: previous, position: await store.headPosition(), events: 0 });
    const { view } = await viewOf(projection);
    await expectSame(view, final, store);
    // The January job that ran again in February, with no team from its agent: its job's row names the team, and its line is on the draft.
    const again = [...view.attempts.values()].find((a) => a.key.endsWith(`-${RERUN.attempt}@${RERUN.nodeId}`))!;
    expect(view.jobTeams.get(again.held!.data.jobId)).toEqual(kept.jobTeams.get(again.held!.data.jobId));
    expect(drafts(view).some((d) => d.includes(again.key))).toBe(true);
    // What a team's queries read: its own lines and those whose job's row names it, finished by the month's end.
    const teamViews = await projection.withState(async (_state, lines) => {
      const out: { id: string; invoice: string; list: string }[] = [];
      for (const [id, invoice] of allInvoices(final)) {
        const { team, month } = parseInvoiceId(id);
        const mine = await lines({ team, finishedBefore: nextMonth(month) });
        out.push({ id, invoice: canonicalJson(invoiceOf(mine, team, month)), list: canonicalJson(invoiceSummaries(await lines({ team }), { team }, CUTOFF)) });
        expect(canonicalJson(invoice)).toBe(out.at(-1)!.invoice);
      }
      return out;
    });
    expect(teamViews.map((v) => v.list)).toEqual([...allInvoices(final).keys()].map((id) => canonicalJson(invoiceSummaries(final, { team: parseInvoiceId(id).team }, CUTOFF))));
    expect(teamViews.some((v) => v.invoice.includes(again.key))).toBe(true);
    const rebuilt = await projection.rebuild();
    expect(rebuilt.identical).toBe(true);
    expect(rebuilt.finalized.length).toBe(final.finalized.size);
    expect(rebuilt.events).toBeGreaterThanOrEqual((await store.readAll({ maxCount: 1_000_000, filter: { types: BILLING_EVENT_TYPES } })).length);
    expect(lines.map((l) => l.msg)).toContain('billing projection rebuilt from zero: the same');
    expect((await table.checkpoint()).position).toBe(previous);
    await projection.onApplicationShutdown();
  });

  it('a table folded to any cut point through the store, then on to the head, bills as the fold from zero', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    for (const stage of stages(store)) await stage();
    const head = await store.headPosition();
    const zero = await fromZero(store, head);
    // Positions need not start at 1 nor be dense (PostgreSQL): cut at the k-th event.
    const positions = (await store.readAll({ maxCount: 1_000_000 })).map((e) => e.position);
    const nth = (fraction: number) => positions[Math.min(positions.length - 1, Math.floor(fraction * positions.length))]!;
    const cuts = [positions[0]!, nth(0.1), nth(1 / 3), nth(0.5), nth(0.75), nth(0.9), positions.at(-6)!, positions.at(-2)!];
    const host = projectionTablesOf(store)!;
    for (const cut of cuts) {
      const untrusted = () => {
        throw new Error('the table was not trusted');
      };
      const first = await BillingTable.open(store, host, untrusted);
      if (first.position > 0n) await first.reset();
      await foldIntoTable(store, first, await first.load(), cut);
      // Another process: loads the headers at the cut and folds on.
      const table = await BillingTable.open(store, host, untrusted);
      const state = await table.load();
      expect(state.position).toBeLessThanOrEqual(cut);
      await foldIntoTable(store, table, state, head);
      expect(state.attempts.size).toBe(0);
      await expectSame(await table.view(state, {}), zero, store);
    }
  });

  it('two ledgers folding into one table in turn: each finds the table moved, reads the headers again, and both bill as the fold from zero', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second, third, fourth] = stages(store);
    await first!();
    const a = await start(store);
    const b = await start(await open());
    await second!();
    // a folds the new events into the table; b, still at the start's position, finds it moved.
    await viewOf(a.projection);
    const fromB = await viewOf(b.projection);
    expect(b.lines.map((l) => l.msg)).toContain('billing table moved by another ledger: its headers read again');
    await third!();
    const fromA = await viewOf(a.projection);
    expect(a.lines.map((l) => l.msg)).not.toContain('billing table moved by another ledger: its headers read again');
    await fourth!();
    const lastB = await viewOf(b.projection);
    const lastA = await viewOf(a.projection);
    expect(a.lines.map((l) => l.msg)).toContain('billing table moved by another ledger: its headers read again');
    const zero = await fromZero(store);
    await expectSame(lastA.view, zero, store);
    await expectSame(lastB.view, zero, store);
    expect(fromA.view.finalized.size).toBeGreaterThan(fromB.view.finalized.size);
    await a.projection.onApplicationShutdown();
    await b.projection.onApplicationShutdown();
  });

  it('a fold whose write fails leaves nothing half done: the headers are read again, and the next answer is the fold from zero', async () => {
    const { open } = await backend.fresh();
    const real = await open();
    const [first, second] = stages(real);
    await first!();
    // The store as the ledger sees it, whose billing table refuses one write (a full disk, a lost connection).
    let failNext = false;
    const host = projectionTablesOf(real)!;
    const bound = <T extends object>(target: T, key: string | symbol) => {
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    };
    const store = new Proxy(real, {
      get: (target, key) =>
        key !== 'openProjectionTable'
          ? bound(target, key)
          : async (spec: typeof BILLING_TABLE) => {
              const table = await host.openProjectionTable(spec);
              return new Proxy(table, {
                get: (t, k) =>
                  k !== 'commit'
                    ? bound(t, k)
                    : async (...args: Parameters<typeof table.commit>) => {
                        if (failNext) {
                          failNext = false;
                          throw new Error('disk full');
                        }
                        return t.commit(...args);
                      },
              });
            },
    });
    const { projection, lines } = await start(store);
    await second!();
    failNext = true;
    await expect(viewOf(projection)).rejects.toThrow('disk full');
    expect(lines.map((l) => l.msg)).toContain('billing fold failed: its headers read again from the table');
    await expectSame((await viewOf(projection)).view, await fromZero(real), real);
    await projection.onApplicationShutdown();
  });

  it("a table at a position the store does not hold (another store's, an older backup) is emptied and folded again from zero", async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [stage] = stages(store);
    await stage!();
    const head = await store.headPosition();
    const table = await projectionTablesOf(store)!.openProjectionTable(BILLING_TABLE);
    const beyond = head + 1_000n;
    expect(await table.commit({ position: 0n, eventId: null }, { position: beyond, eventId: '00000000-0000-4000-8000-00000000beef' }, [{ key: 'p:1', doc: '{"k":"p","v":{"version":1,"currency":"EUR","effectiveFrom":0,"ratesMicrosPerGpuHour":{},"eventId":"x","position":"1"}}', values: { kind: 'p', team: null, month: null } }])).toBe(true);
    const { projection, lines } = await start(store);
    expect(lines.find((l) => /holds a position whose event this store does not hold/.test(l.msg))).toBeDefined();
    expect(projection.start!.fromPosition).toBe(0n);
    await expectSame((await viewOf(projection)).view, await fromZero(store, head), store);
    await projection.onApplicationShutdown();
  });

  it('a start drops the billing snapshot that an earlier release kept (decision 0039): nothing reads it any more', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [stage] = stages(store);
    await stage!();
    // As an earlier release left it: the snapshot's table, a header and a part, at a position.
    const old = await openSnapshotSlot(store, 'ledger_billing', 2);
    const at = (await store.readAll({ maxCount: 1 }))[0]!;
    expect(await old!.save({ position: 0n, eventId: null }, { position: at.position, eventId: at.eventId }, ['{"settled":["a"]}', '{"settled":["b"]}'])).toBe(true);
    const { projection, lines } = await start(store);
    expect(lines.filter((l) => /billing snapshot the billing table replaced was dropped/.test(l.msg))).toHaveLength(1);
    expect(await projectionTablesOf(store)!.dropProjectionTable(RETIRED_BILLING_SNAPSHOT)).toBe(false);
    await projection.onApplicationShutdown();
    // The next start finds none, and says nothing of it.
    const again = await start(store);
    expect(again.lines.filter((l) => /billing snapshot/.test(l.msg))).toEqual([]);
    await again.projection.onApplicationShutdown();
  });

  it('attack: a line changed in the table (its hours stretched) is found by a rebuild, which folds the table again from the store', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    const [first, second] = stages(store);
    await first!();
    await second!();
    const { projection, lines } = await start(store);
    const zero = await fromZero(store);
    const table = await projectionTablesOf(store)!.openProjectionTable(BILLING_TABLE);
    const [row] = (await table.query({ where: [{ column: 'kind', op: '=', value: 'a' }, { column: 'month', op: 'not null' }], orderBy: ['key'], limit: 1 })).rows;
    const doc = JSON.parse(row!.doc) as { h: { t?: string; d: { heldAt: string } }; f?: { t?: string } };
    doc.h.d.heldAt = '2025-12-01T00:00:00.000Z';
    // Written as one with the store file would: in place, the position kept.
    await table.put([{ key: row!.key, doc: JSON.stringify(doc), values: { kind: 'a', team: doc.h.t ?? doc.f?.t ?? '', month: monthOfRow(row!.doc) } }]);
    const tampered = await viewOf(projection);
    expect(await digests(tampered.view, store)).not.toEqual(await digests(zero, store));
    const rebuilt = await projection.rebuild();
    expect(rebuilt.identical).toBe(false);
    expect(rebuilt.invoices.filter((i) => !i.identical).length).toBeGreaterThan(0);
    expect(lines.map((l) => l.msg)).toContain('billing projection rebuilt from zero: it differed, and its table was folded again');
    await expectSame((await viewOf(projection)).view, zero, store);
    await projection.onApplicationShutdown();
  });
});

/** The finished month a line row's columns hold (as the ledger wrote them). */
function monthOfRow(text: string): string | null {
  const doc = JSON.parse(text) as { f?: { d: { finishedAt: string } } };
  return doc.f ? doc.f.d.finishedAt.slice(0, 7) : null;
}
