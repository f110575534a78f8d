/**
 * The billing state as rows of the store's database (decision 0053). Pure: what a page of events
 * needs read, the state's rows as written, and rows read back into a state.
 *
 * One row per key, each a JSON document that says its own kind:
 * - `l:<lineId>`: an attempt on a node, open (`a`: its ComputeHeld, JobFinished and NodeLost
 *   facts) or settled (`s`: the finalized invoice its line is on). Columns: `team` (of its agent
 *   events' metadata; '' when they name none and the job's row tells it) and `month` (the month
 *   it finished in; null before it finished), so a derivation reads only the rows whose lines can
 *   fall on the invoices it derives.
 * - `j:<jobId>`: the team of intake's JobSubmitted (first wins), kept for ever.
 * - `p:<version>`, `f:<invoiceId>`, `c:<invoiceId>`: a price list version, a finalized invoice
 *   (its header without lines, and the losses of its lines), the credit notes of an invoice. These
 *   are few (per invoice, not per job): a start reads them all.
 *
 * The rows and the table's position are written in one transaction after each page folded, so
 * the table is always the exact fold of the store up to its position, as the snapshot it replaces
 * was (decision 0039).
 */
import type { CreditNoteIssued, InvoiceFinalized, InvoiceLine, NodeLost } from '#contracts';
import { initialBilling, lineIdOf, unreadLosses, type AttemptFacts, type BillingState, type FinalizedEntry, type PricedVersion, type SettledLoss, type Sourced, type StoredEvent } from './billing.js';
import { monthOf } from './months.js';

/** A row as the projection table takes it (`values`: its `kind`, `team` and `month` columns). */
export interface BillingRow {
  key: string;
  doc: string;
  values: { kind: string; team: string | null; month: string | null };
}

/** Kinds of the rows a start reads whole: few, per invoice or price list. */
export const BILLING_HEADER_KINDS = ['p', 'f', 'c'] as const;

const lineKey = (lineId: string) => `l:${lineId}`;
export const jobKey = (jobId: string) => `j:${jobId}`;

type SourcedDoc = { e: string; p: string; r: string; d: unknown; t?: string };
type LossDoc = { e: string; p: string; line?: InvoiceLine; i?: number };
type RowDoc =
  | { k: 'a'; h?: SourcedDoc; f?: SourcedDoc; l?: { e: string; p: string } }
  | { k: 's'; i: string }
  | { k: 'j'; t: string; e: string }
  | { k: 'p'; v: Omit<PricedVersion, 'position'> & { position: string } }
  | { k: 'f'; d: InvoiceFinalized; e: string; p: string; n: number; x?: [string, LossDoc][] }
  | { k: 'c'; n: { d: CreditNoteIssued; e: string; p: string }[] };

function sourcedDoc(s: Sourced<unknown>): SourcedDoc {
  const doc: SourcedDoc = { e: s.eventId, p: s.position.toString(), r: s.recordedAt, d: s.data };
  if (s.team !== undefined) doc.t = s.team;
  return doc;
}

function sourcedOf<T>(doc: SourcedDoc): Sourced<T> {
  return { data: doc.d as T, eventId: doc.e, position: BigInt(doc.p), recordedAt: doc.r, team: doc.t };
}

/** The month an attempt finished in; '' when its time does not parse (the derivation then fails on it, as it would have). */
function finishedMonth(facts: AttemptFacts): string | null {
  if (!facts.finished) return null;
  const ms = Date.parse(facts.finished.data.finishedAt);
  return Number.isFinite(ms) ? monthOf(ms) : '';
}

function attemptRow(facts: AttemptFacts): BillingRow {
  const doc: RowDoc = { k: 'a' };
  if (facts.held) doc.h = sourcedDoc(facts.held);
  if (facts.finished) doc.f = sourcedDoc(facts.finished);
  if (facts.lost) doc.l = { e: facts.lost.eventId, p: facts.lost.position.toString() };
  return { key: lineKey(facts.key), doc: JSON.stringify(doc), values: { kind: 'a', team: facts.held?.team ?? facts.finished?.team ?? '', month: finishedMonth(facts) } };
}

