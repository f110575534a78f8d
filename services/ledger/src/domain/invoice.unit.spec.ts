import { InvoiceBody, InvoiceFinalized } from '#contracts';
import { foldBilling } from './billing.js';
import { FixtureLog } from './billing.fixtures.js';
import { canonicalJson, decideInvoices, deriveInvoice, invoiceOf } from './invoice.js';

const HOUR = 3_600_000;

function log(): FixtureLog {
  const l = new FixtureLog();
  l.prices(1, { 'sim-gpu': 3_600_000, A100: 3_500_000 }, { defaultRate: 2_000_000 });
  return l;
}

describe('deriveInvoice', () => {
  it('given one attempt of 2 GPUs for 20 min 34.567 s, then one line of 2,469,134 µ naming its events', () => {
    const l = log();
    const h = l.held({ jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1', gpuIndices: [0, 1], heldAt: '2025-06-01T10:00:00.000Z', team: 'team-a' });
    const f = l.finished({ jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1', finishedAt: '2025-06-01T10:20:34.567Z', team: 'team-a' });
    const invoice = deriveInvoice(l.events, { team: 'team-a', month: '2025-06' });
    expect(() => InvoiceBody.parse(invoice)).not.toThrow();
    expect(invoice).toEqual({
      invoiceId: 'inv-team-a-2025-06',
      team: 'team-a',
      month: '2025-06',
      periodStart: '2025-06-01T00:00:00.000Z',
      periodEnd: '2025-07-01T00:00:00.000Z',
      derivedAtPosition: '3',
      rounding: 'per-line-half-up-micros',
      lines: [
        {
          lineId: 'job-1-a1@node-1',
          jobId: 'job-1',
          attemptId: 'job-1-a1',
          run: 1,
          nodeId: 'node-1',
          gpuModel: 'sim-gpu',
          gpus: 2,
          gpuIndices: [0, 1],
          outcome: 'completed',
          heldFrom: '2025-06-01T10:00:00.000Z',
          finishedAt: '2025-06-01T10:20:34.567Z',
          billableMs: 1_234_567,
          rateMicrosPerGpuHour: 3_600_000,
          priceListVersion: 1,
          currency: 'EUR',
          amountMicros: 2_469_134,
          minimumApplied: false,
          completedAtPosition: '3',
          eventIds: [h.eventId, f.eventId, l.events[0]!.eventId],
        },
      ],
      totals: [{ currency: 'EUR', amountMicros: 2_469_134, billableMs: 1_234_567, lines: 1 }],
      postings: [
        { account: 'receivable:team-a', side: 'debit', currency: 'EUR', amountMicros: 2_469_134, ref: 'inv-team-a-2025-06' },
        { account: 'revenue:compute', side: 'credit', currency: 'EUR', amountMicros: 2_469_134, ref: 'inv-team-a-2025-06' },
      ],
    });
  });

  it('given a multi-node attempt (one ComputeHeld/JobFinished per node, same attemptId), then one line per node', () => {
    const l = log();
    for (const nodeId of ['node-1', 'node-2']) {
      l.held({ jobId: 'job-g', attemptId: 'job-g-a1', nodeId, gpuIndices: [0, 1, 2, 3], heldAt: '2025-06-02T00:00:00.000Z', team: 'team-a' });
    }
    l.finished({ jobId: 'job-g', attemptId: 'job-g-a1', nodeId: 'node-2', finishedAt: '2025-06-02T01:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'job-g', attemptId: 'job-g-a1', nodeId: 'node-1', finishedAt: '2025-06-02T01:00:00.001Z', team: 'team-a' });
    const invoice = deriveInvoice(l.events, { team: 'team-a', month: '2025-06' });
    expect(invoice.lines.map((x) => [x.lineId, x.billableMs, x.amountMicros])).toEqual([
      ['job-g-a1@node-2', HOUR, 4 * 3_600_000],
      ['job-g-a1@node-1', HOUR + 1, 4 * 3_600_001],
    ]);
  });

  it('bills by the month the attempt finished in (UTC), only the asked team, and only events up to asOf', () => {
    const l = log();
    l.held({ jobId: 'j1', attemptId: 'j1-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-30T23:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j1', attemptId: 'j1-a1', nodeId: 'n', finishedAt: '2025-07-01T00:30:00.000Z', team: 'team-a' });
    l.held({ jobId: 'j2', attemptId: 'j2-a1', nodeId: 'n', gpuIndices: [1], heldAt: '2025-06-30T23:00:00.000Z', team: 'team-b' });
    l.finished({ jobId: 'j2', attemptId: 'j2-a1', nodeId: 'n', finishedAt: '2025-06-30T23:30:00.000Z', team: 'team-b' });
    const asOf = l.events.at(-1)!.position;
    l.held({ jobId: 'j3', attemptId: 'j3-a1', nodeId: 'n', gpuIndices: [2], heldAt: '2025-07-02T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j3', attemptId: 'j3-a1', nodeId: 'n', finishedAt: '2025-07-02T00:00:01.000Z', team: 'team-a' });
    expect(deriveInvoice(l.events, { team: 'team-a', month: '2025-06' }).lines).toEqual([]);
    expect(deriveInvoice(l.events, { team: 'team-a', month: '2025-07' }).lines.map((x) => x.jobId)).toEqual(['j1', 'j3']);
    const asOfInvoice = deriveInvoice(l.events, { team: 'team-a', month: '2025-07', asOf });
    expect(asOfInvoice.lines.map((x) => x.jobId)).toEqual(['j1']);
    expect(asOfInvoice.derivedAtPosition).toBe(asOf.toString());
    expect(deriveInvoice(l.events, { team: 'team-b', month: '2025-06' }).totals).toEqual([{ currency: 'EUR', amountMicros: 1_800_000, billableMs: 1_800_000, lines: 1 }]);
  });

  it('takes the first ComputeHeld and JobFinished of an attempt on a node; later duplicates change nothing', () => {
    const l = log();
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-01T00:00:01.000Z', team: 'team-a' });
    const once = canonicalJson(deriveInvoice(l.events, { team: 'team-a', month: '2025-06' }).lines);
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-05-01T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-09T00:00:00.000Z', team: 'team-a' });
    expect(canonicalJson(deriveInvoice(l.events, { team: 'team-a', month: '2025-06' }).lines)).toBe(once);
  });

  it('waives an attempt whose node was lost, naming the NodeLost event, and bills nothing without ComputeHeld', () => {
    const l = log();
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    const lost = l.lost('n', [{ jobId: 'j', attemptId: 'j-a1' }]);
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-01T01:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'k', attemptId: 'k-a1', nodeId: 'n', finishedAt: '2025-06-01T01:00:00.000Z', outcome: 'cancelled', team: 'team-a' });
    const [line, ...rest] = deriveInvoice(l.events, { team: 'team-a', month: '2025-06' }).lines;
    expect(rest).toEqual([]);
    expect(line).toMatchObject({ billableMs: 0, amountMicros: 0, waivedReason: 'platform_fault' });
    expect(line!.eventIds).toContain(lost.eventId);
  });

  it('takes the team from JobSubmitted when the agent events carry none, and names that event', () => {
    const l = log();
    const submitted = l.append('JobSubmitted', { jobId: 'j', team: 'team-z' });
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-01T00:00:00.000Z' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-01T00:00:00.500Z' });
    const [line] = deriveInvoice(l.events, { team: 'team-z', month: '2025-06' }).lines;
    expect(line).toMatchObject({ amountMicros: 500 });
    expect(line!.eventIds.at(-1)).toBe(submitted.eventId);
  });

  it('prices at the version in force at heldAt, and under other prices for a what-if without naming a price event', () => {
    const l = log();
    l.prices(2, { 'sim-gpu': 7_200_000 }, { effectiveFrom: '2025-06-01T10:00:00.000Z' });
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-01T09:59:59.999Z', team: 'team-a' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-01T10:59:59.999Z', team: 'team-a' });
    l.held({ jobId: 'k', attemptId: 'k-a1', nodeId: 'n', gpuIndices: [1], heldAt: '2025-06-01T10:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'k', attemptId: 'k-a1', nodeId: 'n', finishedAt: '2025-06-01T11:00:00.000Z', team: 'team-a' });
    const real = deriveInvoice(l.events, { team: 'team-a', month: '2025-06' });
    expect(real.lines.map((x) => [x.jobId, x.priceListVersion, x.amountMicros])).toEqual([
      ['j', 1, 3_600_000],
      ['k', 2, 7_200_000],
    ]);
    const whatIf = deriveInvoice(l.events, { team: 'team-a', month: '2025-06', prices: [{ version: 9, currency: 'USD', effectiveFrom: 0, ratesMicrosPerGpuHour: { 'sim-gpu': 1_000_000 } }] });
    expect(whatIf.lines.map((x) => [x.jobId, x.priceListVersion, x.currency, x.amountMicros, x.eventIds.length])).toEqual([
      ['j', 9, 'USD', 1_000_000, 2],
      ['k', 9, 'USD', 1_000_000, 2],
    ]);
  });

  it('raises a charged line to the minimum charge, never a 0 ms line', () => {
    const l = new FixtureLog();
    l.prices(1, { X: 3_600_000 }, { minimum: 50_000 });
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], gpuModel: 'X', heldAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-01T00:00:01.000Z', team: 'team-a' });
    l.held({ jobId: 'k', attemptId: 'k-a1', nodeId: 'n', gpuIndices: [0], gpuModel: 'X', heldAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'k', attemptId: 'k-a1', nodeId: 'n', finishedAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    l.held({ jobId: 'm', attemptId: 'm-a1', nodeId: 'n', gpuIndices: [0], gpuModel: 'X', heldAt: '2025-06-01T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'm', attemptId: 'm-a1', nodeId: 'n', finishedAt: '2025-06-01T00:01:00.000Z', team: 'team-a' });
    const lines = deriveInvoice(l.events, { team: 'team-a', month: '2025-06' }).lines;
    expect(lines.map((x) => [x.jobId, x.amountMicros, x.minimumApplied])).toEqual([
      ['k', 0, false],
      ['j', 50_000, true],
      ['m', 60_000, false],
    ]);
  });
});

describe('finalization and credit notes', () => {
  const CUTOFF = 24 * HOUR;

  function record(l: FixtureLog, now: number): void {
    const state = foldBilling(l.events);
    const { finalize, credit } = decideInvoices(state, now, CUTOFF);
    for (const f of finalize) l.append('InvoiceFinalized', InvoiceFinalized.parse(f));
    for (const c of credit) l.append('CreditNoteIssued', c);
  }

  it('keeps an invoice a draft until month end + cutoff, takes late events inside the cutoff, then freezes it', () => {
    const l = log();
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-30T23:00:00.000Z', team: 'team-a' });
    l.now = Date.parse('2025-07-01T10:00:00.000Z');
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-30T23:59:59.000Z', team: 'team-a' }); // late, inside the cutoff
    record(l, Date.parse('2025-07-01T23:59:59.999Z'));
    expect(foldBilling(l.events).finalized.size).toBe(0);
    record(l, Date.parse('2025-07-02T00:00:00.000Z'));
    const state = foldBilling(l.events);
    const f = state.finalized.get('inv-team-a-2025-06')!;
    expect(f.data.invoice.lines.map((x) => x.lineId)).toEqual(['j-a1@n']);
    // Re-derived at its recorded position it is byte-identical.
    const again = deriveInvoice(l.events, { team: 'team-a', month: '2025-06', asOf: BigInt(f.data.invoice.derivedAtPosition) });
    expect(canonicalJson(again)).toBe(canonicalJson(f.data.invoice));
    // A second decision finalizes nothing more.
    expect(decideInvoices(state, Date.parse('2025-08-01T00:00:00.000Z'), CUTOFF)).toEqual({ finalize: [], credit: [] });
  });

  it('puts a line completed after finalization on the month it was recorded in, and credits a line later waived', () => {
    const l = log();
    l.held({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', gpuIndices: [0], heldAt: '2025-06-10T00:00:00.000Z', team: 'team-a' });
    l.finished({ jobId: 'j', attemptId: 'j-a1', nodeId: 'n', finishedAt: '2025-06-10T01:00:00.000Z', team: 'team-a' });
    l.held({ jobId: 'k', attemptId: 'k-a1', nodeId: 'm', gpuIndices: [0], heldAt: '2025-06-20T00:00:00.000Z', team: 'team-a' });
    l.now = Date.parse('2025-07-05T00:00:00.000Z');
    record(l, l.now);
    // After the cutoff: k's JobFinished (June) arrives, and j's node is declared lost.
    l.finished({ jobId: 'k', attemptId: 'k-a1', nodeId: 'm', finishedAt: '2025-06-20T00:00:01.000Z', team: 'team-a' });
    const lost = l.lost('n', [{ jobId: 'j', attemptId: 'j-a1' }]);
    record(l, l.now);
    const state = foldBilling(l.events);
    expect(state.finalized.get('inv-team-a-2025-06')!.data.invoice.totals[0]!.amountMicros).toBe(3_600_000);
    const july = invoiceOf(state, 'team-a', '2025-07');
    expect(july.lines.map((x) => [x.lineId, x.lateFrom, x.amountMicros])).toEqual([['k-a1@m', '2025-06', 1_000]]);
    const [note, ...more] = state.creditNotes.get('inv-team-a-2025-06')!;
    expect(more).toEqual([]);
    expect(note!.data).toMatchObject({
      creditNoteId: 'inv-team-a-2025-06-cn1',
      lines: [{ lineId: 'j-a1@n', amountMicros: 3_600_000, reason: 'platform_fault', eventIds: [lost.eventId] }],
      postings: [
        { account: 'revenue:compute', side: 'debit', amountMicros: 3_600_000 },
        { account: 'receivable:team-a', side: 'credit', amountMicros: 3_600_000 },
      ],
    });
    // Folding again decides nothing new.
    expect(decideInvoices(state, l.now, CUTOFF).credit).toEqual([]);
  });
});
