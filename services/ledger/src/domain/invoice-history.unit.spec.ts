/**
 * Property: for random event histories — attempts on one or several nodes, duplicates of agent
 * events, redeliveries into the live fold, events recorded late inside and after the cutoff,
 * nodes declared lost after finalization, a price change — and a ledger that runs its invoice
 * pass on a clock and restarts at random points, the invoices equal a reference computed here,
 * independently, from the de-duplicated history; finalized invoices replay byte for byte at their
 * recorded position; a fold from zero (rebuild) gives byte-identical invoices; postings balance
 * and no GPU is billed for more than the wall-clock time. A ledger whose lines are rows of the
 * store's database (decision 0053), folding small pages and restarting from its rows, decides and
 * answers the same.
 */
import type { InvoiceFinalized, InvoiceLine, JobOutcome, Posting } from '#contracts';
import fc from 'fast-check';
import { evolveBilling, foldBilling, initialBilling, type BillingState, type StoredEvent } from './billing.js';
import { FixtureLog, readFromEvents } from './billing.fixtures.js';
import { BILLING_HEADER_KINDS, billingFromRows, billingRowKeys, billingRows, billingView, dropBillingRows, jobKey, takeBillingRows, teamlessJobs, unreadLossesOf, type BillingRow } from './billing-rows.js';
import { allInvoices, canonicalJson, decideInvoices, deriveInvoice, finalizesAt, invoiceSummaries, invoiceView, parseInvoiceId } from './invoice.js';
import { monthEnd, monthOf } from './months.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CUTOFF = DAY;
const TICK = 4 * HOUR;
const BASE = Date.parse('2025-06-27T00:00:00.000Z');
const V2_FROM = BASE + 3 * DAY;
const MODEL: Record<string, string> = { n1: 'sim-gpu', n2: 'A100' };
const RATES = [
  { from: 0, rates: { 'sim-gpu': 3_600_000, A100: 3_500_000 } as Record<string, number>, minimum: 0 },
  { from: V2_FROM, rates: { 'sim-gpu': 7_200_000, A100: 1_800_001 } as Record<string, number>, minimum: 50_000 },
];

/** The reference price of a line, written out here without the ledger's code. */
function referenceAmount(model: string, gpus: number, heldAt: number, ms: number): number {
  const list = heldAt >= V2_FROM ? RATES[1]! : RATES[0]!;
  const exact2 = BigInt(gpus) * BigInt(ms) * BigInt(list.rates[model]!) * 2n;
  const rounded = Number((exact2 + 3_600_000n) / 7_200_000n);
  return ms > 0 && rounded < list.minimum ? list.minimum : rounded;
}

interface Slot {
  node: string;
  gpus: number[];
}
interface AttemptSpec {
  shape: 0 | 1 | 2;
  node: 0 | 1;
  gpu: 0 | 1;
  gapMs: number;
  durationMs: number;
  outcome: JobOutcome;
  /** 0: recorded at once; 1: late inside the cutoff; 2: very late (after the cutoff). */
  lateness: 0 | 1 | 2;
  delayMs: number;
  lostAfterMs: number | null;
  duplicate: boolean;
  teamInMetadata: boolean;
  team: 0 | 1;
  /** The job runs again much later (a second attempt, its agent naming no team): after its first line may be on a finalized invoice. */
  rerun: boolean;
}

const attemptArb: fc.Arbitrary<AttemptSpec> = fc.record({
  shape: fc.constantFrom(0 as const, 1 as const, 2 as const),
  node: fc.constantFrom(0 as const, 1 as const),
  gpu: fc.constantFrom(0 as const, 1 as const),
  gapMs: fc.integer({ min: 0, max: 12 * HOUR }),
  // Short runs too, so the minimum charge and 0 ms lines come up.
  durationMs: fc.oneof(fc.integer({ min: 0, max: 120_000 }), fc.integer({ min: 0, max: 20 * HOUR })),
  outcome: fc.constantFrom<JobOutcome>('completed', 'completed', 'failed', 'timeout', 'node_lost'),
  lateness: fc.constantFrom(0 as const, 0 as const, 1 as const, 2 as const),
  delayMs: fc.integer({ min: 0, max: 1_000_000 }),
  lostAfterMs: fc.option(fc.integer({ min: 0, max: 6 * DAY }), { freq: 4 }),
  duplicate: fc.boolean(),
  teamInMetadata: fc.boolean(),
  team: fc.constantFrom(0 as const, 1 as const),
  rerun: fc.boolean(),
});

