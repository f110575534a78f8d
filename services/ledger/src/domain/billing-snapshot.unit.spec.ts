/**
 * The billing snapshot text (decision 0039), in parts of any size, gives back exactly the state it was written from:
 * cut after every event of a history with two price lists, several attempts per job, a
 * multi-node attempt, lost nodes (one before the attempt's own events arrive), events without a
 * team, finalized invoices and credit notes, the decoded state equals the fold (strictly: every
 * key, every bigint), writes the same text again, and folded on to the end gives the state and
 * the invoices of a fold from zero.
 */
import { createHash } from 'node:crypto';
import { evolveBilling, foldBilling, type BillingState, type StoredEvent } from './billing.js';
import { FixtureLog, readFromEvents } from './billing.fixtures.js';
import { BILLING_SNAPSHOT_FORMAT, decodeBilling, decodeBillingParts, encodeBilling } from './billing-snapshot.js';
import type { InvoiceBody, InvoiceFinalized } from '#contracts';
import { allInvoiceViews, canonicalJson, decideInvoices } from './invoice.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const CUTOFF = 3 * DAY;
const iso = (ms: number) => new Date(ms).toISOString();
const JUNE = Date.parse('2025-06-02T00:00:00.000Z');
const JULY = Date.parse('2025-07-02T00:00:00.000Z');

function history(): FixtureLog {
  const log = new FixtureLog();
  log.prices(1, { 'sim-gpu': 3_600_000, A100: 3_500_000 }, { defaultRate: 2_000_000 });
  log.prices(2, { 'sim-gpu': 7_200_000 }, { effectiveFrom: iso(JUNE + 10 * DAY), defaultRate: 1_800_001, minimum: 50_000, currency: 'EUR' });
  const job = (n: number, team: string) => {
    const jobId = `00000000-0000-4000-9000-${n.toString().padStart(12, '0')}`;
    log.append('JobSubmitted', { jobId, team, submittedAt: iso(JUNE) }, { team });
    return jobId;
  };
  for (let n = 0; n < 12; n++) {
    const jobId = job(n, n % 3 === 0 ? 'team-b' : 'team-a');
    const team = n % 4 === 0 ? undefined : n % 3 === 0 ? 'team-b' : 'team-a';
    const start = JUNE + n * DAY;
    // Job 5: a multi-node attempt; job 7: its first node lost, then run again; job 9: lost before
    // the agent's events arrive, and its JobFinished recorded before its ComputeHeld.
    const nodes = n === 5 ? ['n1', 'n2', 'n3'] : ['n1'];
    const attemptId = `${jobId}-a1`;
    if (n === 9) log.lost('n1', [{ jobId, attemptId }]);
    if (n === 9) log.finished({ jobId, attemptId, nodeId: 'n1', finishedAt: iso(start + HOUR), outcome: 'node_lost', ...(team ? { team } : {}) });
    for (const nodeId of nodes) log.held({ jobId, attemptId, nodeId, gpuIndices: nodeId === 'n2' ? [0, 1, 2, 3] : [0], gpuModel: nodeId === 'n3' ? 'H100' : n % 2 ? 'A100' : 'sim-gpu', heldAt: iso(start), ...(team ? { team } : {}) });
    if (n === 7) {
      log.lost('n1', [{ jobId, attemptId }]);
      log.finished({ jobId, attemptId, nodeId: 'n1', finishedAt: iso(start + HOUR), outcome: 'node_lost', ...(team ? { team } : {}) });
      const second = `${jobId}-a2`;
      log.held({ jobId, attemptId: second, nodeId: 'n2', gpuIndices: [1], heldAt: iso(start + 2 * HOUR), ...(team ? { team } : {}) });
      log.finished({ jobId, attemptId: second, nodeId: 'n2', finishedAt: iso(start + 5 * HOUR + 17), ...(team ? { team } : {}) });
    } else if (n !== 9) {
      for (const nodeId of nodes) log.finished({ jobId, attemptId, nodeId, finishedAt: iso(start + (n + 1) * HOUR + 123), ...(team ? { team } : {}) });
    }
  }
  // June is finalized; a node lost afterwards is a credit note on it; a July attempt stays a draft.
  log.now = JULY + 4 * DAY;
  for (const f of decideInvoices(foldBilling(log.events), log.now, CUTOFF).finalize) log.append('InvoiceFinalized', f, { team: f.invoice.team });
  const late = `00000000-0000-4000-9000-000000000002`;
  log.lost('n1', [{ jobId: late, attemptId: `${late}-a1` }]);
  const credit = decideInvoices(foldBilling(log.events), log.now, CUTOFF).credit;
  expect(credit.length).toBeGreaterThan(0);
  for (const c of credit) log.append('CreditNoteIssued', c, { team: c.team });
  // A node lost with an attempt whose agent never reported: a line of the NodeLost alone.
  log.lost('n4', [{ jobId: 'ghost', attemptId: 'ghost-a1' }]);
  const julyJob = job(99, 'team-a');
  log.held({ jobId: julyJob, attemptId: `${julyJob}-a1`, nodeId: 'n1', gpuIndices: [0], heldAt: iso(JULY), team: 'team-a' });
  return log;
}

