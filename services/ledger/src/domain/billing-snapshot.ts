/**
 * The billing state as snapshot text and back (decision 0039). Pure.
 *
 * The state is an exact fold of a store prefix (`state.position`), so its text is too. The text
 * is written in parts: a million jobs' state is longer than one string can be, and a part at a
 * time lets the ledger's event loop turn between parts. Format 3 writes a settling state's
 * settled line ids and finalized invoices without lines (decision 0046). Decoding gives back the same
 * state: every Map in the same order, every bigint, every event's data with the same keys in the
 * same order (PostgreSQL's jsonb and SQLite's JSON order them differently, and each is kept as
 * read), `team: undefined` where an event had none. Encoding a decoded state gives the same
 * parts, byte for byte.
 *
 * Compact, because one attempt line is kept per attempt and node ever held: objects of event data
 * are written as `[shape, ...values]` with each distinct key list written once (a table of
 * shapes), ISO times that `Date` writes back identically as epoch ms, the line id left out when it
 * is the attempt and node of the line's own data, and a string an attempt line repeats (its job
 * and attempt ids, written by ComputeHeld and JobFinished) as a reference to its first occurrence
 * in that line.
 */
import { openedBy, type BillingState, type FinalizedEntry, type Sourced } from './billing.js';

/**
 * Format of the snapshot text: bump it whenever the text or `BillingState` or `evolveBilling`
 * change shape or meaning. A snapshot of another format is ignored and the store folded from zero.
 */
export const BILLING_SNAPSHOT_FORMAT = 3;

/** A string an attempt line repeats is written as a reference when it is at least this long. */
const REF_MIN = 8;
const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Writes values of event data: objects as `[shape + 1, ...values]`, arrays as `[0, ...items]`. */
class Packer {
  readonly shapes: string[][] = [];
  private readonly shapeIds = new Map<string, number>();
  /** Strings of the current attempt line, by value: their index. Undefined: no references. */
  refs: Map<string, number> | undefined;

  value(v: unknown): Json {
    switch (typeof v) {
      case 'string': {
        if (this.refs && v.length >= REF_MIN) {
          const at = this.refs.get(v);
          if (at !== undefined) return { r: at };
          this.refs.set(v, this.refs.size);
        }
        return v;
      }
      case 'number':
        return Object.is(v, -0) ? { z: 0 } : Number.isFinite(v) ? v : { n: String(v) };
      case 'boolean':
        return v;
      case 'bigint':
        return { b: v.toString() };
      case 'undefined':
        return { u: 0 };
      case 'object': {
        if (v === null) return null;
        if (Array.isArray(v)) return [0, ...v.map((x) => this.value(x))];
        if (Object.getPrototypeOf(v) !== Object.prototype) throw new TypeError(`cannot encode a ${(v as object).constructor?.name ?? 'null-prototype object'} in billing data`);
        const keys = Object.keys(v);
        const sig = JSON.stringify(keys);
        let shape = this.shapeIds.get(sig);
        if (shape === undefined) {
          shape = this.shapes.length;
          this.shapes.push(keys);
          this.shapeIds.set(sig, shape);
        }
        const out: Json[] = [shape + 1];
        for (const k of keys) out.push(this.value((v as Record<string, unknown>)[k]));
        return out;
      }
      default:
        throw new TypeError(`cannot encode a ${typeof v} in billing data`);
    }
  }

  /** An ISO time as epoch ms when `Date` writes it back identically, else the text. */
  time(s: string): Json {
    if (ISO_MS.test(s)) {
      const ms = Date.parse(s);
      if (Number.isFinite(ms) && new Date(ms).toISOString() === s) return ms;
    }
    return this.value(s);
  }

  sourced(s: Sourced<unknown>): Json {
    const out: Json[] = [this.value(s.eventId), pos(s.position), this.time(s.recordedAt), this.value(s.data)];
    if (s.team !== undefined) out.push(this.value(s.team));
    return out;
  }
}

class Unpacker {
  refs: unknown[] | undefined;
  constructor(private readonly shapes: string[][]) {}

