import { querySubject, type Quote, type QuoteReply } from '#contracts';
import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { highestRateAt, lineAmountMicros, rateAt } from '../domain/index.js';
import { PriceBookService } from './price-book.service.js';

/**
 * Answers `gpunet.qry.ledger.Quote`: the price of `gpus` GPUs of a model for a duration at a time,
 * (the highest rate of the list when no model is named) with the same rate lookup, rounding and minimum charge as a usage line, so an estimate never prices differently
 * from the bill. A model no price list covers answers NoPriceError (an IllegalStateError).
 */
@Controller()
export class QuoteController {
  constructor(private readonly book: PriceBookService) {}

  @MessagePattern(querySubject('ledger', 'Quote'))
  async quote(@Payload() query: Quote): Promise<QuoteReply> {
    const versions = await this.book.versions();
    // No model named: the dearest model of the list, so a budget reserves the true worst case.
    const rate = query.gpuModel === undefined ? highestRateAt(versions, Date.parse(query.at)) : rateAt(versions, query.gpuModel, Date.parse(query.at));
    return {
      amountMicros: lineAmountMicros(query.gpus, query.durationMs, rate.rateMicrosPerGpuHour, rate.minimumChargeMicros).amountMicros,
      currency: rate.currency,
      rateMicrosPerGpuHour: rate.rateMicrosPerGpuHour,
      priceListVersion: rate.priceListVersion,
    };
  }
}
