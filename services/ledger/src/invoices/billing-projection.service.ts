import type { RebuildLedgerReply } from '#contracts';
import type { EventStore } from '#event-store';
import { EVENT_STORE, LOGGER, SERVICE_CONFIG } from '#service-kit';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  allInvoiceViews,
  BILLING_EVENT_TYPES,
  canonicalJson,
  evolveBilling,
  initialBilling,
  invoiceOf,
  parseInvoiceId,
  type BillingState,
} from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';

/** Events read per page while folding. */
const PAGE = 5_000;

/**
 * Folds the store's billing events (price lists, agent events, NodeLost, JobSubmitted, the
 * ledger's own InvoiceFinalized / CreditNoteIssued) into the billing state, up to the store head
 * before each use, so every answer is the store as of one position and says which.
 *
 * One fold at a time: callers queue (`withState`), and what they read is the state at the head
 * they caught up to. The state lives in memory and is folded from zero at start; `rebuild`
 * does that again on demand and compares every invoice byte for byte.
 */
@Injectable()
export class BillingProjectionService implements OnModuleInit {
  private state: BillingState = initialBilling();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const started = Date.now();
    const events = await this.exclusive(async () => foldStore(this.store, this.state, await this.store.headPosition()));
    this.logger.info({ events, position: String(this.state.position), ms: Date.now() - started }, 'billing projection folded from the store');
  }

  /** The late-event cutoff in force, ms. */
  get cutoffMs(): number {
    return this.config.GPUNET_INVOICE_CUTOFF;
  }

  /** Runs `fn` on the state caught up to the store head, with no fold in between. */
  withState<T>(fn: (state: BillingState) => T | Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      await foldStore(this.store, this.state, await this.store.headPosition());
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
      await foldStore(this.store, this.state, head);
      const before = digests(this.state, this.cutoffMs);

      const started = Date.now();
      const fresh = initialBilling();
      let events = 0;
      const targets = [...this.state.finalized.values()]
        .map((f) => ({ invoice: f.data.invoice, at: BigInt(f.data.invoice.derivedAtPosition) }))
        .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.invoice.invoiceId < b.invoice.invoiceId ? -1 : 1));
      const finalized: RebuildLedgerReply['finalized'] = [];
      for (const t of targets) {
        events += await foldStore(this.store, fresh, t.at);
        const { team, month } = parseInvoiceId(t.invoice.invoiceId);
        finalized.push({ invoiceId: t.invoice.invoiceId, identical: canonicalJson(invoiceOf(fresh, team, month)) === canonicalJson(t.invoice) });
      }
      events += await foldStore(this.store, fresh, head);
      const elapsedMs = Date.now() - started;
      const after = digests(fresh, this.cutoffMs);

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

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

const EMPTY_SHA256 = createHash('sha256').update('').digest('hex');

/** sha256 of the canonical JSON of every invoice view (with credit notes), by id. */
function digests(state: BillingState, cutoffMs: number): Map<string, { status: 'draft' | 'finalized'; sha256: string }> {
  const out = new Map<string, { status: 'draft' | 'finalized'; sha256: string }>();
  for (const [id, view] of allInvoiceViews(state, cutoffMs)) {
    out.set(id, { status: view.status, sha256: createHash('sha256').update(canonicalJson(view)).digest('hex') });
  }
  return out;
}

/** Folds the store's billing events after the state's position up to `to` (inclusive); returns how many. */
export async function foldStore(store: EventStore, state: BillingState, to: bigint): Promise<number> {
  let count = 0;
  let from = state.position;
  while (from < to) {
    const page = await store.readAll({ fromPosition: from, toPosition: to, maxCount: PAGE, filter: { types: BILLING_EVENT_TYPES } });
    for (const e of page) evolveBilling(state, e);
    count += page.length;
    if (page.length < PAGE) break;
    from = page[page.length - 1]!.position;
    // The SQLite store answers synchronously: without a turn of the event loop between pages a
    // fold of a large store holds it throughout, and the leader's lease goes unrenewed and lapses.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (to > state.position) state.position = to;
  return count;
}
