/**
 * Invoices, price lists and the rebuild against a real nats-server, on a SQLite store file and on
 * PostgreSQL (jsonb reorders keys: invoices are compared in canonical JSON): the ledger runs in
 * process (its real module, transport and timers), a fake agent appends its events to the store,
 * and everything is asked over NATS as intake asks it.
 */
import {
  Commands,
  Queries,
  type EventData,
  type InvoiceView,
  type ListInvoicesReply,
  type ListPriceListsReply,
  type PriceListPublished,
  type RebuildLedgerReply,
} from '#contracts';
import { openEventStore, type EventStore } from '#event-store';
import { requestQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { canonicalJson, monthOf } from '../domain/index.js';
import { ledgerService } from '../ledger.definition.js';
import { InvoiceCloserService } from './invoice-closer.service.js';

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.each(['sqlite', 'postgres'] as const)('ledger invoices, price lists and rebuild (%s)', (backend) => {
  let nats: TestNatsServer;
  let db: TestDatabase | undefined;
  let nc: NatsConnection;
  let dir: string;
  let running: RunningService;
  let env: Record<string, string>;
  const now = new Date();
  const thisMonth = monthOf(now.getTime());
  /** Ten minutes ago, inside the current month unless the month began less than an hour ago. */
  const recent = (offsetMs: number) => new Date(Math.max(now.getTime() - 600_000, Date.parse(`${thisMonth}-01T00:00:00.000Z`)) + offsetMs).toISOString();

  /** What intake sets from a key: an operator's principal sees every team, a team's its own. */
  const OPERATOR = { keyId: 'operator', team: 'ops', role: 'operator', allTeams: true };
  const asTeam = (team: string, role = 'producer') => ({ keyId: `key-${team}`, team, role, allTeams: false });
  const ask = <T>(name: keyof typeof Queries, body: unknown) => requestQuery<T>(nc, Queries[name].subject, body, { request: Queries[name].schema, response: Queries[name].replySchema });
  const command = <T>(name: 'RecordPriceList' | 'RebuildLedger', body: unknown) =>
    requestQuery<T>(nc, Commands[name].subject, body, { request: Commands[name].schema, response: Commands[name].replySchema }, { timeoutMs: 30_000 });

  async function attempt(
    a: { jobId: string; run?: number; nodeId?: string; gpus?: number; team?: string; heldAt: string; finishedAt?: string; outcome?: EventData<'JobFinished'>['outcome'] },
    store: EventStore = running.ctx.store,
  ) {
    const agent = new EventWriter(store, 'execution', systemClock);
    const nodeId = a.nodeId ?? 'node-1';
    const attemptId = `${a.jobId}-a${a.run ?? 1}`;
    const stream = `execution-${nodeId}-attempt-${attemptId}`;
    const ctx = { correlationId: `corr-${a.jobId}`, team: a.team ?? 'team-a' };
    const gpuIndices = Array.from({ length: a.gpus ?? 1 }, (_, i) => i);
    await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId: a.jobId, attemptId, nodeId, gpuIndices, gpuModel: 'sim-gpu', gpus: gpuIndices.length, heldAt: a.heldAt } }], ctx);
    if (a.finishedAt) {
      const outcome = a.outcome ?? 'completed';
      await agent.append(stream, [{ type: 'JobFinished', data: { jobId: a.jobId, attemptId, nodeId, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: a.finishedAt } }], ctx);
    }
    return { attemptId, nodeId, stream };
  }

  /**
   * Two closer passes run to their end: the second begins after everything the test recorded, so
   * whatever later passes would decide, it has decided (no waiting on the 100 ms interval).
   */
  async function closerPasses(): Promise<void> {
    const closer = running.app.get(InvoiceCloserService);
    await closer.check();
    await closer.check();
  }

  async function start(): Promise<void> {
    running = await startService({ ...ledgerService, env });
  }

  /** Every invoice of the store as the ledger answers it, in canonical JSON. */
  async function everyInvoice(): Promise<Map<string, string>> {
    const list = await ask<ListInvoicesReply>('ListInvoices', { principal: OPERATOR });
    const out = new Map<string, string>();
    for (const i of list.invoices) out.set(i.invoiceId, canonicalJson(await ask<InvoiceView>('GetInvoice', { invoiceId: i.invoiceId, principal: OPERATOR })));
    return out;
  }

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    dir = await mkdtemp(join(tmpdir(), 'gpunet-ledger-invoices-'));
    if (backend === 'postgres') db = await createTestDatabase('gpunet_t_invoices');
    env = {
      GPUNET_NATS_URL: nats.url,
      GPUNET_STORE_URL: db ? db.url : `sqlite:${join(dir, 'events.db')}`,
      GPUNET_LOG_LEVEL: 'silent',
      GPUNET_INVOICE_CUTOFF: '72h',
      GPUNET_INVOICE_CHECK_INTERVAL: '100ms',
    };
    await start();
  }, 30_000);
  afterAll(async () => {
    await running?.stop();
    await nc?.close();
    await nats?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('publishes price list versions numbered by the ledger, and refuses one that would change the past', async () => {
    const v2 = await command<PriceListPublished>('RecordPriceList', { currency: 'EUR', ratesMicrosPerGpuHour: { A100: 3_500_000 }, minimumChargeMicros: 1_000, principal: { keyId: 'key-1', team: 'billing-team', role: 'billing', allTeams: false } });
    expect(v2).toMatchObject({ version: 2, currency: 'EUR', ratesMicrosPerGpuHour: { A100: 3_500_000 }, minimumChargeMicros: 1_000, publishedBy: 'billing-team/key-1' });
    expect(Date.parse(v2.effectiveFrom)).toBeGreaterThanOrEqual(now.getTime());
    await expect(command('RecordPriceList', { currency: 'EUR', effectiveFrom: '2025-01-01T00:00:00Z', ratesMicrosPerGpuHour: { A100: 1 }, principal: { keyId: 'y', team: 'x', role: 'billing', allTeams: false } })).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: 'effectiveFrom' })],
    });
    const lists = await ask<ListPriceListsReply>('ListPriceLists', {});
    expect(lists.versions.map((v) => v.version)).toEqual([1, 2]);
    expect(lists.current).toBe(2);
  }, 30_000);

  it('finalizes a past month after its cutoff, keeps the current month a draft, with double-entry postings', async () => {
    // June 2025 ended long ago: finalized at the first pass that sees it. The attempts are
    // recorded while the ledger is stopped, so that pass sees all of them: a running ledger may
    // finalize June between two appends (rightly: a later one is then late, see the next test).
    await running.stop();
    const store = await openEventStore(env.GPUNET_STORE_URL!);
    try {
      // 2 GPUs × 1,234,567 ms at 3.60/h.
      await attempt({ jobId: 'job-june', gpus: 2, heldAt: '2025-06-10T10:00:00.000Z', finishedAt: '2025-06-10T10:20:34.567Z' }, store);
      await attempt({ jobId: 'job-june-lost', heldAt: '2025-06-11T10:00:00.000Z', finishedAt: '2025-06-11T11:00:00.000Z' }, store);
      await attempt({ jobId: 'job-june-b', team: 'team-b', heldAt: '2025-06-12T10:00:00.000Z', finishedAt: '2025-06-12T10:00:01.000Z' }, store);
      // This month: a draft. A two-node attempt is two lines.
      await attempt({ jobId: 'job-now', nodeId: 'node-1', gpus: 4, heldAt: recent(0), finishedAt: recent(60_000) }, store);
      await attempt({ jobId: 'job-now', nodeId: 'node-2', gpus: 4, heldAt: recent(0), finishedAt: recent(60_001) }, store);
    } finally {
      await store.close();
    }
    await start();

    const june = await waitFor('the June invoice to be finalized', async () => {
      const v = await ask<InvoiceView>('GetInvoice', { invoiceId: 'inv-team-a-2025-06', principal: asTeam('team-a') });
      return v.status === 'finalized' && v;
    });
    expect(june.lines.map((l) => [l.lineId, l.billableMs, l.amountMicros])).toEqual([
      ['job-june-a1@node-1', 1_234_567, 2_469_134],
      ['job-june-lost-a1@node-1', 3_600_000, 3_600_000],
    ]);
    expect(june.totals).toEqual([{ currency: 'EUR', amountMicros: 6_069_134, billableMs: 4_834_567, lines: 2 }]);
    expect(june.postings).toEqual([
      { account: 'receivable:team-a', side: 'debit', currency: 'EUR', amountMicros: 6_069_134, ref: 'inv-team-a-2025-06' },
      { account: 'revenue:compute', side: 'credit', currency: 'EUR', amountMicros: 6_069_134, ref: 'inv-team-a-2025-06' },
    ]);
    const stored = await running.ctx.store.readStream('ledger-invoice-team-a-2025-06');
    expect(stored.map((e) => e.type)).toEqual(['InvoiceFinalized']);
    expect(BigInt(june.derivedAtPosition)).toBeLessThan(stored[0]!.position);

    const draft = await ask<InvoiceView>('GetInvoice', { invoiceId: `inv-team-a-${thisMonth}`, principal: OPERATOR });
    expect(draft.status).toBe('draft');
    expect(draft.lines.map((l) => [l.lineId, l.gpus, l.amountMicros])).toEqual([
      ['job-now-a1@node-1', 4, 240_000],
      ['job-now-a1@node-2', 4, 240_004],
    ]);
    // Another team's invoice is not found for team-a.
    await expect(ask('GetInvoice', { invoiceId: 'inv-team-b-2025-06', principal: asTeam('team-a') })).rejects.toMatchObject({ code: 'not_found' });
    const listed = await ask<ListInvoicesReply>('ListInvoices', { principal: asTeam('team-a') });
    expect(listed.invoices.map((i) => [i.invoiceId, i.status])).toEqual([
      [`inv-team-a-${thisMonth}`, 'draft'],
      ['inv-team-a-2025-06', 'finalized'],
    ]);
  }, 30_000);

  it('never changes a finalized invoice: a node lost afterwards is a credit note, a late attempt goes to the open month', async () => {
    const before = await ask<InvoiceView>('GetInvoice', { invoiceId: 'inv-team-a-2025-06', principal: OPERATOR });
    const placement = new EventWriter(running.ctx.store, 'placement', systemClock);
    const lost: EventData<'NodeLost'> = {
      nodeId: 'node-1',
      reason: 'heartbeat_timeout',
      lastSeenAt: '2025-06-11T10:30:00.000Z',
      detectedAt: '2025-06-11T10:31:00.000Z',
      affectedAttempts: [{ jobId: 'job-june-lost', attemptId: 'job-june-lost-a1' }],
    };
    await placement.append('placement-node-node-1', [{ type: 'NodeLost', data: lost }], { correlationId: 'corr-lost' });
    // An attempt of June whose JobFinished is recorded only now, long after the cutoff.
    await attempt({ jobId: 'job-june-late', heldAt: '2025-06-20T00:00:00.000Z', finishedAt: '2025-06-20T00:00:02.000Z' });

    const after = await waitFor('the credit note', async () => {
      const v = await ask<InvoiceView>('GetInvoice', { invoiceId: 'inv-team-a-2025-06', principal: OPERATOR });
      return v.creditNotes.length > 0 && v;
    });
    expect(canonicalJson({ ...after, creditNotes: [], net: [] })).toBe(canonicalJson({ ...before, creditNotes: [], net: [] }));
    expect(after.creditNotes).toEqual([
      expect.objectContaining({
        creditNoteId: 'inv-team-a-2025-06-cn1',
        lines: [expect.objectContaining({ lineId: 'job-june-lost-a1@node-1', amountMicros: 3_600_000, reason: 'platform_fault' })],
        postings: [
          { account: 'revenue:compute', side: 'debit', currency: 'EUR', amountMicros: 3_600_000, ref: 'inv-team-a-2025-06-cn1' },
          { account: 'receivable:team-a', side: 'credit', currency: 'EUR', amountMicros: 3_600_000, ref: 'inv-team-a-2025-06-cn1' },
        ],
      }),
    ]);
    expect(after.net).toEqual([{ currency: 'EUR', amountMicros: 2_469_134 }]);
    const open = await ask<InvoiceView>('GetInvoice', { invoiceId: `inv-team-a-${thisMonth}`, principal: OPERATOR });
    expect(open.lines.find((l) => l.jobId === 'job-june-late')).toMatchObject({ lateFrom: '2025-06', amountMicros: 2_000 });

    // Conservation over every invoice and credit note: debits equal credits.
    const views = [...(await everyInvoice()).values()].map((j) => JSON.parse(j) as InvoiceView);
    const postings = views.flatMap((v) => [...v.postings, ...v.creditNotes.flatMap((n) => n.postings)]);
    const side = (s: string) => postings.filter((p) => p.side === s).reduce((sum, p) => sum + BigInt(p.amountMicros), 0n);
    expect(side('debit')).toBe(side('credit'));
    expect(side('debit')).toBeGreaterThan(0n);
    // Later passes add nothing: one InvoiceFinalized and one credit note in the stream.
    await closerPasses();
    expect((await running.ctx.store.readStream('ledger-invoice-team-a-2025-06')).map((e) => e.type)).toEqual(['InvoiceFinalized', 'CreditNoteIssued']);
  }, 30_000);

  it('rebuilds every projection from zero with byte-identical invoices, and a restart derives the same', async () => {
    const before = await everyInvoice();
    const reply = await command<RebuildLedgerReply>('RebuildLedger', { principal: OPERATOR });
    expect(reply.identical).toBe(true);
    expect(reply.invoices.map((i) => i.invoiceId).sort()).toEqual([...before.keys()].sort());
    expect(reply.finalized.map((f) => [f.invoiceId, f.identical])).toEqual(
      expect.arrayContaining([
        ['inv-team-a-2025-06', true],
        ['inv-team-b-2025-06', true],
      ]),
    );
    const rebuilt = await everyInvoice();
    for (const [id, json] of before) {
      // Drafts carry the head position they were derived at: equal as long as nothing was appended.
      expect({ id, json: rebuilt.get(id) }).toEqual({ id, json });
    }

    await running.stop();
    await start();
    const restarted = await everyInvoice();
    // A restart records the new process's term (LeaderElected, decision 0029): a draft is derived
    // one position later and is otherwise the same; a finalized invoice is the same to the byte.
    const headAfterRestart = String(await running.ctx.store.headPosition());
    const asOfHead = (json: string) => {
      const view = JSON.parse(json) as { status: string; derivedAtPosition: string };
      return canonicalJson(view.status === 'draft' ? { ...view, derivedAtPosition: headAfterRestart } : view);
    };
    expect([...restarted.entries()]).toEqual([...before.entries()].map(([id, json]) => [id, asOfHead(json)]));
    await closerPasses();
    expect((await running.ctx.store.readStream('ledger-invoice-team-a-2025-06')).map((e) => e.type)).toEqual(['InvoiceFinalized', 'CreditNoteIssued']);
  }, 60_000);
});
