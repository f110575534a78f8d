import type { InvoiceBody, InvoiceFinalized, RebuildLedgerReply } from '#contracts';
import { SnapshotSlot, type EventStore, type ProjectionCheckpoint } from '#event-store';
import { EVENT_STORE, LOGGER, SERVICE_CONFIG } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
// A turn of the event loop: the SQLite store and the snapshot codec are synchronous, and a lease must be renewed meanwhile.
import { setImmediate as turn } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  allInvoices,
  BILLING_EVENT_TYPES,
  BILLING_SNAPSHOT_FORMAT,
  canonicalJson,
  decodeBillingParts,
  encodeBillingParts,
  evolveBilling,
  initialBilling,
  intakeJobStreamId,
  invoiceOf,
  invoiceView,
  parseInvoiceId,
  readJobTeam,
  readSettledLines,
  storedCopyOf,
  unreadLosses,
  type BillingState,
  type FinalizedEntry,
} from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';

/** Events read per page while folding. */
const PAGE = 5_000;

/** The snapshot's name in the store's database (`projection_snapshot_ledger_billing`). */
export const BILLING_SNAPSHOT = 'ledger_billing';

/** A save waits this many times the last save's duration after it: at most about 1 % of the time on saves. */
const SNAPSHOT_SPACING = 100;

/** What a start did: folded `events` after `fromPosition` (0: no snapshot trusted) up to `position`. */
export interface BillingStart {
  fromPosition: bigint;
  position: bigint;
  events: number;
}

/**
 * Folds the store's billing events (price lists, agent events, NodeLost, JobSubmitted, the
 * ledger's own InvoiceFinalized / CreditNoteIssued) into the billing state, up to the store head
 * before each use, so every answer is the store as of one position and says which.
 *
 * One fold at a time: callers queue (`withState`), and what they read is the state at the head
 * they caught up to. The state lives in memory, and settles (decision 0046): an attempt whose line
 * is on a finalized invoice leaves it, and a finalized invoice's lines are read from its event
 * when asked for (`storedCopy`). It changes only by folding the store (the ledger's
 * own invoices and credit notes enter it when folded back), so it is always the exact fold of the
 * store up to `state.position`, and its snapshot (decision 0039) is that state written out: a
 * start loads the snapshot, if it can be trusted, and folds the events after it; the snapshot is
 * saved after that fold when one is due, as after any fold while the ledger runs. `rebuild`
 * folds from zero on demand and compares every invoice byte for byte.
 */
