import { Commands, Queries, type GetInvoice, type InvoiceView, type ListInvoices, type ListInvoicesReply, type RebuildLedgerReply } from '#contracts';
import { NotFoundError } from '#errors';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { invoiceSummaries, invoiceView, parseInvoiceId } from '../domain/index.js';
import { BillingProjectionService } from './billing-projection.service.js';

/**
 * `gpunet.qry.ledger.ListInvoices` / `GetInvoice`, answered from the billing projection at the
 * store head, and `gpunet.cmd.RebuildLedger`. Internal: intake scopes them to the caller's team.
 */
@Controller()
export class InvoicesController {
  constructor(private readonly projection: BillingProjectionService) {}

  @MessagePattern(Queries.ListInvoices.subject)
  list(@Payload() query: ListInvoices): Promise<ListInvoicesReply> {
    return this.projection.withState((state) => ({
      invoices: invoiceSummaries(state, query, this.projection.cutoffMs),
      asOfPosition: state.position.toString(),
    }));
  }

  @MessagePattern(Queries.GetInvoice.subject)
  get(@Payload() query: GetInvoice): Promise<InvoiceView> {
    if (query.team !== undefined && parseInvoiceId(query.invoiceId).team !== query.team) {
      // Another team's invoice is not acknowledged to exist.
      throw new NotFoundError(`no invoice ${query.invoiceId} for team ${query.team}; list yours with \`gpunet invoices list\``);
    }
    return this.projection.withState((state) => invoiceView(state, query.invoiceId, this.projection.cutoffMs));
  }

  @MessagePattern(Commands.RebuildLedger.subject)
  rebuild(): Promise<RebuildLedgerReply> {
    return this.projection.rebuild();
  }
}
