import type { PriceListPublished } from '#contracts';
import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { PriceBookService } from './price-book.service.js';

/** Follows price list versions on the bus (published by this or another ledger). */
@Controller()
export class PricesController {
  constructor(private readonly book: PriceBookService) {}

  @EventPattern<string>('PriceListPublished')
  onPublished(@Payload() data: PriceListPublished): void {
    this.book.apply(data);
  }
}
