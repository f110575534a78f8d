import { Commands, Queries, type GetInvoice, type InvoiceView, type ListInvoices, type ListInvoicesReply, type RebuildLedger, type RebuildLedgerReply } from '#contracts';
import { NotFoundError } from '#errors';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { invoiceSummaries, invoiceView, nextMonth, parseInvoiceId } from '../domain/index.js';
import { BillingProjectionService } from './billing-projection.service.js';

/**
 * `gpunet.qry.ledger.ListInvoices` / `GetInvoice`, answered from the billing projection at the
 * store head, and `gpunet.cmd.RebuildLedger`. Internal: only intake may send them, with the caller's `principal`, which scopes them to its team.
 */
@Controller()
export class InvoicesController {
  constructor(private readonly projection: BillingProjectionService) {}

  @MessagePattern(Queries.ListInvoices.subject)
  list(@Payload() query: ListInvoices): Promise<ListInvoicesReply> {
    // A team's list reads only its own open lines; a month's, only those that can be on it.
    const needed = { ...(query.principal.allTeams ? {} : { team: query.principal.team }), ...(query.month ? { finishedBefore: nextMonth(query.month) } : {}) };
    return this.projection.withState(async (state, lines) => ({
      invoices: invoiceSummaries(await lines(needed), { ...(query.principal.allTeams ? {} : { team: query.principal.team }), ...(query.month ? { month: query.month } : {}), ...(query.status ? { status: query.status } : {}) }, this.projection.cutoffMs),
      asOfPosition: state.position.toString(),
    }));
  }

  @MessagePattern(Queries.GetInvoice.subject)
  get(@Payload() query: GetInvoice): Promise<InvoiceView> {
    const { principal } = query;
    if (!principal.allTeams && parseInvoiceId(query.invoiceId).team !== principal.team) {
      // Another team's invoice is not acknowledged to exist.
      throw new NotFoundError(`no invoice ${query.invoiceId} for team ${principal.team}; list yours with \`gpunet invoices list\``);
    }
    const { team, month } = parseInvoiceId(query.invoiceId);
    return this.projection.withState(async (state, lines) => {
      const stored = await this.projection.storedCopy(state, query.invoiceId);
      return invoiceView(stored ? state : await lines({ team, finishedBefore: nextMonth(month) }), query.invoiceId, this.projection.cutoffMs, undefined, stored);
    });
  }

  @MessagePattern(Commands.RebuildLedger.subject)
  rebuild(@Payload() _command: RebuildLedger): Promise<RebuildLedgerReply> {
    return this.projection.rebuild();
  }
}