/** The stored copies of the invoices finalized among `events`, by id: what a settling state reads from the store. */
const storedCopies = (events: readonly StoredEvent[]) =>
  new Map<string, InvoiceBody>(events.filter((e) => e.type === 'InvoiceFinalized').map((e) => [(e.data as InvoiceFinalized).invoice.invoiceId, (e.data as InvoiceFinalized).invoice]));
const digests = (state: BillingState, stored?: ReadonlyMap<string, InvoiceBody>) =>
  new Map([...allInvoiceViews(state, CUTOFF, stored)].map(([id, v]) => [id, createHash('sha256').update(canonicalJson(v)).digest('hex')]));
/** Reads what a settling state needs from the log, as the ledger does from the store. */
const readLosses = readFromEvents;

describe('billing snapshot text', () => {
  it('has a format number', () => {
    expect(Number.isInteger(BILLING_SNAPSHOT_FORMAT) && BILLING_SNAPSHOT_FORMAT >= 1).toBe(true);
  });

  it('cut after every event: decodes to the fold strictly, re-encodes byte for byte, and folded on equals the fold from zero', () => {
    const events = history().events;
    const whole = foldBilling(events);
    expect(whole.finalized.size).toBeGreaterThan(1);
    expect(whole.creditNotes.size).toBeGreaterThan(0);
    expect(whole.prices.size).toBe(2);
    expect([...whole.attempts.keys()].filter((k) => k.includes('-a1@n')).length).toBeGreaterThan(12);
    const wholeText = encodeBilling(whole);
    const wholeDigests = digests(whole);
    for (let cut = 0; cut <= events.length; cut++) {
      const state = foldBilling(events.slice(0, cut));
      // Parts of every size: an item each, a few items each, and the default (one part).
      const partChars = [1, 700, undefined][cut % 3];
      const text = encodeBilling(state, { partChars });
      const decoded = decodeBilling(text);
      expect(decoded).toStrictEqual(state);
      expect(encodeBilling(decoded, { partChars })).toEqual(text);
      for (const e of events.slice(cut)) evolveBilling(decoded, e);
      expect(decoded).toStrictEqual(whole);
      expect(encodeBilling(decoded)).toEqual(wholeText);
      expect(digests(decoded)).toEqual(wholeDigests);
    }
  });

  it('a settling state, cut after every event: decodes strictly, re-encodes byte for byte, folds on to the fold from zero, and answers as a state that keeps every attempt', () => {
    const events = history().events;
    const stored = storedCopies(events);
    const whole = foldBilling(events, undefined, { settle: true });
    readLosses(whole, events);
    const keeping = foldBilling(events);
    // What settled: June's lines left the attempts, the finalized copies keep no lines, and the loss after June was finalized is kept with its line.
    expect(whole.settled.size).toBe([...stored.values()].reduce((n, i) => n + i.lines.length, 0));
    expect(whole.attempts.size).toBe(keeping.attempts.size - whole.settled.size);
    // Jobs whose attempts all settled left `jobTeams`; July's job keeps its team.
    expect(whole.jobTeams.size).toBeLessThan(keeping.jobTeams.size);
    expect(whole.jobTeams.has('00000000-0000-4000-9000-000000000099')).toBe(true);
    expect([...whole.finalized.values()].every((f) => f.data.invoice.lines.length === 0 && f.lines === stored.get(f.data.invoice.invoiceId)!.lines.length)).toBe(true);
    expect([...whole.finalized.values()].flatMap((f) => [...f.losses!.values()]).filter((l) => l.line !== undefined)).not.toHaveLength(0);
    const wholeText = encodeBilling(whole);
    expect(wholeText.join('').length).toBeLessThan(encodeBilling(keeping).join('').length);
    const wholeDigests = digests(whole, stored);
    expect(wholeDigests).toEqual(digests(keeping));
    for (let cut = 0; cut <= events.length; cut++) {
      const prefix = events.slice(0, cut);
      const state = foldBilling(prefix, undefined, { settle: true });
      readLosses(state, prefix);
      const partChars = [1, 700, undefined][cut % 3];
      const text = encodeBilling(state, { partChars });
      const decoded = decodeBilling(text);
      expect(decoded).toStrictEqual(state);
      expect(encodeBilling(decoded, { partChars })).toEqual(text);
      // The same decisions and views as a state that keeps every attempt, at every cut.
      const kept = foldBilling(prefix);
      const now = JULY + 4 * DAY;
      expect(decideInvoices(decoded, now, CUTOFF)).toEqual(decideInvoices(kept, now, CUTOFF));
      expect(digests(decoded, stored)).toEqual(digests(kept));
      for (const e of events.slice(cut)) evolveBilling(decoded, e);
      readLosses(decoded, events);
      expect(decoded).toStrictEqual(whole);
      expect(encodeBilling(decoded)).toEqual(wholeText);
    }
  });

  it('a settling state ignores the events of a finalized line that come again under new ids, and reads again the team of a settled job that runs again, as a state that keeps them does', () => {
    const log = history();
    const jobId = '00000000-0000-4000-9000-000000000001';
    const attemptId = `${jobId}-a1`;
    // Job 1's June line is on team-a's finalized June invoice; its agent reports it again in July.
    log.held({ jobId, attemptId, nodeId: 'n1', gpuIndices: [0], gpuModel: 'A100', heldAt: iso(JULY), team: 'team-a' });
    log.finished({ jobId, attemptId, nodeId: 'n1', finishedAt: iso(JULY + HOUR), team: 'team-a' });
    // Job 4's agent reports no team: its June line billed the team of its JobSubmitted. The job left
    // the state with that line; a second attempt in July, again with no team, needs it read again.
    const job4 = '00000000-0000-4000-9000-000000000004';
    log.held({ jobId: job4, attemptId: `${job4}-a2`, nodeId: 'n2', gpuIndices: [0], heldAt: iso(JULY + DAY) });
    log.finished({ jobId: job4, attemptId: `${job4}-a2`, nodeId: 'n2', finishedAt: iso(JULY + DAY + HOUR) });
    const settling = foldBilling(log.events, undefined, { settle: true });
    expect(settling.settled.has(`${attemptId}@n1`) && !settling.attempts.has(`${attemptId}@n1`)).toBe(true);
    expect([...settling.teamless]).toEqual([job4]);
    readLosses(settling, log.events);
    expect(settling.teamless.size).toBe(0);
    expect(settling.jobTeams.get(job4)?.team).toBe('team-a');
    const kept = foldBilling(log.events);
    const later = JULY + 40 * DAY;
    expect(decideInvoices(settling, later, CUTOFF)).toEqual(decideInvoices(kept, later, CUTOFF));
    expect(digests(settling, storedCopies(log.events))).toEqual(digests(kept));
  });

  it('a settling state keeps the team of a job while an attempt of it is open, though another of its lines settled', () => {
    const log = new FixtureLog();
    log.prices(1, { 'sim-gpu': 3_600_000 });
    const jobId = 'job-two-months';
    log.append('JobSubmitted', { jobId, team: 'team-a', submittedAt: iso(JUNE) }, { team: 'team-a' });
    // Neither attempt's agent names a team: both lines bill the JobSubmitted's. The second finishes in July.
    log.held({ jobId, attemptId: `${jobId}-a1`, nodeId: 'n1', gpuIndices: [0], heldAt: iso(JUNE) });
    log.finished({ jobId, attemptId: `${jobId}-a1`, nodeId: 'n1', finishedAt: iso(JUNE + HOUR) });
    log.held({ jobId, attemptId: `${jobId}-a2`, nodeId: 'n1', gpuIndices: [0], heldAt: iso(JULY - 3 * DAY) });
    log.now = JULY + 4 * DAY;
    const june = decideInvoices(foldBilling(log.events), log.now, CUTOFF).finalize;
    expect(june.map((f) => f.invoice.invoiceId)).toEqual(['inv-team-a-2025-06']);
    log.append('InvoiceFinalized', june[0], { team: 'team-a' });
    const settling = foldBilling(log.events, undefined, { settle: true });
    expect(settling.settled.has(`${jobId}-a1@n1`) && settling.jobTeams.has(jobId)).toBe(true);
    log.finished({ jobId, attemptId: `${jobId}-a2`, nodeId: 'n1', finishedAt: iso(JULY + 5 * DAY) });
    for (const e of log.events.slice(-1)) evolveBilling(settling, e);
    expect(settling.teamless.size).toBe(0);
    const august = Date.parse('2025-08-05T00:00:00.000Z');
    const july = decideInvoices(settling, august, CUTOFF).finalize;
    expect(july.map((f) => f.invoice.lines.map((l) => l.lineId))).toEqual([[`${jobId}-a2@n1`]]);
    expect(july).toEqual(decideInvoices(foldBilling(log.events), august, CUTOFF).finalize);
  });

  it('keeps the order of an attempt line\'s facts, and lines whose data names another line', () => {
    const events = history().events;
    const state = foldBilling(events);
    const lostFirst = [...state.attempts.values()].find((a) => Object.keys(a).join() === 'key,lost,finished,held');
    expect(lostFirst).toBeDefined();
    const lostOnly = [...state.attempts.values()].find((a) => Object.keys(a).join() === 'key,lost');
    expect(lostOnly).toBeDefined();
    expect(Object.keys(decodeBilling(encodeBilling(state)).attempts.get(lostFirst!.key)!)).toEqual(['key', 'lost', 'finished', 'held']);
  });

  it('keeps event data exactly as the store gave it: key order, undefined, -0, odd times, big positions', () => {
    const base: StoredEvent = { eventId: 'e-1', type: 'ComputeHeld', position: 2n ** 60n, recordedAt: '2025-06-01 00:00:00+00', metadata: {}, data: undefined };
    const state = foldBilling([
      { ...base, data: { nodeId: 'n1', attemptId: 'x', gpuIndices: [0], extra: { b: -0, a: undefined, c: [null, true, 'long-string-here', 'long-string-here'] }, jobId: 'j' } },
      { ...base, eventId: 'e-2', position: 2n ** 60n + 1n, type: 'JobFinished', recordedAt: '2025-06-01T00:00:00.000Z', data: { attemptId: 'x', nodeId: 'n1', when: 'long-string-here', big: 1e300 } },
    ]);
    const decoded = decodeBilling(encodeBilling(state));
    expect(decoded).toStrictEqual(state);
    const held = decoded.attempts.get('x@n1')!.held!;
    const data = held.data as unknown as { extra: { a?: undefined; b: number } };
    expect(Object.keys(data)).toEqual(['nodeId', 'attemptId', 'gpuIndices', 'extra', 'jobId']);
    expect(Object.is(data.extra.b, -0)).toBe(true);
    expect('a' in data.extra).toBe(true);
    expect(held.position).toBe(2n ** 60n);
    expect(held.recordedAt).toBe('2025-06-01 00:00:00+00');
    expect('team' in held && held.team === undefined).toBe(true);
  });

  it('writes parts of about the size asked, the head last, and decodes a part at a time', () => {
    const state = foldBilling(history().events);
    const one = encodeBilling(state);
    // One part of items and the head: the state is far below the default part size.
    expect(one).toHaveLength(2);
    const many = encodeBilling(state, { partChars: 2_000 });
    expect(many.length).toBeGreaterThan(4);
    const head = JSON.parse(many.at(-1)!) as [string, unknown[], number];
    expect(head[0]).toBe(String(state.position));
    expect(head[2]).toBe(many.length - 1);
    // Every part but the one that ends the items reaches the size asked, by at most one item.
    for (const part of many.slice(0, -2)) expect(part.length).toBeGreaterThanOrEqual(2_000);
    // The same items, cut elsewhere.
    const items = (parts: string[]) => parts.slice(0, -1).flatMap((p) => JSON.parse(p) as unknown[]);
    expect(items(many)).toEqual(items(one));
    const steps = decodeBillingParts(many);
    let turns = 0;
    let step = steps.next();
    for (; !step.done; step = steps.next()) turns++;
    expect(turns).toBe(many.length - 1);
    expect(step.value).toStrictEqual(state);
    // An empty state: the head alone.
    expect(encodeBilling(foldBilling([]))).toHaveLength(1);
    expect(decodeBilling(encodeBilling(foldBilling([])))).toStrictEqual(foldBilling([]));
  });

  it('refuses parts that are not a billing snapshot, or not all of one', () => {
    expect(() => decodeBilling(['{"state":{}}'])).toThrow(/not a billing snapshot/);
    expect(() => decodeBilling(['not json'])).toThrow();
    expect(() => decodeBilling([])).toThrow(/not a billing snapshot/);
    const parts = encodeBilling(foldBilling(history().events), { partChars: 2_000 });
    expect(() => decodeBilling([...parts.slice(0, 2), ...parts.slice(3)])).toThrow(`billing snapshot: its head counts ${parts.length - 1} parts before it, there are ${parts.length - 2}`);
    expect(() => decodeBilling(['[[9,"x"]]', JSON.stringify(['1', [], 1, 0])])).toThrow('billing snapshot: unknown section 9');
    // The head of format 2 (no settle flag) is not read as this format.
    expect(() => decodeBilling([JSON.stringify(['1', [], 0])])).toThrow(/not a billing snapshot/);
  });
});
