import { querySubject, type Quote, type QuoteReply } from '#contracts';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { lineAmountMicros, rateAt } from '../domain/index.js';
import { PriceBookService } from './price-book.service.js';

/**
 * Answers `gpunet.qry.ledger.Quote`: the price of `gpus` GPUs of a model for a duration at a time,
 * with the same rate lookup, rounding and minimum charge as a usage line, so an estimate never prices differently
 * from the bill. A model no price list covers answers NoPriceError (an IllegalStateError).
 */
@Controller()
export class QuoteController {
  constructor(private readonly book: PriceBookService) {}

  @MessagePattern(querySubject('ledger', 'Quote'))
  async quote(@Payload() query: Quote): Promise<QuoteReply> {
    const rate = rateAt(await this.book.versions(), query.gpuModel, Date.parse(query.at));
    return {
      amountMicros: lineAmountMicros(query.gpus, query.durationMs, rate.rateMicrosPerGpuHour, rate.minimumChargeMicros).amountMicros,
      currency: rate.currency,
      rateMicrosPerGpuHour: rate.rateMicrosPerGpuHour,
      priceListVersion: rate.priceListVersion,
    };
  }
}
