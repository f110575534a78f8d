import type { InvoiceView, ListPriceListsReply, RebuildLedgerReply } from '#contracts';
import { isInvoiceId, renderInvoiceList, renderInvoiceView } from './invoices.js';
import { renderRebuild } from './ledger.js';
import { renderPriceLists } from './prices.js';

const view: InvoiceView = {
  invoiceId: 'inv-team-a-2025-06',
  team: 'team-a',
  month: '2025-06',
  periodStart: '2025-06-01T00:00:00.000Z',
  periodEnd: '2025-07-01T00:00:00.000Z',
  derivedAtPosition: '42',
  rounding: 'per-line-half-up-micros',
  lines: [
    {
      lineId: 'job-1-a1@node-1',
      jobId: 'job-1',
      attemptId: 'job-1-a1',
      run: 1,
      nodeId: 'node-1',
      gpuModel: 'A100',
      gpus: 2,
      gpuIndices: [0, 1],
      outcome: 'completed',
      heldFrom: '2025-06-10T10:00:00.000Z',
      finishedAt: '2025-06-10T10:20:34.567Z',
      billableMs: 1_234_567,
      rateMicrosPerGpuHour: 3_600_000,
      priceListVersion: 1,
      currency: 'EUR',
      amountMicros: 2_469_134,
      minimumApplied: false,
      completedAtPosition: '40',
      eventIds: ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'],
    },
  ],
  totals: [{ currency: 'EUR', amountMicros: 2_469_134, billableMs: 1_234_567, lines: 1 }],
  postings: [
    { account: 'receivable:team-a', side: 'debit', currency: 'EUR', amountMicros: 2_469_134, ref: 'inv-team-a-2025-06' },
    { account: 'revenue:compute', side: 'credit', currency: 'EUR', amountMicros: 2_469_134, ref: 'inv-team-a-2025-06' },
  ],
  status: 'finalized',
  finalizesAt: '2025-07-04T00:00:00.000Z',
  finalizedAt: '2025-07-04T00:00:30.000Z',
  creditNotes: [
    {
      creditNoteId: 'inv-team-a-2025-06-cn1',
      invoiceId: 'inv-team-a-2025-06',
      team: 'team-a',
      derivedAtPosition: '50',
      issuedAt: '2025-07-05T00:00:00.000Z',
      lines: [{ lineId: 'job-1-a1@node-1', jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1', currency: 'EUR', amountMicros: 2_469_134, reason: 'platform_fault', eventIds: [] }],
      totals: [{ currency: 'EUR', amountMicros: 2_469_134 }],
      postings: [],
    },
  ],
  net: [{ currency: 'EUR', amountMicros: 0 }],
};

describe('billing output for people', () => {
  it('shows an invoice line by line, in units with 6 decimals, with its credit notes, net, postings and position', () => {
    const text = renderInvoiceView(view);
    expect(text).toContain('invoice inv-team-a-2025-06  team team-a  month 2025-06 (UTC)  finalized 2025-07-04T00:00:30.000Z');
    expect(text).toMatch(/job-1 +1 +node-1 +A100 × 2 +2025-06-10T10:00:00.000Z +2025-06-10T10:20:34.567Z +1234567 +3.600000 +2.469134 EUR/);
    expect(text).toContain('credit note inv-team-a-2025-06-cn1 (2025-07-05T00:00:00.000Z): 2.469134 EUR');
    expect(text).toContain('net 0.000000 EUR');
    expect(text).toContain('debit receivable:team-a 2.469134 EUR; credit revenue:compute 2.469134 EUR');
    expect(text).toContain('derived at store position 42');
  });

  it('lists invoices, and tells invoice ids from job ids', () => {
    const text = renderInvoiceList({
      asOfPosition: '9',
      invoices: [{ invoiceId: 'inv-team-a-2025-07', team: 'team-a', month: '2025-07', status: 'draft', lines: 3, totals: [{ currency: 'EUR', amountMicros: 1_500_000, billableMs: 9 }], credited: [], derivedAtPosition: '9', finalizesAt: '2025-08-04T00:00:00.000Z' }],
    });
    expect(text).toMatch(/inv-team-a-2025-07 +2025-07 +draft +3 +1.500000 EUR +final after 2025-08-04/);
    expect(renderInvoiceList({ asOfPosition: '0', invoices: [] })).toBe('no invoices');
    expect(isInvoiceId('inv-team-a-2025-07')).toBe(true);
    expect(isInvoiceId('job_01jz8k4m2n')).toBe(false);
  });

  it('lists price list versions with the one in force marked', () => {
    const reply: ListPriceListsReply = {
      at: '2025-06-01T00:00:00.000Z',
      current: 2,
      versions: [
        { version: 1, currency: 'EUR', effectiveFrom: '1970-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000 }, defaultRateMicrosPerGpuHour: 2_000_000, publishedAt: '2025-01-01T00:00:00.000Z' },
        { version: 2, currency: 'EUR', effectiveFrom: '2025-05-01T00:00:00.000Z', ratesMicrosPerGpuHour: { A100: 3_500_000 }, minimumChargeMicros: 10_000, publishedAt: '2025-04-01T00:00:00.000Z', publishedBy: 'team-a/billing' },
      ],
    };
    const text = renderPriceLists(reply);
    expect(text).toMatch(/^1 +1970-01-01T00:00:00.000Z +sim-gpu +3.600000 EUR +\(configuration\)$/m);
    expect(text).toMatch(/^ +\(default\) +2.000000 EUR/m);
    expect(text).toMatch(/^2\* +2025-05-01T00:00:00.000Z +A100 +3.500000 EUR +0.010000 EUR +team-a\/billing$/m);
  });

  it('says whether a rebuild was byte-identical', () => {
    const reply: RebuildLedgerReply = {
      toPosition: '100',
      events: 100,
      elapsedMs: 3,
      invoices: [{ invoiceId: 'inv-team-a-2025-06', status: 'finalized', before: 'a'.repeat(64), after: 'b'.repeat(64), identical: false }],
      finalized: [{ invoiceId: 'inv-team-a-2025-06', identical: true }],
      identical: false,
    };
    const text = renderRebuild(reply);
    expect(text).toMatch(/inv-team-a-2025-06 +finalized +a{16} +b{16} +DIFFERS +identical/);
    expect(text).toContain('SOME INVOICES DIFFER');
    expect(renderRebuild({ ...reply, invoices: [], finalized: [], identical: true })).toContain('every invoice byte-identical');
  });
});
