import { Module } from '@nestjs/common';
import { AuditController } from './audit/audit.controller.js';
import { AuditProjectionService } from './audit/audit-projection.service.js';
import { DigestsController } from './digests/digests.controller.js';
import { NotaryService } from './digests/notary.service.js';
import { ChainStatusService } from './digests/chain-status.service.js';
import { ChargesController } from './charges/charges.controller.js';
import { BillingProjectionService } from './invoices/billing-projection.service.js';
import { InvoiceCloserService } from './invoices/invoice-closer.service.js';
import { InvoicesController } from './invoices/invoices.controller.js';
import { PriceBookService } from './prices/price-book.service.js';
import { PriceListsController } from './prices/price-lists.controller.js';
import { PricesController } from './prices/prices.controller.js';
import { QuoteController } from './prices/quote.controller.js';
import { UsageController } from './usage/usage.controller.js';
import { BillingMetrics } from './usage/billing.metrics.js';
import { UsageRecorderService } from './usage/usage-recorder.service.js';
import { JobEndController } from './job-end/job-end.controller.js';
import { JobEndRecorderService } from './job-end/job-end-recorder.service.js';
import { InvoiceReplayController } from './replay/invoice-replay.controller.js';

/** The ledger: price lists, one usage line per finished attempt, each job's JobEnded, charges by query, and the notary of the chain heads. */
@Module({
  controllers: [UsageController, JobEndController, PricesController, ChargesController, QuoteController, AuditController, InvoicesController, PriceListsController, DigestsController, InvoiceReplayController],
  providers: [BillingMetrics, PriceBookService, UsageRecorderService, JobEndRecorderService, AuditProjectionService, BillingProjectionService, InvoiceCloserService, NotaryService, ChainStatusService],
})
export class LedgerModule {}