  value(j: unknown): unknown {
    if (typeof j === 'string') {
      if (this.refs && j.length >= REF_MIN) this.refs.push(j);
      return j;
    }
    if (j === null || typeof j !== 'object') return j;
    if (Array.isArray(j)) {
      const head = j[0] as number;
      if (head === 0) return j.slice(1).map((x) => this.value(x));
      const keys = this.shapes[head - 1];
      if (!keys || keys.length !== j.length - 1) throw new Error(`billing snapshot: bad object shape ${head}`);
      const out: Record<string, unknown> = {};
      for (let i = 0; i < keys.length; i++) out[keys[i]!] = this.value(j[i + 1]);
      return out;
    }
    const t = j as { r?: number; z?: 0; n?: string; b?: string; u?: 0 };
    if (t.r !== undefined) {
      if (!this.refs || t.r >= this.refs.length) throw new Error(`billing snapshot: reference ${t.r} to no string`);
      return this.refs[t.r];
    }
    if (t.z !== undefined) return -0;
    if (t.n !== undefined) return Number(t.n);
    if (t.b !== undefined) return BigInt(t.b);
    if (t.u !== undefined) return undefined;
    throw new Error('billing snapshot: unknown tagged value');
  }

  time(j: unknown): string {
    return typeof j === 'number' ? new Date(j).toISOString() : (this.value(j) as string);
  }

  sourced(j: unknown): Sourced<unknown> {
    if (!Array.isArray(j) || j.length < 4) throw new Error('billing snapshot: bad event');
    const eventId = this.value(j[0]) as string;
    const position = BigInt(j[1] as string | number);
    const recordedAt = this.time(j[2]);
    const data = this.value(j[3]);
    return { data, eventId, position, recordedAt, team: j.length > 4 ? (this.value(j[4]) as string) : undefined };
  }
}

/** A position as a JSON number while exact, else as text. */
function pos(p: bigint): number | string {
  return p <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(p) : p.toString();
}

const ATTEMPT_FIELDS = ['held', 'finished', 'lost'] as const;

/** The line id the attempt line's own data names, if it has data. */
function lineIdOfData(data: unknown): string | undefined {
  const d = data as { attemptId?: unknown; nodeId?: unknown } | undefined;
  return typeof d?.attemptId === 'string' && typeof d.nodeId === 'string' ? `${d.attemptId}@${d.nodeId}` : undefined;
}

/** A part is closed once it holds at least this many characters (2 MiB): under about 100 ms to encode or decode on this machine. */
export const BILLING_SNAPSHOT_PART_CHARS = 2 * 1024 * 1024;

/** The sections of the state, in the order they are written: an item is `[section, ...]`. */
const Section = { Price: 0, Attempt: 1, JobTeam: 2, Finalized: 3, CreditNotes: 4, Settled: 5, Teamless: 6 } as const;

/** Settled line ids are written in runs of one invoice, at most this many to an item. */
const SETTLED_RUN = 10_000;

/** Collects items (JSON texts) into parts of about `limit` characters. */
class Parts {
  private items: string[] = [];
  private chars = 0;
  constructor(private readonly limit: number) {}

  /** Adds an item; the part it closed, if it did. */
  add(item: string): string | undefined {
    this.items.push(item);
    this.chars += item.length + 1;
    return this.chars >= this.limit ? this.close() : undefined;
  }

  /** The open part, if it holds any item. */
  close(): string | undefined {
    if (this.items.length === 0) return undefined;
    const part = `[${this.items.join(',')}]`;
    this.items = [];
    this.chars = 0;
    return part;
  }
}

/**
 * The state as snapshot text, in parts of about `partChars` characters, yielded one at a time so
 * the caller can give its event loop a turn between them. Each part but the last is a JSON array
 * of items (`[section, ...values]`, in the order of the state's Maps); the last is the head:
 * the position, the table of object shapes the items use, and how many parts come before it.
 * One item (an attempt line, a finalized invoice) longer than a string can be (V8: about
 * 512 MiB) throws a RangeError; the caller folds from zero instead.
 */
