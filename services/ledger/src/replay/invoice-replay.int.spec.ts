/**
 * The ledger's `ReplayInvoice` and `GetDisputeBundle` queries against a real nats-server, on a
 * SQLite store file and on PostgreSQL (with an HMAC chain key): the ledger runs in process (its
 * real module and transport), a fake agent appends its events, and everything is asked over NATS
 * as intake asks it. A draft and a finalized invoice replay identically line by line; a what-if
 * price list changes every line and writes nothing; the bundle checks offline as the CLI's does;
 * another team's invoice is not found.
 */
import { Queries, type DisputeBundleReply, type EventData, type InvoiceView, type ReplayInvoiceReply } from '#contracts';
import { openEventStore, type EventStore } from '#event-store';
import { requestQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/postgres.js';
import { monthOf } from '../domain/index.js';
import { ledgerService } from '../ledger.definition.js';
import { verifyBundle } from './bundle.js';

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const CHAIN_KEY = 'replay-int-chain-key-0123456789';

describe.each(['sqlite', 'postgres'] as const)('ledger invoice replay and dispute bundle queries (%s)', (backend) => {
  let nats: TestNatsServer;
  let db: TestDatabase | undefined;
  let nc: NatsConnection;
  let dir: string;
  let running: RunningService;
  const chainKey = backend === 'postgres' ? CHAIN_KEY : undefined;
  const now = new Date();
  const thisMonth = monthOf(now.getTime());
  const draftId = `inv-team-a-${thisMonth}`;
  const finalId = 'inv-team-a-2025-06';
  const recent = (offsetMs: number) => new Date(Math.max(now.getTime() - 600_000, Date.parse(`${thisMonth}-01T00:00:00.000Z`)) + offsetMs).toISOString();

  const billingOf = (team: string) => ({ keyId: `billing-${team}`, team, role: 'billing', allTeams: false });
  const ask = <T>(name: 'ReplayInvoice' | 'GetDisputeBundle' | 'GetInvoice', body: unknown) =>
    requestQuery<T>(nc, Queries[name].subject, body, { request: Queries[name].schema, response: Queries[name].replySchema }, { timeoutMs: 20_000 });

  async function attempt(store: EventStore, a: { jobId: string; team?: string; heldAt: string; finishedAt: string; gpus?: number; outcome?: EventData<'JobFinished'>['outcome'] }) {
    const agent = new EventWriter(store, 'execution', systemClock);
    const attemptId = `${a.jobId}-a1`;
    const ctx = { correlationId: `corr-${a.jobId}`, team: a.team ?? 'team-a' };
    const gpuIndices = Array.from({ length: a.gpus ?? 1 }, (_, i) => i);
    const stream = `execution-node-1-attempt-${attemptId}`;
    await agent.append(stream, [{ type: 'ComputeHeld', data: { jobId: a.jobId, attemptId, nodeId: 'node-1', gpuIndices, gpuModel: 'sim-gpu', gpus: gpuIndices.length, heldAt: a.heldAt } }], ctx);
    await agent.append(stream, [{ type: 'JobFinished', data: { jobId: a.jobId, attemptId, nodeId: 'node-1', outcome: a.outcome ?? 'completed', exitCode: 0, signal: null, finishedAt: a.finishedAt } }], ctx);
  }

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
    dir = await mkdtemp(join(tmpdir(), 'gpunet-ledger-replay-q-'));
    if (backend === 'postgres') db = await createTestDatabase('gpunet_t_replay_q');
    const storeUrl = db ? db.url : `sqlite:${join(dir, 'events.db')}`;
    // This month (a draft): two attempts of team-a, one of team-b. June 2025 (finalized by the closer): one of team-a.
    // Recorded before the ledger starts: its closer (every 100 ms) would otherwise finalize June
    // between job-j1's ComputeHeld and its JobFinished, and the hour would be a late line of this month.
    const store = await openEventStore(storeUrl, chainKey ? { chainKey } : {});
    try {
      await attempt(store, { jobId: 'job-d1', heldAt: recent(0), finishedAt: recent(90_000) });
      await attempt(store, { jobId: 'job-d2', heldAt: recent(10_000), finishedAt: recent(500_000), gpus: 2 });
      await attempt(store, { jobId: 'job-b1', team: 'team-b', heldAt: recent(0), finishedAt: recent(60_000) });
      await attempt(store, { jobId: 'job-j1', heldAt: '2025-06-10T10:00:00.000Z', finishedAt: '2025-06-10T11:00:00.000Z' });
    } finally {
      await store.close();
    }
    running = await startService({
      ...ledgerService,
      env: {
        GPUNET_NATS_URL: nats.url,
        GPUNET_STORE_URL: storeUrl,
        GPUNET_LOG_LEVEL: 'silent',
        GPUNET_INVOICE_CUTOFF: '72h',
        GPUNET_INVOICE_CHECK_INTERVAL: '100ms',
        ...(chainKey ? { GPUNET_CHAIN_KEY: chainKey } : {}),
      },
    });
    await waitFor('June 2025 to be finalized', async () => (await ask<InvoiceView>('GetInvoice', { invoiceId: finalId, principal: billingOf('team-a') })).status === 'finalized');
  }, 60_000);

  afterAll(async () => {
    await running?.stop();
    await nc?.close();
    await nats?.stop();
    await db?.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('replays a draft and a finalized invoice identically, line by line with both amounts and the contributing events', async () => {
    const draft = await waitFor('the draft with both lines', async () => {
      const r = await ask<ReplayInvoiceReply>('ReplayInvoice', { invoiceId: draftId, principal: billingOf('team-a') });
      return r.lines.length === 2 && r;
    });
    expect(draft).toMatchObject({ invoiceId: draftId, invoiceStatus: 'draft', whatIf: false, identical: true, otherChanges: [] });
    expect(draft.summary).toMatch(/^identical: 2 line\(s\)/);
    const invoice = await ask<InvoiceView>('GetInvoice', { invoiceId: draftId, principal: billingOf('team-a') });
    expect(draft.asOfPosition).toBe(invoice.derivedAtPosition);
    for (const line of draft.lines) {
      const recorded = invoice.lines.find((l) => l.lineId === line.lineId)!;
      expect(line).toMatchObject({ status: 'same', identical: true, changes: [], recordedAmountMicros: recorded.amountMicros, replayedAmountMicros: recorded.amountMicros, eventIds: recorded.eventIds });
      expect(line.eventIds.length).toBeGreaterThanOrEqual(2);
    }
    expect(draft.totals).toEqual([{ currency: 'EUR', recordedMicros: invoice.totals[0]!.amountMicros, replayedMicros: invoice.totals[0]!.amountMicros, identical: true }]);

    const final = await ask<ReplayInvoiceReply>('ReplayInvoice', { invoiceId: finalId, principal: billingOf('team-a') });
    expect(final).toMatchObject({ invoiceStatus: 'finalized', identical: true, lines: [expect.objectContaining({ jobId: 'job-j1', status: 'same', recordedAmountMicros: 3_600_000, replayedAmountMicros: 3_600_000 })] });
  }, 30_000);

  it('a what-if price list reprices every line and writes nothing', async () => {
    const before = await running.ctx.store.headPosition();
    const r = await ask<ReplayInvoiceReply>('ReplayInvoice', { invoiceId: finalId, principal: billingOf('team-a'), prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 9_000_000 } } });
    expect(r).toMatchObject({ whatIf: true, identical: false, invoiceStatus: 'finalized' });
    expect(r.summary).toMatch(/^what-if \(nothing written\): 1 line\(s\) changed/);
    expect(r.lines[0]).toMatchObject({ status: 'changed', identical: false, recordedAmountMicros: 3_600_000, replayedAmountMicros: 9_000_000, recordedRateMicrosPerGpuHour: 3_600_000, replayedRateMicrosPerGpuHour: 9_000_000 });
    expect(r.lines[0]!.changes).toEqual(expect.arrayContaining([{ field: 'amountMicros', recorded: '3600000', replayed: '9000000' }]));
    expect(r.totals).toEqual([{ currency: 'EUR', recordedMicros: 3_600_000, replayedMicros: 9_000_000, identical: false }]);
    // Nothing written, and the invoice is the one it was.
    expect(await running.ctx.store.headPosition()).toBe(before);
    expect((await ask<InvoiceView>('GetInvoice', { invoiceId: finalId, principal: billingOf('team-a') })).totals[0]!.amountMicros).toBe(3_600_000);
    // A malformed what-if list names its field.
    await expect(ask('ReplayInvoice', { invoiceId: finalId, principal: billingOf('team-a'), prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 2.5 } } })).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: expect.stringContaining('ratesMicrosPerGpuHour') })],
    });
  }, 30_000);

  it('answers the dispute bundle the CLI writes: it checks offline, draft and finalized', async () => {
    for (const [invoiceId, status] of [[draftId, 'draft'], [finalId, 'finalized']] as const) {
      const reply = await ask<DisputeBundleReply>('GetDisputeBundle', { invoiceId, principal: billingOf('team-a') });
      expect(reply.fileName).toBe(`${invoiceId}.bundle.json`);
      expect(reply.bundle).toMatchObject({ format: 'gpunet.dispute-bundle/1', invoiceStatus: status, chain: chainKey ? 'hmac-sha256' : 'sha256' });
      // Through JSON text, as a downloaded file is read.
      const v = verifyBundle(JSON.parse(JSON.stringify(reply.bundle, null, 2)), chainKey);
      expect(v.problems).toEqual([]);
      expect(v).toMatchObject({ ok: true, invoiceId });
      // Team b's attempt is in no stream of team a's bundle.
      expect(JSON.stringify(reply.bundle)).not.toContain('job-b1');
    }
  }, 30_000);

  it('another team\'s invoice is not found: replay, what-if and bundle', async () => {
    const other = billingOf('team-b');
    await expect(ask('ReplayInvoice', { invoiceId: draftId, principal: other })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask('ReplayInvoice', { invoiceId: draftId, principal: other, prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 1 } } })).rejects.toMatchObject({ code: 'not_found' });
    await expect(ask('GetDisputeBundle', { invoiceId: draftId, principal: other })).rejects.toMatchObject({ code: 'not_found' });
    // A month without a billed attempt has nothing to dispute.
    await expect(ask('GetDisputeBundle', { invoiceId: 'inv-team-a-2024-01', principal: billingOf('team-a') })).rejects.toMatchObject({ code: 'not_found' });
  }, 30_000);
});
