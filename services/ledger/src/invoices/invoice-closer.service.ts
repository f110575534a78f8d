import { WrongExpectedVersionError } from '#event-store';
import { CLOCK, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Logger } from 'pino';
import { decideInvoices, invoiceStreamId, monthOf } from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';
import { BillingProjectionService } from './billing-projection.service.js';

/**
 * Finalizes invoices once their month ended more than the late-event cutoff ago, and issues
 * credit notes for finalized lines that turned out waived, every `GPUNET_INVOICE_CHECK_INTERVAL`
 * (and once at start). Decisions come from the pure `decideInvoices` over the projection at the
 * store head; each is appended to `ledger-invoice-<team>-<YYYY-MM>` with an expected revision, so
 * two ledgers (or a restart) never finalize twice or credit twice: the loser re-reads and finds
 * nothing left to do.
 */
@Injectable()
export class InvoiceCloserService implements OnApplicationBootstrap, OnModuleDestroy {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /**
   * What the last pass that decided nothing saw: the store position, and the latest month whose
   * invoices were past their cutoff (`monthOf(now − cutoff)`). While neither moves, a pass would
   * decide nothing again, and deciding costs a look at every attempt.
   */
  private settled: { position: bigint; month: string } | undefined;

  constructor(
    private readonly projection: BillingProjectionService,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  onApplicationBootstrap(): void {
    void this.check();
    this.timer = setInterval(() => void this.check(), this.config.GPUNET_INVOICE_CHECK_INTERVAL);
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass; a pass still running makes this one a no-op. Never throws (logged). */
  check(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.pass()
      .catch((err: unknown) => this.logger.error({ err }, 'invoice pass failed; the next one tries again'))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<void> {
    const { decisions, revisions } = await this.projection.withState(async (state, lines) => {
      const now = this.clock.now().getTime();
      const month = monthOf(now - this.projection.cutoffMs);
      if (this.settled && this.settled.position === state.position && this.settled.month === month) return { decisions: { finalize: [], credit: [] }, revisions: new Map<string, bigint>() };
      // A month is due once its end is a cutoff ago: the month of now − cutoff is the first that is not.
      // Only lines finished before it can be on an invoice due (a late line moves to a later month).
      const decisions = decideInvoices(await lines({ finishedBefore: month }), now, this.projection.cutoffMs);
      this.settled = decisions.finalize.length === 0 && decisions.credit.length === 0 ? { position: state.position, month } : undefined;
      // Revision of each invoice stream as folded: one InvoiceFinalized, then its credit notes.
      const revisions = new Map<string, bigint>();
      for (const c of decisions.credit) revisions.set(c.invoiceId, BigInt(state.creditNotes.get(c.invoiceId)?.length ?? 0));
      return { decisions, revisions };
    });
    for (const f of decisions.finalize) {
      const { invoice } = f;
      try {
        await this.writer.append(invoiceStreamId(invoice.team, invoice.month), [{ type: 'InvoiceFinalized', data: f }], { expectedRevision: 'no_stream', team: invoice.team });
        this.logger.info({ invoiceId: invoice.invoiceId, lines: invoice.lines.length, totals: invoice.totals, derivedAtPosition: invoice.derivedAtPosition }, 'invoice finalized');
      } catch (err) {
        if (!(err instanceof WrongExpectedVersionError)) throw err;
        this.logger.info({ invoiceId: invoice.invoiceId }, 'invoice finalized meanwhile by another ledger');
      }
    }
    for (const c of decisions.credit) {
      const { team, month } = { team: c.team, month: c.invoiceId.slice(-7) };
      try {
        await this.writer.append(invoiceStreamId(team, month), [{ type: 'CreditNoteIssued', data: c }], { expectedRevision: revisions.get(c.invoiceId)!, team });
        this.logger.info({ invoiceId: c.invoiceId, creditNoteId: c.creditNoteId, totals: c.totals }, 'credit note issued');
      } catch (err) {
        if (!(err instanceof WrongExpectedVersionError)) throw err;
        this.logger.info({ invoiceId: c.invoiceId }, 'invoice stream moved meanwhile; the next pass decides again');
      }
    }
  }
}