export function* encodeBillingParts(state: BillingState, options: { partChars?: number } = {}): Generator<string, void, undefined> {
  const p = new Packer();
  const parts = new Parts(options.partChars ?? BILLING_SNAPSHOT_PART_CHARS);
  let before = 0;
  function* add(item: Json[]): Generator<string, void, undefined> {
    const part = parts.add(JSON.stringify(item));
    if (part !== undefined) {
      before++;
      yield part;
    }
  }
  for (const [version, v] of state.prices) yield* add([Section.Price, version, p.value(v)]);
  for (const a of state.attempts.values()) {
    p.refs = new Map();
    // Slots: line id (0 when its data names it), held, finished, lost, and the order of the three
    // when it is not that one (the object's keys as they were set).
    const order = Object.keys(a).filter((k) => k !== 'key').map((k) => ATTEMPT_FIELDS.indexOf(k as (typeof ATTEMPT_FIELDS)[number]));
    if (order.some((i) => i < 0)) throw new TypeError(`billing snapshot: attempt line ${a.key} has a field it cannot encode`);
    const own = lineIdOfData(a.held?.data ?? a.finished?.data);
    const out: Json[] = [own === a.key ? 0 : a.key, a.held ? p.sourced(a.held) : 0, a.finished ? p.sourced(a.finished) : 0, a.lost ? [a.lost.eventId, pos(a.lost.position)] : 0];
    const canonical = ATTEMPT_FIELDS.map((_, i) => i).filter((i) => order.includes(i));
    if (order.join() !== canonical.join()) out.push(order.join(''));
    else while (out.length > 1 && out[out.length - 1] === 0) out.pop();
    p.refs = undefined;
    yield* add([Section.Attempt, ...out]);
  }
  for (const [jobId, t] of state.jobTeams) yield* add([Section.JobTeam, jobId, t.team, t.eventId]);
  for (const [id, f] of state.finalized) {
    const item: Json[] = [Section.Finalized, id, f.eventId, pos(f.position), p.value(f.data), f.lines];
    if (f.losses) item.push([...f.losses].map(([lineId, l]) => [lineId, l.eventId, pos(l.position), ...(l.line !== undefined ? [l.index!, p.value(l.line)] : [])]));
    yield* add(item);
  }
  // Runs of line ids of one invoice, in the order they settled (an invoice's lines settle together).
  let run: { invoiceId: string; lineIds: string[] } | undefined;
  for (const [lineId, invoiceId] of state.settled) {
    if (run && (run.invoiceId !== invoiceId || run.lineIds.length >= SETTLED_RUN)) {
      yield* add([Section.Settled, run.invoiceId, run.lineIds]);
      run = undefined;
    }
    run ??= { invoiceId, lineIds: [] };
    run.lineIds.push(lineId);
  }
  if (run) yield* add([Section.Settled, run.invoiceId, run.lineIds]);
  if (state.teamless.size > 0) yield* add([Section.Teamless, [...state.teamless]]);
  for (const [id, notes] of state.creditNotes) yield* add([Section.CreditNotes, id, notes.map((n) => [n.eventId, pos(n.position), p.value(n.data)])]);
  const last = parts.close();
  if (last !== undefined) {
    before++;
    yield last;
  }
  yield JSON.stringify([state.position.toString(), p.shapes, before, state.settle ? 1 : 0]);
}

/** {@link encodeBillingParts}, all at once. */
export function encodeBilling(state: BillingState, options: { partChars?: number } = {}): string[] {
  return [...encodeBillingParts(state, options)];
}

/**
 * A state from the parts {@link encodeBillingParts} wrote (of {@link BILLING_SNAPSHOT_FORMAT}),
 * yielding after each part so the caller can give its event loop a turn; its return value is the
 * state. Throws when they are not such parts.
 */
