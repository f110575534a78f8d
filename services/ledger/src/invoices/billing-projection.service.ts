import type { InvoiceBody, InvoiceFinalized, RebuildLedgerReply } from '#contracts';
import { projectionTablesOf, type EventStore } from '#event-store';
import { EVENT_STORE, LOGGER, SERVICE_CONFIG } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
// A turn of the event loop: the SQLite store answers synchronously, and a lease must be renewed meanwhile.
import { setImmediate as turn } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  allInvoices,
  BILLING_EVENT_TYPES,
  billingRowKeys,
  billingRows,
  canonicalJson,
  dropBillingRows,
  evolveBilling,
  initialBilling,
  intakeJobStreamId,
  invoiceOf,
  invoiceView,
  parseInvoiceId,
  readJobTeam,
  readSettledLines,
  storedCopyOf,
  takeBillingRows,
  unreadLosses,
  unreadLossesOf,
  type BillingState,
  type FinalizedEntry,
} from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';
import { BillingTable, BillingTableMovedError, type LinesNeeded } from './billing-table.js';

/** Events read per page while folding. */
const PAGE = 5_000;

/** Folds that find the table moved by another ledger without it moving on, one after the other, before one gives up (each loads the headers again). */
const MOVED_RETRIES = 5;

/** What a start did: folded `events` after `fromPosition` (0: the table was empty) up to `position`. */
export interface BillingStart {
  fromPosition: bigint;
  position: bigint;
  events: number;
}

/** A view of the state with the open lines a derivation needs (decision 0053); the state itself when it keeps its lines in memory. */
export type BillingLines = (needed: LinesNeeded) => Promise<BillingState>;

/** The projection of the billing snapshot (decision 0039) that earlier releases kept: dropped at start. */
export const RETIRED_BILLING_SNAPSHOT = 'snapshot_ledger_billing';

/**
 * Folds the store's billing events (price lists, agent events, NodeLost, JobSubmitted, the
 * ledger's own InvoiceFinalized / CreditNoteIssued) into the billing state, up to the store head
 * before each use, so every answer is the store as of one position and says which.
 *
 * One fold at a time: callers queue (`withState`), and what they read is the state at the head
 * they caught up to. The state is kept in the store's database (decision 0053): the table
 * `projection_billing_lines` holds every line, settled or open, every job's team and the headers
 * (price lists, finalized invoices, credit notes), at the position of the last event folded into
 * it. Memory holds the headers only. A page of events is folded with the rows it names read
 * first and written after, with the new position, in one transaction; a derivation reads the
 * open lines it needs (`lines`). A start reads the headers and folds the events after the
 * table's position. `rebuild` folds from zero in memory and compares every invoice byte for byte.
 * A store without projection tables (a test double) keeps the whole state in memory (decision
 * 0046), folded from zero at each start.
 */