function entryDoc(entry: FinalizedEntry): RowDoc {
  const doc: RowDoc = { k: 'f', d: entry.data, e: entry.eventId, p: entry.position.toString(), n: entry.lines };
  if (entry.losses) {
    doc.x = [...entry.losses].map(([lineId, loss]) => {
      const l: LossDoc = { e: loss.eventId, p: loss.position.toString() };
      if (loss.line !== undefined) l.line = loss.line;
      if (loss.index !== undefined) l.i = loss.index;
      return [lineId, l];
    });
  }
  return doc;
}

const header = (key: string, kind: string, doc: RowDoc): BillingRow => ({ key, doc: JSON.stringify(doc), values: { kind, team: null, month: null } });

/**
 * The rows a folded page changed: every line and job the page read ({@link billingRowKeys}, all
 * of the state's `attempts`, `settled` and `jobTeams` while it is in the table), and the header
 * rows `dirty` names.
 */
export function billingRows(state: BillingState, dirty: Iterable<string>): BillingRow[] {
  const rows: BillingRow[] = [];
  for (const facts of state.attempts.values()) rows.push(attemptRow(facts));
  for (const [lineId, invoiceId] of state.settled) rows.push({ key: lineKey(lineId), doc: JSON.stringify({ k: 's', i: invoiceId } satisfies RowDoc), values: { kind: 's', team: null, month: null } });
  for (const [jobId, t] of state.jobTeams) rows.push({ key: jobKey(jobId), doc: JSON.stringify({ k: 'j', t: t.team, e: t.eventId } satisfies RowDoc), values: { kind: 'j', team: t.team, month: null } });
  for (const key of new Set(dirty)) {
    const id = key.slice(2);
    switch (key[0]) {
      case 'p': {
        const v = state.prices.get(Number(id));
        if (v) rows.push(header(key, 'p', { k: 'p', v: { ...v, position: v.position.toString() } }));
        break;
      }
      case 'f': {
        const entry = state.finalized.get(id);
        if (entry) rows.push(header(key, 'f', entryDoc(entry)));
        break;
      }
      case 'c': {
        const notes = state.creditNotes.get(id);
        if (notes) rows.push(header(key, 'c', { k: 'c', n: notes.map((n) => ({ d: n.data, e: n.eventId, p: n.position.toString() })) }));
        break;
      }
      default:
        throw new Error(`billing rows: no header row kind ${JSON.stringify(key)}`);
    }
  }
  return rows;
}

/**
 * What folding `page` into `state` reads and writes, by row key: the lines its agent events,
 * NodeLost events and finalized invoices name, and the jobs its JobSubmitted events name (`read`,
 * to load before folding); and the header rows it changes (`dirty`, after). A NodeLost of a
 * settled line changes its invoice's row: that is known only once its row is read, so
 * {@link unreadLossesOf} names those.
 */
export function billingRowKeys(state: BillingState, page: readonly StoredEvent[]): { read: string[]; dirty: string[] } {
  const read = new Set<string>();
  const dirty: string[] = [];
  for (const e of page) {
    if (e.position <= state.position) continue;
    switch (e.type) {
      case 'ComputeHeld':
      case 'JobFinished': {
        const d = e.data as { attemptId: string; nodeId: string };
        read.add(lineKey(lineIdOf(d.attemptId, d.nodeId)));
        break;
      }
      case 'NodeLost': {
        const d = e.data as NodeLost;
        for (const a of d.affectedAttempts) read.add(lineKey(lineIdOf(a.attemptId, d.nodeId)));
        break;
      }
      case 'JobSubmitted':
        read.add(jobKey((e.data as { jobId: string }).jobId));
        break;
      case 'PriceListPublished':
        dirty.push(`p:${(e.data as { version: number }).version}`);
        break;
      case 'InvoiceFinalized': {
        const d = e.data as InvoiceFinalized;
        if (state.finalized.has(d.invoice.invoiceId)) break;
        for (const line of d.invoice.lines) read.add(lineKey(line.lineId));
        dirty.push(`f:${d.invoice.invoiceId}`);
        break;
      }
      case 'CreditNoteIssued':
        dirty.push(`c:${(e.data as CreditNoteIssued).invoiceId}`);
        break;
    }
  }
  return { read: [...read], dirty };
}