@Injectable()
export class BillingProjectionService implements OnModuleInit, OnApplicationShutdown {
  private state: BillingState = initialBilling({ settle: true });
  private queue: Promise<unknown> = Promise.resolve();
  /** The billing snapshot in the store's database; undefined on a store without one, or once the state could not be serialized. */
  private slot: SnapshotSlot | undefined;
  /** The stored snapshot's position as this process last knew it: the next save's compare and set. */
  private saved: ProjectionCheckpoint = { position: 0n, eventId: null };
  /** What the billing events folded since the last save weigh ({@link weightOf}), and when that save was. */
  private sinceSave = 0;
  private savedAt = Date.now();
  /** How long the last save took (encoding included) and when it ended: the next waits SNAPSHOT_SPACING times as long. */
  private lastSave = { ms: 0, endedAt: 0 };
  /** The save running, if any: one at a time, and shutdown waits for it. */
  private saving: Promise<void> | undefined;
  /** What this process's start did. */
  start: BillingStart | undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const started = Date.now();
    await this.exclusive(async () => {
      this.slot = await SnapshotSlot.open(this.store, BILLING_SNAPSHOT, BILLING_SNAPSHOT_FORMAT).catch((err: unknown) => {
        this.logger.warn({ err }, 'billing snapshot table could not be opened: folding from the start of the store, and no snapshot saved by this process');
        return undefined;
      });
      const loaded = await this.loadSnapshot();
      if (loaded) {
        this.state = loaded;
        // A snapshot is saved after such reads, but a state is never trusted to have had them.
        await readWhatItNeeds(this.store, this.state);
      }
      const fromPosition = this.state.position;
      const loadedMs = Date.now() - started;
      const { events, weight } = await foldStoreWeighed(this.store, this.state, await this.store.headPosition());
      this.start = { fromPosition, position: this.state.position, events };
      this.logger.info(
        { events, fromPosition: String(fromPosition), position: String(this.state.position), attempts: this.state.attempts.size, loadMs: loaded ? loadedMs : undefined, ms: Date.now() - started },
        loaded ? `billing projection loaded from its snapshot at position ${fromPosition} and the ${events} events after it folded` : 'billing projection folded from the store',
      );
      // Saved when due, as after any fold: a first start on a long store (many events, or a minute)
      // saves at once; a restart that folded a short tail does not rewrite the whole state for it
      // (at a million jobs that is hundreds of megabytes, seconds before the ledger serves). The tail
      // is saved with the next save; until then a start folds it again.
      this.sinceSave += weight;
      await this.saveSnapshot();
    });
    await this.saving;
  }

  /**
   * Waits for a save under way; starts none. What was folded since the last save is at most a save's
   * worth (GPUNET_LEDGER_SNAPSHOT_EVENTS, or GPUNET_LEDGER_SNAPSHOT_MS of events), which the next
   * start folds again in moments; saving it here meant encoding the whole state (over a minute at a
   * million jobs), past the stop timeout, and a process killed before it gave up its lease.
   */
  async onApplicationShutdown(): Promise<void> {
    await this.exclusive(async () => undefined);
    await this.saving;
  }

  /** The late-event cutoff in force, ms. */
  get cutoffMs(): number {
    return this.config.GPUNET_INVOICE_CUTOFF;
  }

  /**
   * The stored copy of a finalized invoice of `state` (undefined: not finalized there). The state
   * keeps no finalized lines (decision 0046): the copy is read from its InvoiceFinalized event.
   */
  async storedCopy(state: BillingState, invoiceId: string): Promise<InvoiceBody | undefined> {
    const entry = state.finalized.get(invoiceId);
    if (!entry) return undefined;
    return storedCopyOf(entry, entry.losses ? (await readFinalized(this.store, entry)).invoice : undefined);
  }

  /** Runs `fn` on the state caught up to the store head, with no fold in between. */
  withState<T>(fn: (state: BillingState) => T | Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      await this.catchUp(await this.store.headPosition());
      return fn(this.state);
    });
  }

  /**
   * Recomputes the projection from position 0 up to the current head and compares: every
   * invoice (with its credit notes) before and after, and every finalized invoice re-derived at
   * the position recorded on it against its stored copy. The fresh state replaces the old one.
   */
  rebuild(): Promise<RebuildLedgerReply> {
    return this.exclusive(async () => {
      const head = await this.store.headPosition();
      await this.catchUp(head);

      const started = Date.now();
      const fresh = initialBilling({ settle: true });
      let events = 0;
      const targets = [...this.state.finalized.values()]
        .map((f) => ({ entry: f, at: BigInt(f.data.invoice.derivedAtPosition) }))
        .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.entry.data.invoice.invoiceId < b.entry.data.invoice.invoiceId ? -1 : 1));
      const finalized: RebuildLedgerReply['finalized'] = [];
      for (const t of targets) {
        events += await foldStore(this.store, fresh, t.at);
        const stored = (await this.storedCopy(this.state, t.entry.data.invoice.invoiceId))!;
        const { team, month } = parseInvoiceId(stored.invoiceId);
        finalized.push({ invoiceId: stored.invoiceId, identical: canonicalJson(invoiceOf(fresh, team, month)) === canonicalJson(stored) });
      }
      events += await foldStore(this.store, fresh, head);
      const elapsedMs = Date.now() - started;
      const [before, after] = await this.digests([this.state, fresh]);

      const ids = [...new Set([...before.keys(), ...after.keys()])].sort();
      const invoices = ids.map((invoiceId) => {
        const b = before.get(invoiceId);
        const a = after.get(invoiceId);
        return { invoiceId, status: (a ?? b)!.status, before: b?.sha256 ?? '', after: a?.sha256 ?? '', identical: b !== undefined && a !== undefined && a.sha256 === b.sha256 };
      });
      this.state = fresh;
      const identical = invoices.every((i) => i.identical) && finalized.every((f) => f.identical);
      this.logger.info({ events, position: String(head), elapsedMs, invoices: invoices.length, identical }, 'billing projection rebuilt from zero');
      return {
        toPosition: head.toString(),
        events,
        elapsedMs,
        // An invoice missing on one side has no digest there: report it as the empty text's.
        invoices: invoices.map((i) => ({ ...i, before: i.before || EMPTY_SHA256, after: i.after || EMPTY_SHA256 })),
        finalized,
        identical,
      };
    });
  }

  /**
   * sha256 of the canonical JSON of every invoice view (with credit notes) of each state, by id:
   * each finalized one with its stored copy, read from the store once for all the states, one
   * invoice at a time (a month of a big team is a hundred thousand lines).
   */
  private async digests(states: readonly BillingState[]): Promise<Map<string, { status: 'draft' | 'finalized'; sha256: string }>[]> {
    const drafts = states.map((state) => allInvoices(state));
    const out = states.map(() => new Map<string, { status: 'draft' | 'finalized'; sha256: string }>());
    const ids = new Set(states.flatMap((state, i) => [...drafts[i]!.keys(), ...state.finalized.keys()]));
    for (const id of [...ids].sort()) {
      let read: { eventId: string; invoice: InvoiceBody } | undefined;
      for (const [i, state] of states.entries()) {
        const entry = state.finalized.get(id);
        if (!entry && !drafts[i]!.has(id)) continue;
        if (entry?.losses && read?.eventId !== entry.eventId) read = { eventId: entry.eventId, invoice: (await readFinalized(this.store, entry)).invoice };
        const view = invoiceView(state, id, this.cutoffMs, drafts[i], entry?.losses ? read!.invoice : undefined);
        out[i]!.set(id, { status: view.status, sha256: createHash('sha256').update(canonicalJson(view)).digest('hex') });
      }
    }
    return out;
  }

  /** Folds the state up to `head`, and saves the snapshot when one is due. Only inside `exclusive`. */
  private async catchUp(head: bigint): Promise<void> {
    this.sinceSave += (await foldStoreWeighed(this.store, this.state, head)).weight;
    await this.saveSnapshot();
  }

  /**
   * The stored snapshot as a state, if it can be trusted (the store holds its position, it is of
   * this format and reads as the fold up to that position), else undefined after a log line that
   * says why: the caller folds from zero. Knows the stored position either way, for the next save.
   */
  private async loadSnapshot(): Promise<BillingState | undefined> {
    if (!this.slot) return undefined;
    const ignored = (reason: string, detail: string, checkpoint: ProjectionCheckpoint) =>
      this.logger.warn({ reason, position: String(checkpoint.position), eventId: checkpoint.eventId }, `billing snapshot ignored, folding from the start of the store: ${detail}`);
    try {
      const snapshot = await this.slot.load((why) => ignored(why.reason, why.detail, why.checkpoint));
      this.saved = snapshot?.checkpoint ?? (await this.slot.checkpoint());
      if (!snapshot) return undefined;
      try {
        const steps = decodeBillingParts(snapshot.parts);
        let step = steps.next();
        for (; !step.done; step = steps.next()) await turn();
        const state = step.value;
        // Never trusted beyond its position: the state must be the fold up to exactly the event checked.
        if (state.position !== snapshot.checkpoint.position) throw new Error(`its state is the fold up to position ${state.position}, its row says ${snapshot.checkpoint.position}`);
        return state;
      } catch (err) {
        ignored('unreadable', (err as Error).message, snapshot.checkpoint);
        return undefined;
      }
    } catch (err) {
      // A snapshot is an optimization: a store that cannot read it still folds from zero.
      this.logger.warn({ err }, 'billing snapshot could not be read, folding from the start of the store');
      return undefined;
    }
  }

  /**
   * Saves the state as the snapshot when one is due: every GPUNET_LEDGER_SNAPSHOT_EVENTS billing
   * events folded (by {@link weightOf}), or GPUNET_LEDGER_SNAPSHOT_MS after the last save when any
   * was folded since, and at least SNAPSHOT_SPACING times the last save's duration after it
   * (encoding the state holds the fold: about 1 % of the time at most, however large the state).
   * Only inside `exclusive`: the state is encoded there, unchanging, a part at a time with a turn
   * of the event loop between parts (a million jobs' state is some hundreds of megabytes); the
   * write itself runs after, one at a time. A failed save is logged and costs only a longer fold
   * at the next start.
   */
  private async saveSnapshot(): Promise<void> {
    const slot = this.slot;
    // Nothing billing folded since the last save: the stored snapshot differs only in position, and
    // a start from it reads past the other events it skips (rewriting megabytes is not worth it).
    if (!slot || this.saving || this.sinceSave === 0 || this.state.position <= this.saved.position) return;
    const everyEvents = this.config.GPUNET_LEDGER_SNAPSHOT_EVENTS ?? 10_000;
    const everyMs = this.config.GPUNET_LEDGER_SNAPSHOT_MS ?? 60_000;
    const due = this.sinceSave >= everyEvents || (this.sinceSave > 0 && everyMs > 0 && Date.now() - this.savedAt >= everyMs);
    if (!due || Date.now() - this.lastSave.endedAt < SNAPSHOT_SPACING * this.lastSave.ms) return;
    const started = Date.now();
    const position = this.state.position;
    const parts: string[] = [];
    try {
      for (const part of encodeBillingParts(this.state)) {
        parts.push(part);
        await turn();
      }
    } catch (err) {
      // An item longer than one string can be (V8's longest is about 512 MiB): every later save fails alike.
      this.slot = undefined;
      this.logger.warn({ err, position: String(position), attempts: this.state.attempts.size }, 'billing snapshot not saved, and no more by this process: the state could not be serialized; starts fold the store from zero');
      return;
    }
    const chars = parts.reduce((n, p) => n + p.length, 0);
    const folded = this.sinceSave;
    this.sinceSave = 0;
    this.savedAt = started;
    const from = this.saved;
    this.saving = (async () => {
      // The snapshot names the event at its position, so a load can check the store holds it.
      const [at] = await this.store.readAll({ fromPosition: position - 1n, toPosition: position, maxCount: 1 });
      if (!at || at.position !== position) throw new Error(`the store has no event at position ${position}`);
      const to = { position, eventId: at.eventId };
      if (await slot.save(from, to, parts)) {
        this.saved = to;
        const ended = Date.now();
        this.lastSave = { ms: ended - started, endedAt: ended };
        this.logger.info({ position: String(position), chars, parts: parts.length, weight: folded, ms: ended - started }, 'billing snapshot saved');
      } else {
        // Another ledger moved it meanwhile (or it is already further): the next save starts from there.
        this.saved = await slot.checkpoint();
        this.lastSave = { ms: Date.now() - started, endedAt: Date.now() };
        this.logger.debug({ position: String(position), stored: String(this.saved.position) }, 'billing snapshot not saved: another writer moved it');
      }
    })()
      .catch((err: unknown) => {
        this.sinceSave += folded;
        this.lastSave = { ms: Date.now() - started, endedAt: Date.now() };
        this.logger.warn({ err, position: String(position) }, 'billing snapshot not saved; trying again later (a start folds more of the store meanwhile, nothing else)');
      })
      .finally(() => {
        this.saving = undefined;
      });
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** Folds the store's billing events after the state's position up to `to` (inclusive); returns how many. */
export async function foldStore(store: EventStore, state: BillingState, to: bigint): Promise<number> {
  return (await foldStoreWeighed(store, state, to)).events;
}

/**
 * What an event weighs towards the next save: the lines it carries, at least 1. A finalized invoice
 * or a credit note carries a line per attempt (125,000 in one event at a million jobs, tens of
 * megabytes): counted as one event, eight of them never made a save due, and every restart read
 * them again from the store (13 to 18 s) to fold them.
 */
function weightOf(event: { type: string; data: unknown }): number {
  if (event.type !== 'InvoiceFinalized' && event.type !== 'CreditNoteIssued') return 1;
  const d = event.data as { invoice?: { lines?: unknown[] }; lines?: unknown[] };
  return 1 + (d.invoice?.lines?.length ?? d.lines?.length ?? 0);
}

/** {@link foldStore}, also saying what the events folded weigh ({@link weightOf}). */
async function foldStoreWeighed(store: EventStore, state: BillingState, to: bigint): Promise<{ events: number; weight: number }> {
  let count = 0;
  let weight = 0;
  let lost = false;
  let from = state.position;
  while (from < to) {
    const page = await store.readAll({ fromPosition: from, toPosition: to, maxCount: PAGE, filter: { types: BILLING_EVENT_TYPES } });
    for (const e of page) {
      evolveBilling(state, e);
      weight += weightOf(e);
      if (e.type === 'NodeLost') lost = true;
    }
    count += page.length;
    if (page.length < PAGE) break;
    from = page[page.length - 1]!.position;
    // The SQLite store answers synchronously: without a turn of the event loop between pages a
    // fold of a large store holds it throughout, and the leader's lease goes unrenewed and lapses.
    await turn();
  }
  if (to > state.position) state.position = to;
  if (lost) await readWhatItNeeds(store, state);
  else await readTeams(store, state);
  return { events: count, weight };
}

/**
 * What a settling state reads from the store after a fold (decision 0046): the lines of settled
 * attempts a NodeLost named since (rare: a node lost after the invoice was; only a fold that
 * folded a NodeLost looks, this runs after every fold), and the teams of {@link readTeams}.
 */
async function readWhatItNeeds(store: EventStore, state: BillingState): Promise<void> {
  for (const entry of unreadLosses(state)) readSettledLines(entry, await readFinalized(store, entry));
  await readTeams(store, state);
}

/** An attempt with no team in its agent's metadata, of a job that left the state: its JobSubmitted, from the job's intake stream. */
async function readTeams(store: EventStore, state: BillingState): Promise<void> {
  for (const jobId of [...state.teamless]) readJobTeam(state, jobId, (await store.readStream(intakeJobStreamId(jobId), { maxCount: 1 }))[0]);
}

/** The InvoiceFinalized event of a finalized invoice, from the store at the entry's position. */
async function readFinalized(store: EventStore, entry: FinalizedEntry): Promise<InvoiceFinalized> {
  const [event] = await store.readAll({ fromPosition: entry.position - 1n, toPosition: entry.position, maxCount: 1 });
  if (!event || event.eventId !== entry.eventId || event.type !== 'InvoiceFinalized') {
    throw new Error(`the store holds no InvoiceFinalized ${entry.eventId} at position ${entry.position}, where ${entry.data.invoice.invoiceId} was finalized`);
  }
  return event.data as InvoiceFinalized;
}