@Injectable()
export class BillingProjectionService implements OnModuleInit, OnApplicationShutdown {
  private state: BillingState = initialBilling({ settle: true });
  private queue: Promise<unknown> = Promise.resolve();
  /** The state's rows in the store's database; undefined on a store without projection tables. */
  private table: BillingTable | undefined;
  /** Why the state in memory is not the table's (a fold failed and its headers could not be read again): read them before the next fold. */
  private stale: Error | undefined;
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
      const host = projectionTablesOf(this.store);
      if (host) {
        this.table = await BillingTable.open(this.store, host, (held, found) =>
          this.logger.warn({ position: String(held.position), eventId: held.eventId, found }, 'the billing table holds a position whose event this store does not hold; folding it again from the start of the store'),
        );
        this.state = await this.table.load();
        // The billing snapshot the table replaced (decisions 0039, 0053): nothing reads it any more.
        if (await host.dropProjectionTable(RETIRED_BILLING_SNAPSHOT)) {
          this.logger.info({ table: `projection_${RETIRED_BILLING_SNAPSHOT}` }, 'the billing snapshot the billing table replaced was dropped (decision 0053)');
        }
      }
      const fromPosition = this.state.position;
      const loadedMs = Date.now() - started;
      const events = await this.catchUp(await this.store.headPosition());
      this.start = { fromPosition, position: this.state.position, events };
      this.logger.info(
        { events, fromPosition: String(fromPosition), position: String(this.state.position), invoices: this.state.finalized.size, loadMs: this.table ? loadedMs : undefined, ms: Date.now() - started },
        this.table ? `billing projection loaded from its table at position ${fromPosition} and the ${events} events after it folded` : 'billing projection folded from the store (it keeps no table)',
      );
    });
  }

  /** Waits for the fold under way: every page folded is already in the table. */
  async onApplicationShutdown(): Promise<void> {
    await this.exclusive(async () => undefined);
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

  /**
   * Runs `fn` on the state caught up to the store head, with no fold in between. The state holds
   * the headers: `lines` gives a view of it with the open lines a derivation needs.
   */
  withState<T>(fn: (state: BillingState, lines: BillingLines) => T | Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      for (let tries = 0; ; tries++) {
        await this.catchUp(await this.store.headPosition());
        try {
          return await fn(this.state, (needed) => this.view(needed));
        } catch (err) {
          if (!(err instanceof BillingTableMovedError) || tries >= MOVED_RETRIES) throw err;
          await this.reload(err);
        }
      }
    });
  }

  /**
   * Recomputes the projection from position 0 up to the current head, in memory, and compares:
   * every invoice (with its credit notes) before and after, and every finalized invoice
   * re-derived at the position recorded on it against its stored copy. When any differs, the
   * table is emptied and folded again from zero.
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
      const [before, after] = await this.digests([await this.view({}), fresh]);

      const ids = [...new Set([...before.keys(), ...after.keys()])].sort();
      const invoices = ids.map((invoiceId) => {
        const b = before.get(invoiceId);
        const a = after.get(invoiceId);
        return { invoiceId, status: (a ?? b)!.status, before: b?.sha256 ?? '', after: a?.sha256 ?? '', identical: b !== undefined && a !== undefined && a.sha256 === b.sha256 };
      });
      const identical = invoices.every((i) => i.identical) && finalized.every((f) => f.identical);
      if (!this.table) this.state = fresh;
      else if (!identical) {
        // The table is not the fold of the store: fold it again from zero.
        await this.table.reset();
        this.state = await this.table.load();
        await this.catchUp(head);
      }
      this.logger.info({ events, position: String(head), elapsedMs, invoices: invoices.length, identical }, identical ? 'billing projection rebuilt from zero: the same' : 'billing projection rebuilt from zero: it differed, and its table was folded again');
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

  /** The state with the open lines `needed` (the state itself in memory). Only inside `exclusive`. */
  private view(needed: LinesNeeded): Promise<BillingState> {
    return this.table ? this.table.view(this.state, needed) : Promise.resolve(this.state);
  }

  /**
   * Folds the state up to `head` (into the table, page by page), loading the headers again and
   * going on when another ledger moved the table meanwhile. Returns the events folded. Only
   * inside `exclusive`.
   */
  private async catchUp(head: bigint): Promise<number> {
    if (!this.table) return foldStore(this.store, this.state, head);
    if (this.stale) await this.reload(this.stale);
    for (let tries = 0; ; tries++) {
      const from = this.table.position;
      try {
        return await foldIntoTable(this.store, this.table, this.state, head);
      } catch (err) {
        // A page half folded is in memory only: the headers again, from where the table is.
        this.stale = err as Error;
        await this.reload(this.stale);
        if (!(err instanceof BillingTableMovedError)) throw err;
        // Two ledgers folding a long tail at once take turns: give up only when the table does not move on.
        if (this.table.position > from) tries = 0;
        else if (tries >= MOVED_RETRIES) throw err;
      }
    }
  }

  /** The table moved under this process, or a fold failed half way: the headers again, at the table's position. */
  private async reload(err: Error): Promise<void> {
    const before = this.state.position;
    this.state = await this.table!.load();
    this.stale = undefined;
    this.logger.info({ reason: err.message, from: String(before), position: String(this.state.position) }, err instanceof BillingTableMovedError ? 'billing table moved by another ledger: its headers read again' : 'billing fold failed: its headers read again from the table');
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * Folds the store's billing events after the state's position up to `to` (inclusive) into a
 * state in the table (decision 0053): per page, the rows it names read, the events folded, the
 * lines of settled attempts newly lost read from their invoices, and the rows written with the
 * position of its last event in one transaction; then the page's rows leave memory.
 */
export async function foldIntoTable(store: EventStore, table: BillingTable, state: BillingState, to: bigint): Promise<number> {
  let count = 0;
  while (state.position < to) {
    const page = await store.readAll({ fromPosition: state.position, toPosition: to, maxCount: PAGE, filter: { types: BILLING_EVENT_TYPES } });
    if (page.length === 0) break;
    const last = page[page.length - 1]!;
    const { read, dirty } = billingRowKeys(state, page);
    try {
      takeBillingRows(state, await table.rows(read));
      for (const e of page) evolveBilling(state, e);
      dirty.push(...unreadLossesOf(state));
      for (const entry of unreadLosses(state)) readSettledLines(entry, await readFinalized(store, entry));
      await table.commit({ position: last.position, eventId: last.eventId }, billingRows(state, dirty));
    } finally {
      dropBillingRows(state);
    }
    count += page.length;
    if (page.length < PAGE) break;
    // The SQLite store answers synchronously: a turn of the event loop between pages lets a lease be renewed.
    await turn();
  }
  if (to > state.position) state.position = to;
  return count;
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** Folds the store's billing events after the state's position up to `to` (inclusive) into a state in memory; returns how many. */
export async function foldStore(store: EventStore, state: BillingState, to: bigint): Promise<number> {
  let count = 0;
  let lost = false;
  let from = state.position;
  while (from < to) {
    const page = await store.readAll({ fromPosition: from, toPosition: to, maxCount: PAGE, filter: { types: BILLING_EVENT_TYPES } });
    for (const e of page) {
      evolveBilling(state, e);
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
  return count;
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
