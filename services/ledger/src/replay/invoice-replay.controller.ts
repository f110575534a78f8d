import { Queries, type DisputeBundleReply, type GetDisputeBundle, type ReplayInvoice, type ReplayInvoiceReply } from '#contracts';
import { IllegalStateError, NotFoundError } from '#errors';
import type { EventStore } from '#event-store';
import { CLOCK, EVENT_STORE, NATS_CONNECTION, SERVICE_CONFIG, type Clock } from '#service-kit';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { CallerPrincipal } from '#contracts';
import { invoiceOf, nextMonth, parseInvoiceId } from '../domain/index.js';
import { BillingProjectionService } from '../invoices/billing-projection.service.js';
import type { LedgerConfig } from '../ledger.config.js';
import { whatIfPrices } from './invoice-replay.js';
import { disputeBundleOf, replayFromStore, replayReport } from './store-replay.js';

/** Room left in a reply for its envelope and headers. */
const ENVELOPE_ROOM = 4_096;

/**
 * `gpunet.qry.ledger.ReplayInvoice` and `GetDisputeBundle`: what `gpunet replay invoice` and
 * `gpunet dispute-bundle` do beside the store, asked through intake (the console). Internal: only
 * intake may send them, with the caller's `principal`, which scopes them to its team. Both read
 * the store and write nothing; a what-if price list is used for the one answer and forgotten.
 */
@Controller()
export class InvoiceReplayController {
  constructor(
    private readonly projection: BillingProjectionService,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  /**
   * A finalized invoice is compared with the copy its InvoiceFinalized event recorded; a draft
   * with the ledger's current draft (its projection), both re-derived from the store alone.
   */
  @MessagePattern(Queries.ReplayInvoice.subject)
  async replay(@Payload() query: ReplayInvoice): Promise<ReplayInvoiceReply> {
    ownInvoice(query.principal, query.invoiceId);
    const prices = query.prices !== undefined ? whatIfPrices(query.prices) : undefined;
    const { invoice, status } = await this.projection.withState(async (state, lines) => {
      const finalized = await this.projection.storedCopy(state, query.invoiceId);
      if (finalized) return { invoice: finalized, status: 'finalized' as const };
      const { team, month } = parseInvoiceId(query.invoiceId);
      return { invoice: invoiceOf(await lines({ team, finishedBefore: nextMonth(month) }), team, month), status: 'draft' as const };
    });
    return replayReport(invoice, await replayFromStore(this.store, invoice, prices), status);
  }

  @MessagePattern(Queries.GetDisputeBundle.subject)
  async bundle(@Payload() query: GetDisputeBundle): Promise<DisputeBundleReply> {
    ownInvoice(query.principal, query.invoiceId);
    const finalized = await this.projection.withState(async (state) => {
      const entry = state.finalized.get(query.invoiceId);
      return entry && { eventId: entry.eventId, invoice: (await this.projection.storedCopy(state, query.invoiceId))! };
    });
    const head = await this.store.headPosition();
    const bundle = await disputeBundleOf(this.store, {
      invoiceId: query.invoiceId,
      head,
      ...(finalized ? { recorded: { invoice: finalized.invoice, finalizedEventId: finalized.eventId } } : {}),
      chainKeyed: this.config.GPUNET_CHAIN_KEY !== undefined,
      createdAt: this.clock.now().toISOString(),
    });
    const reply: DisputeBundleReply = { fileName: `${query.invoiceId}.bundle.json`, bundle: bundle as unknown as DisputeBundleReply['bundle'] };
    const bytes = Buffer.byteLength(JSON.stringify(reply));
    const max = this.nc.info?.max_payload ?? 1024 * 1024;
    if (bytes > max - ENVELOPE_ROOM) {
      throw new IllegalStateError(
        `the dispute bundle of ${query.invoiceId} is ${bytes} bytes, more than one bus message holds (${max}): write it beside the store with \`gpunet dispute-bundle ${query.invoiceId}\`, or raise nats-server's max_payload`,
      );
    }
    return reply;
  }
}

/** Another team's invoice is not acknowledged to exist (as `GetInvoice`). */
function ownInvoice(principal: CallerPrincipal, invoiceId: string): void {
  if (!principal.allTeams && parseInvoiceId(invoiceId).team !== principal.team) {
    throw new NotFoundError(`no invoice ${invoiceId} for team ${principal.team}; list yours with \`gpunet invoices list\``);
  }
}