export function* decodeBillingParts(parts: readonly string[]): Generator<void, BillingState, undefined> {
  const head = parts.length > 0 ? (JSON.parse(parts[parts.length - 1]!) as unknown) : undefined;
  if (!Array.isArray(head) || head.length !== 4 || typeof head[0] !== 'string' || !Array.isArray(head[1]) || typeof head[2] !== 'number') throw new Error('not a billing snapshot');
  const [position, shapes, before, settle] = head as [string, string[][], number, number];
  if (before !== parts.length - 1) throw new Error(`billing snapshot: its head counts ${before} parts before it, there are ${parts.length - 1}`);
  const u = new Unpacker(shapes);
  const state: BillingState = { position: BigInt(position), settle: settle === 1, settled: new Map(), teamless: new Set(), openAttempts: new Map(), prices: new Map(), attempts: new Map(), jobTeams: new Map(), finalized: new Map(), creditNotes: new Map() };
  for (let i = 0; i < before; i++) {
    const items = JSON.parse(parts[i]!) as unknown;
    if (!Array.isArray(items)) throw new Error(`billing snapshot: part ${i} is not a list of items`);
    for (const item of items as Json[][]) decodeItem(state, u, item);
    yield;
  }
  if (state.settle) {
    for (const facts of state.attempts.values()) {
      const jobId = openedBy(facts);
      if (jobId !== undefined) state.openAttempts.set(jobId, (state.openAttempts.get(jobId) ?? 0) + 1);
    }
  }
  return state;
}

/** {@link decodeBillingParts}, all at once. */
export function decodeBilling(parts: readonly string[]): BillingState {
  const steps = decodeBillingParts(parts);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

function decodeItem(state: BillingState, u: Unpacker, item: Json[]): void {
  switch (item[0]) {
    case Section.Price:
      state.prices.set(item[1] as number, u.value(item[2]) as never);
      return;
    case Section.Attempt: {
      u.refs = [];
      const [key, held, finished, lost, order] = item.slice(1) as [string | 0, Json | undefined, Json | undefined, [string, number | string] | 0 | undefined, string | undefined];
      const fields: Record<string, unknown> = {};
      if (held) fields.held = u.sourced(held);
      if (finished) fields.finished = u.sourced(finished);
      if (lost) fields.lost = { eventId: lost[0], position: BigInt(lost[1]) };
      const lineId = key === 0 ? lineIdOfData((fields.held as Sourced<unknown> | undefined)?.data ?? (fields.finished as Sourced<unknown> | undefined)?.data) : key;
      if (lineId === undefined) throw new Error('billing snapshot: an attempt line without its id');
      const facts: Record<string, unknown> = { key: lineId };
      const names = order === undefined ? ATTEMPT_FIELDS.filter((f) => f in fields) : [...order].map((i) => ATTEMPT_FIELDS[Number(i)]!);
      for (const f of names) facts[f] = fields[f];
      state.attempts.set(lineId, facts as never);
      u.refs = undefined;
      return;
    }
    case Section.JobTeam:
      state.jobTeams.set(item[1] as string, { team: item[2] as string, eventId: item[3] as string });
      return;
    case Section.Finalized: {
      const [id, eventId, at, data, lines, losses] = item.slice(1) as [string, string, number | string, Json, number, [string, string, number | string, number?, Json?][] | undefined];
      const entry: FinalizedEntry = { data: u.value(data) as never, eventId, position: BigInt(at), lines };
      if (losses) {
        entry.losses = new Map(
          losses.map(([lineId, lossEventId, lossAt, index, line]) => [lineId, { eventId: lossEventId, position: BigInt(lossAt), ...(line !== undefined ? { line: u.value(line) as never, index: index! } : {}) }]),
        );
      }
      state.finalized.set(id, entry);
      return;
    }
    case Section.Settled: {
      const [invoiceId, lineIds] = item.slice(1) as [string, string[]];
      for (const lineId of lineIds) state.settled.set(lineId, invoiceId);
      return;
    }
    case Section.Teamless: {
      for (const jobId of item[1] as string[]) state.teamless.add(jobId);
      return;
    }
    case Section.CreditNotes: {
      const [id, notes] = item.slice(1) as [string, [string, number | string, Json][]];
      state.creditNotes.set(
        id,
        notes.map(([eventId, at, data]) => ({ data: u.value(data) as never, eventId, position: BigInt(at) })),
      );
      return;
    }
    default:
      throw new Error(`billing snapshot: unknown section ${JSON.stringify(item[0])}`);
  }
}