interface Pending {
  at: number;
  seq: number;
  type: string;
  data: unknown;
  team?: string;
}

interface RefLine {
  lineId: string;
  team: string;
  node: string;
  gpuIndices: number[];
  heldAt: number;
  finishedAt: number;
  amount: number;
  /** When the line became complete in the store (the later of its first ComputeHeld and JobFinished). */
  completedAt: number;
}

/** The history as recorded (by time), and the reference lines from its de-duplicated facts. */
function buildHistory(specs: AttemptSpec[]): { pending: Pending[]; reference: Map<string, RefLine> } {
  const pending: Pending[] = [];
  let seq = 0;
  const push = (at: number, type: string, data: unknown, team?: string) => pending.push({ at, seq: seq++, type, data, ...(team === undefined ? {} : { team }) });
  push(BASE - DAY, 'PriceListPublished', { version: 1, currency: 'EUR', effectiveFrom: '1970-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: RATES[0]!.rates, publishedAt: new Date(BASE - DAY).toISOString() });
  push(BASE, 'PriceListPublished', {
    version: 2,
    currency: 'EUR',
    effectiveFrom: new Date(V2_FROM).toISOString(),
    ratesMicrosPerGpuHour: RATES[1]!.rates,
    minimumChargeMicros: RATES[1]!.minimum,
    publishedAt: new Date(BASE).toISOString(),
  });
  const cursor = new Map<string, number>();
  const reference = new Map<string, RefLine>();
  specs.forEach((s, i) => {
    const jobId = `job-${i}`;
    const attemptId = `${jobId}-a1`;
    const team = s.team ? 'team-b' : 'team-a';
    const slots: Slot[] =
      s.shape === 0 ? [{ node: `n${s.node + 1}`, gpus: [s.gpu] }] : s.shape === 1 ? [{ node: `n${s.node + 1}`, gpus: [0, 1] }] : [{ node: 'n1', gpus: [s.gpu] }, { node: 'n2', gpus: [s.gpu] }];
    // GPUs are never held twice at once: start after every slot used is free again.
    const start = Math.max(BASE, ...slots.flatMap((sl) => sl.gpus.map((g) => cursor.get(`${sl.node}/${g}`) ?? BASE))) + s.gapMs;
    const end = start + s.durationMs;
    for (const sl of slots) for (const g of sl.gpus) cursor.set(`${sl.node}/${g}`, end);
    push(start - HOUR, 'JobSubmitted', { jobId, team });
    const delay = s.lateness === 0 ? s.delayMs % 60_000 : s.lateness === 1 ? s.delayMs % (CUTOFF - HOUR) : CUTOFF + 2 * DAY + s.delayMs;
    const metaTeam = s.teamInMetadata ? team : undefined;
    for (const sl of slots) {
      const held = { jobId, attemptId, nodeId: sl.node, gpuIndices: sl.gpus, gpuModel: MODEL[sl.node]!, gpus: sl.gpus.length, heldAt: new Date(start).toISOString() };
      const finishedAt = end;
      const outcome = s.outcome;
      const finished = { jobId, attemptId, nodeId: sl.node, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: new Date(finishedAt).toISOString() };
      const heldRecorded = s.lateness === 2 ? end + delay : start + (s.delayMs % 1_000);
      const finishedRecorded = Math.max(heldRecorded, end + delay);
      push(heldRecorded, 'ComputeHeld', held, metaTeam);
      push(finishedRecorded, 'JobFinished', finished, metaTeam);
      if (s.duplicate) {
        // The agent said it again (a restart re-emitting), with other stamps: the first recorded stands.
        push(finishedRecorded + 1, 'ComputeHeld', { ...held, heldAt: new Date(start - HOUR).toISOString() }, metaTeam);
        push(finishedRecorded + 2, 'JobFinished', { ...finished, outcome: 'completed', finishedAt: new Date(finishedAt + HOUR).toISOString() }, metaTeam);
      }
      let waived = outcome === 'node_lost';
      if (s.lostAfterMs !== null) {
        push(end + s.lostAfterMs, 'NodeLost', { nodeId: sl.node, reason: 'heartbeat_timeout', lastSeenAt: held.heldAt, detectedAt: new Date(end + s.lostAfterMs).toISOString(), affectedAttempts: [{ jobId, attemptId }] });
        waived = true;
      }
      const ms = waived ? 0 : end - start;
      reference.set(`${attemptId}@${sl.node}`, {
        lineId: `${attemptId}@${sl.node}`,
        team,
        node: sl.node,
        gpuIndices: sl.gpus,
        heldAt: start,
        finishedAt,
        amount: waived ? 0 : referenceAmount(MODEL[sl.node]!, sl.gpus.length, start, ms),
        completedAt: finishedRecorded,
      });
    }
    if (s.rerun) {
      // On a GPU of its own (n1/7), a week past the first attempt's cutoff, recorded as it runs, with no team in the metadata.
      const again = Math.max(end + CUTOFF + 7 * DAY, cursor.get('n1/7') ?? 0);
      const done = again + 30 * 60_000;
      cursor.set('n1/7', done);
      const second = `${jobId}-a2`;
      push(again, 'ComputeHeld', { jobId, attemptId: second, nodeId: 'n1', gpuIndices: [7], gpuModel: MODEL.n1!, gpus: 1, heldAt: new Date(again).toISOString() });
      push(done, 'JobFinished', { jobId, attemptId: second, nodeId: 'n1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date(done).toISOString() });
      reference.set(`${second}@n1`, { lineId: `${second}@n1`, team, node: 'n1', gpuIndices: [7], heldAt: again, finishedAt: done, amount: referenceAmount(MODEL.n1!, 1, again, done - again), completedAt: done });
    }
  });
  pending.sort((a, b) => a.at - b.at || a.seq - b.seq);
  return { pending, reference };
}

/**
 * The ledger's state with its lines as rows (decision 0053), over rows kept here as the store's
 * database would: each page read, folded and written back as the projection does, in pages of
 * `pageSize` events.
 */
class TableRun {
  readonly rows = new Map<string, BillingRow>();
  /** The position of the last event written into the rows. */
  private at = 0n;
  state = initialBilling({ inTable: true });
  constructor(private readonly pageSize: number) {}

  fold(events: readonly StoredEvent[]): void {
    const after = events.filter((e) => e.position > this.state.position);
    for (let i = 0; i < after.length; i += this.pageSize) {
      const page = after.slice(i, i + this.pageSize);
      const { read, dirty } = billingRowKeys(this.state, page);
      takeBillingRows(this.state, read.flatMap((key) => (this.rows.has(key) ? [this.rows.get(key)!] : [])));
      for (const e of page) evolveBilling(this.state, e);
      dirty.push(...unreadLossesOf(this.state));
      readFromEvents(this.state, events);
      for (const row of billingRows(this.state, dirty)) this.rows.set(row.key, row);
      dropBillingRows(this.state);
      this.at = page.at(-1)!.position;
    }
  }

  /** A restart: the headers read from the rows, at their position. */
  restart(): void {
    this.state = billingFromRows(this.at, [...this.rows.values()].filter((r) => (BILLING_HEADER_KINDS as readonly string[]).includes(r.values.kind)));
  }

  /** The state with the open lines finished before `month` (every one without), and their jobs' teams. */
  view(month?: string): BillingState {
    const open = [...this.rows.values()].filter((r) => r.values.kind === 'a' && r.values.month !== null && (month === undefined || r.values.month < month));
    const view = billingView(this.state, open);
    takeBillingRows(view, teamlessJobs(view).flatMap((jobId) => (this.rows.has(jobKey(jobId)) ? [this.rows.get(jobKey(jobId))!] : [])));
    return view;
  }
}

interface Run {
  log: FixtureLog;
  /** The ledger's state with its lines in the store's database, folded beside the others. */
  table: TableRun;
  live: BillingState;
  /** The ledger's own kind of state, folded beside `live`: its settled attempts leave it (decision 0046). */
  settling: BillingState;
  /** When each invoice was finalized (tick time). */
  finalizedAt: Map<string, number>;
}

/** Drives the ledger: events are recorded as their time comes, the invoice pass runs every tick, the ledger restarts and sees redeliveries. */
function runLedger(pending: Pending[], restarts: number[], redeliveries: number[]): Run {
  const log = new FixtureLog();
  let live = initialBilling();
  let settling = initialBilling({ settle: true });
  const table = new TableRun(1 + (restarts.length % 4));
  const finalizedAt = new Map<string, number>();
  const lastAt = pending.at(-1)!.at;
  // Run until every month with events has ended and passed its cutoff.
  const end = monthEnd(monthOf(lastAt)) + CUTOFF + 2 * TICK;
  let next = 0;
  let tick = 0;
  for (let now = BASE - DAY; now <= end; now += TICK, tick++) {
    while (next < pending.length && pending[next]!.at <= now) {
      const p = pending[next++]!;
      log.append(p.type, p.data, { recordedAt: p.at, ...(p.team === undefined ? {} : { team: p.team }) });
    }
    if (restarts.includes(tick)) {
      // A restart: the projection is folded again from zero.
      live = initialBilling();
      settling = initialBilling({ settle: true });
      table.restart();
    }
    for (const state of [live, settling]) {
      for (const e of log.events) evolveBilling(state, e);
      // Redelivered events (already folded) change nothing.
      for (const r of redeliveries) if (log.events.length) evolveBilling(state, log.events[r % log.events.length]!);
      state.position = BigInt(log.events.length);
    }
    table.fold(log.events);
    // Every other tick it decides from what its rows alone hold, as after a restart.
    if (tick % 2 === 1) table.restart();
    table.state.position = BigInt(log.events.length);
    if (settling.teamless.size > 0) seenCases.teamsReadAgain++;
    readLosses(settling, log);
    const decided = decideInvoices(live, now, CUTOFF);
    // The settling state decides the same, byte for byte, with none of the settled attempts.
    expect(decideInvoices(settling, now, CUTOFF)).toEqual(decided);
    // So does the state in the table, from the lines finished before the first month not due.
    expect(decideInvoices(table.view(monthOf(now - CUTOFF)), now, CUTOFF)).toEqual(decided);
    // Decided from the attempts not yet settled: exactly the invoices a derivation of every attempt finds due.
    const due = [...allInvoices(live)].filter(([id, invoice]) => !live.finalized.has(id) && now >= finalizesAt(invoice.month, CUTOFF)).map(([, invoice]) => canonicalJson(invoice));
    expect(decided.finalize.map((f) => canonicalJson(f.invoice))).toEqual(due);
    if (due.length > 0) seenCases.decidedDue++;
    for (const f of decided.finalize) {
      log.append('InvoiceFinalized', f, { recordedAt: now });
      finalizedAt.set(f.invoice.invoiceId, now);
    }
    for (const c of decided.credit) log.append('CreditNoteIssued', c, { recordedAt: now });
    for (const e of log.events) {
      evolveBilling(live, e);
      evolveBilling(settling, e);
    }
    table.fold(log.events);
    readLosses(settling, log);
  }
  return { log, table, live, settling, finalizedAt };
}

/** Reads what the settling state needs from the log, as the ledger does from the store. */
function readLosses(state: BillingState, log: FixtureLog): void {
  readFromEvents(state, log.events);
}

/** What the runs exercised, so the property is known to reach the cases it is about. */
const seenCases = { settled: 0, teamsReadAgain: 0, decidedDue: 0, lateAfterFinalization: 0, lateInsideCutoff: 0, creditNotes: 0, minimumApplied: 0, multiNode: 0, waived: 0 };

function checkRun(specs: AttemptSpec[], restarts: number[], redeliveries: number[]): void {
  const { pending, reference } = buildHistory(specs);
  const { log, table, live, settling, finalizedAt } = runLedger(pending, restarts, redeliveries);

  const views = invoiceSummaries(live, {}, CUTOFF).map((s) => invoiceView(live, s.invoiceId, CUTOFF));
  // The settling state answers the same, each finalized invoice with the copy its event holds; it keeps none of their attempts.
  const stored = new Map(log.events.filter((e) => e.type === 'InvoiceFinalized').map((e) => [(e.data as InvoiceFinalized).invoice.invoiceId, (e.data as InvoiceFinalized).invoice]));
  expect(invoiceSummaries(settling, {}, CUTOFF)).toEqual(invoiceSummaries(live, {}, CUTOFF));
  expect(invoiceSummaries(settling, {}, CUTOFF).map((s) => canonicalJson(invoiceView(settling, s.invoiceId, CUTOFF, undefined, stored.get(s.invoiceId))))).toEqual(views.map((v) => canonicalJson(v)));
  expect(settling.attempts.size).toBe(live.attempts.size - settling.settled.size);
  // And the state in the table, restarted from its rows: memory holds no line.
  table.restart();
  const fromRows = table.view();
  expect(table.state.attempts.size + table.state.settled.size + table.state.jobTeams.size).toBe(0);
  fromRows.position = live.position;
  expect(invoiceSummaries(fromRows, {}, CUTOFF)).toEqual(invoiceSummaries(live, {}, CUTOFF));
  expect(invoiceSummaries(fromRows, {}, CUTOFF).map((s) => canonicalJson(invoiceView(fromRows, s.invoiceId, CUTOFF, undefined, stored.get(s.invoiceId))))).toEqual(views.map((v) => canonicalJson(v)));
  expect([...table.rows.values()].filter((r) => r.values.kind === 's').length).toBe(live.attempts.size - settling.attempts.size);
  if (settling.settled.size > 0) seenCases.settled++;
  // Every month has ended long ago: every invoice is finalized, each exactly once in the log.
  expect(views.every((v) => v.status === 'finalized')).toBe(true);
  const finalEvents = log.events.filter((e) => e.type === 'InvoiceFinalized').map((e) => (e.data as InvoiceFinalized).invoice.invoiceId);
  expect(new Set(finalEvents).size).toBe(finalEvents.length);

  // Each reference line is on exactly one invoice, of its team; net of credit notes it costs the reference amount.
  const seen = new Map<string, { line: InvoiceLine; invoiceId: string }>();
  for (const v of views) for (const line of v.lines) {
    expect(seen.has(line.lineId)).toBe(false);
    seen.set(line.lineId, { line, invoiceId: v.invoiceId });
  }
  expect([...seen.keys()].sort()).toEqual([...reference.keys()].sort());
  const credited = new Map<string, number>();
  for (const v of views) for (const n of v.creditNotes) for (const l of n.lines) credited.set(l.lineId, (credited.get(l.lineId) ?? 0) + l.amountMicros);
  for (const [lineId, ref] of reference) {
    const { line, invoiceId } = seen.get(lineId)!;
    expect({ lineId, team: parseInvoiceId(invoiceId).team, net: line.amountMicros - (credited.get(lineId) ?? 0) }).toEqual({ lineId, team: ref.team, net: ref.amount });
    expect(line.heldFrom).toBe(new Date(ref.heldAt).toISOString());
    expect(line.finishedAt).toBe(new Date(ref.finishedAt).toISOString());
    // Late inside the cutoff: on the month it finished in. Only a line completed after that invoice was finalized moves on.
    const month = monthOf(ref.finishedAt);
    const closed = finalizedAt.get(`inv-${ref.team}-${month}`);
    if (closed === undefined || ref.completedAt <= closed) {
      expect({ lineId, month: parseInvoiceId(invoiceId).month, lateFrom: line.lateFrom }).toEqual({ lineId, month, lateFrom: undefined });
    } else {
      expect({ lineId, lateFrom: line.lateFrom }).toEqual({ lineId, lateFrom: month });
      expect(parseInvoiceId(invoiceId).month > month).toBe(true);
    }
    if (ref.completedAt < monthEnd(month) + CUTOFF) expect(line.lateFrom).toBeUndefined();
    if (line.lateFrom) seenCases.lateAfterFinalization++;
    if (ref.completedAt >= monthEnd(month) && ref.completedAt < monthEnd(month) + CUTOFF) seenCases.lateInsideCutoff++;
    if (line.minimumApplied) seenCases.minimumApplied++;
    if (line.waivedReason) seenCases.waived++;
    if (line.lineId.endsWith('@n2') && seen.has(line.lineId.replace(/@n2$/, '@n1'))) seenCases.multiNode++;
  }
  seenCases.creditNotes += views.reduce((n, v) => n + v.creditNotes.length, 0);

  // Finalized invoices replay byte for byte at their recorded position.
  for (const e of log.events.filter((x) => x.type === 'InvoiceFinalized')) {
    const stored = (e.data as InvoiceFinalized).invoice;
    const replayed = deriveInvoice(log.events, { team: stored.team, month: stored.month, asOf: BigInt(stored.derivedAtPosition) });
    expect(canonicalJson(replayed)).toBe(canonicalJson(stored));
  }
  // A fold from zero (rebuild) answers byte-identical invoices.
  const fresh = foldBilling(log.events);
  fresh.position = live.position;
  expect(invoiceSummaries(fresh, {}, CUTOFF).map((s) => canonicalJson(invoiceView(fresh, s.invoiceId, CUTOFF)))).toEqual(views.map((v) => canonicalJson(v)));

  // Conservation: debits equal credits per currency; revenue equals the reference total.
  const postings: Posting[] = views.flatMap((v) => [...v.postings, ...v.creditNotes.flatMap((n) => n.postings)]);
  const sum = (ps: Posting[]) => ps.reduce((s, p) => s + BigInt(p.amountMicros), 0n);
  expect(sum(postings.filter((p) => p.side === 'debit'))).toBe(sum(postings.filter((p) => p.side === 'credit')));
  const revenue = sum(postings.filter((p) => p.account === 'revenue:compute' && p.side === 'credit')) - sum(postings.filter((p) => p.account === 'revenue:compute' && p.side === 'debit'));
  expect(revenue).toBe([...reference.values()].reduce((s, r) => s + BigInt(r.amount), 0n));
  for (const v of views) {
    const receivable = v.postings.filter((p) => p.account === `receivable:${v.team}`);
    expect(sum(receivable)).toBe(v.totals.reduce((s, t) => s + BigInt(t.amountMicros), 0n));
  }
  // No GPU billed for more than the wall-clock time: billed intervals of one GPU never overlap.
  const byGpu = new Map<string, [number, number][]>();
  for (const { line } of seen.values()) {
    if (line.billableMs === 0) continue;
    for (const g of line.gpuIndices) {
      const list = byGpu.get(`${line.nodeId}/${g}`) ?? [];
      list.push([Date.parse(line.heldFrom), Date.parse(line.heldFrom) + line.billableMs]);
      byGpu.set(`${line.nodeId}/${g}`, list);
    }
  }
  for (const [gpu, intervals] of byGpu) {
    intervals.sort((a, b) => a[0] - b[0]);
    const billed = intervals.reduce((s, [a, b]) => s + (b - a), 0);
    const wall = Math.max(...intervals.map((i) => i[1])) - intervals[0]![0];
    expect({ gpu, over: billed > wall }).toEqual({ gpu, over: false });
    for (let i = 1; i < intervals.length; i++) expect(intervals[i]![0]).toBeGreaterThanOrEqual(intervals[i - 1]![1]);
  }
}

/** An attempt of an hour from the start, completed and recorded at once, unless told otherwise. */
function attempt(over: Partial<AttemptSpec>): AttemptSpec {
  return { shape: 0, node: 0, gpu: 0, gapMs: 0, durationMs: HOUR, outcome: 'completed', lateness: 0, delayMs: 0, lostAfterMs: null, duplicate: false, teamInMetadata: true, team: 0, rerun: false, ...over };
}

/**
 * Histories that reach each case the property is about, run before the random ones: a random
 * run reaches most cases most of the time, but not every case every time (the minimum charge
 * needs a short run after the second price list, days into the history).
 */
const caseExamples: [AttemptSpec[], number[], number[]][] = [
  // A 10 s run under price list 2: below its minimum charge.
  [[attempt({ gapMs: 4 * DAY, durationMs: 10_000 })], [], []],
  // One attempt on two nodes, and one whose node was lost during the run (waived).
  [[attempt({ shape: 2 }), attempt({ outcome: 'node_lost' })], [], []],
  // Beside a run recorded at once, one that ends on June 30 at 13:00 and is recorded three days
  // later, after June's invoice was finalized: it goes on July's.
  [[attempt({ gpu: 1 }), attempt({ gapMs: 3 * DAY + 12 * HOUR, lateness: 2 })], [], []],
  // Ends on June 30 at 23:00 and is recorded two hours later: late, but inside the cutoff.
  [[attempt({ gapMs: 3 * DAY + 22 * HOUR, lateness: 1, delayMs: 2 * HOUR })], [], []],
  // Its node is declared lost six days after the run, once June is finalized: a credit note.
  [[attempt({ lostAfterMs: 6 * DAY })], [3], [1]],
  // Runs again in July, its agent naming no team, after its June line was finalized and the job left the settling state.
  [[attempt({ rerun: true })], [], []],
];

describe('invoices from random histories', () => {
  it('equal the reference from the de-duplicated history, whatever the duplicates, redeliveries, late events and restarts', () => {
    fc.assert(
      fc.property(
        fc.array(attemptArb, { minLength: 1, maxLength: 25 }),
        fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        (specs, restarts, redeliveries) => checkRun(specs, restarts, redeliveries),
      ),
      { numRuns: 100, examples: caseExamples },
    );
    for (const [name, count] of Object.entries(seenCases)) expect({ name, reached: count > 0 }).toEqual({ name, reached: true });
  });

  it('a given history: a late event inside the cutoff is on its month, a node lost after finalization is credited', () => {
    const base: AttemptSpec = { shape: 0, node: 0, gpu: 0, gapMs: 0, durationMs: HOUR, outcome: 'completed', lateness: 0, delayMs: 0, lostAfterMs: null, duplicate: false, teamInMetadata: true, team: 0, rerun: false };
    checkRun(
      [
        { ...base, gapMs: 3 * DAY + 22 * HOUR, durationMs: HOUR, lateness: 1, delayMs: 20 * HOUR }, // ends 2025-06-30T23:00, recorded 19h later
        { ...base, node: 1, gapMs: 2 * DAY, lostAfterMs: 5 * DAY }, // June, lost after finalization
        { ...base, gpu: 1, gapMs: 3 * DAY, lateness: 2, duplicate: true }, // recorded after the cutoff
        { ...base, shape: 2, gapMs: 5 * DAY, durationMs: 1 }, // a two-node attempt of 1 ms: the minimum charge
      ],
      [7],
      [3, 11],
    );
  });
});