/**
 * The invoice rows a page's NodeLost events changed: a loss of a settled line is kept on its
 * invoice, without the line until it is read from the invoice's event (`readSettledLines`), so
 * the invoices with a loss not yet read are those (named before reading).
 */
export function unreadLossesOf(state: BillingState): string[] {
  return unreadLosses(state).map((entry) => `f:${entry.data.invoice.invoiceId}`);
}

/** Puts rows read (by key) into the state: lines into `attempts` or `settled`, jobs into `jobTeams`, headers into theirs. */
export function takeBillingRows(state: BillingState, rows: Iterable<{ key: string; doc: string }>): void {
  for (const { key, doc: text } of rows) {
    const doc = JSON.parse(text) as RowDoc;
    const id = key.slice(2);
    switch (doc.k) {
      case 'a': {
        const facts: AttemptFacts = { key: id };
        if (doc.h) facts.held = sourcedOf(doc.h);
        if (doc.f) facts.finished = sourcedOf(doc.f);
        if (doc.l) facts.lost = { eventId: doc.l.e, position: BigInt(doc.l.p) };
        state.attempts.set(id, facts);
        break;
      }
      case 's':
        state.settled.set(id, doc.i);
        break;
      case 'j':
        state.jobTeams.set(id, { team: doc.t, eventId: doc.e });
        break;
      case 'p':
        state.prices.set(doc.v.version, { ...doc.v, position: BigInt(doc.v.position) });
        break;
      case 'f': {
        const entry: FinalizedEntry = { data: doc.d, eventId: doc.e, position: BigInt(doc.p), lines: doc.n };
        if (doc.x) {
          entry.losses = new Map(
            doc.x.map(([lineId, l]) => {
              const loss: SettledLoss = { eventId: l.e, position: BigInt(l.p) };
              if (l.line !== undefined) loss.line = l.line;
              if (l.i !== undefined) loss.index = l.i;
              return [lineId, loss];
            }),
          );
        }
        state.finalized.set(id, entry);
        break;
      }
      case 'c':
        state.creditNotes.set(
          id,
          doc.n.map((n) => ({ data: n.d, eventId: n.e, position: BigInt(n.p) })),
        );
        break;
      default:
        throw new Error(`billing row ${key}: unknown kind ${JSON.stringify((doc as { k?: unknown }).k)}`);
    }
  }
}

/** A state in the table at `position`, from its header rows. */
export function billingFromRows(position: bigint, rows: Iterable<{ key: string; doc: string }>): BillingState {
  const state = initialBilling({ inTable: true });
  takeBillingRows(state, rows);
  state.position = position;
  return state;
}

/** Empties the rows of a page (after they were written): the state holds only its headers again. */
export function dropBillingRows(state: BillingState): void {
  state.attempts.clear();
  state.settled.clear();
  state.jobTeams.clear();
}

/**
 * A view of `state` for a derivation: its headers with the lines `rows` hold (the teams of their
 * jobs taken in after, {@link teamlessJobs}). The pure derivations (`invoiceOf`, `allInvoices`,
 * `decideInvoices`) read it as they read a state in memory.
 */
export function billingView(state: BillingState, rows: Iterable<{ key: string; doc: string }>): BillingState {
  const view: BillingState = { ...state, attempts: new Map(), settled: new Map(), jobTeams: new Map() };
  takeBillingRows(view, rows);
  return view;
}

/** Jobs of the view's lines whose agent events name no team: their `j:` rows tell it. */
export function teamlessJobs(view: BillingState): string[] {
  const jobs = new Set<string>();
  for (const f of view.attempts.values()) {
    if (f.held?.team !== undefined || f.finished?.team !== undefined) continue;
    const jobId = f.held?.data.jobId ?? f.finished?.data.jobId;
    if (jobId !== undefined) jobs.add(jobId);
  }
  return [...jobs];
}
