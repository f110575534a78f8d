import { Module } from '@nestjs/common';
import { AuditController } from './audit/audit.controller.js';
import { AuditProjectionService } from './audit/audit-projection.service.js';
import { ChargesController } from './charges/charges.controller.js';
import { PriceBookService } from './prices/price-book.service.js';
import { PricesController } from './prices/prices.controller.js';
import { QuoteController } from './prices/quote.controller.js';
import { UsageController } from './usage/usage.controller.js';
import { UsageRecorderService } from './usage/usage-recorder.service.js';

/** The ledger: price lists, one usage line per finished attempt, charges by query. */
@Module({
  controllers: [UsageController, PricesController, ChargesController, QuoteController, AuditController],
  providers: [PriceBookService, UsageRecorderService, AuditProjectionService],
})
export class LedgerModule {}
