import type { PriceListPublished } from '#contracts';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import {
  emptyPriceBook,
  evolvePriceBook,
  firstPriceList,
  latestVersion,
  PRICE_LIST_STREAM,
  statesPrices,
  type PriceBook,
  type PriceListVersion,
} from '../domain/index.js';
import type { LedgerConfig } from '../ledger.config.js';

/**
 * The price list versions this ledger knows: folded from `ledger-pricelist` at start (publishing
 * version 1 from the configuration when the stream is empty), followed on the bus, and caught up
 * from the store before each pricing, so a version recorded by another ledger is never missed
 * because its bus message is still on the way.
 */
@Injectable()
export class PriceBookService implements OnModuleInit {
  private book: PriceBook = emptyPriceBook;
  /** Next revision of `ledger-pricelist` to read: everything before it is folded. */
  private nextRevision = 0n;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** Runs before anything is consumed (Nest initialises modules before the transport listens). */
  async onModuleInit(): Promise<void> {
    await this.catchUp();
    const latest = latestVersion(this.book);
    if (!latest) {
      await this.publishFirst();
      return;
    }
    if (!statesPrices(latest, this.config.GPUNET_PRICES, this.config.GPUNET_CURRENCY)) {
      this.logger.warn(
        { version: latest.version },
        'GPUNET_PRICES / GPUNET_CURRENCY differ from the published price list; they only seed version 1, which exists, so the published list applies',
      );
    }
  }

  /** Every version known after catching up with the store. */
  async versions(): Promise<readonly PriceListVersion[]> {
    await this.catchUp();
    return this.book.versions;
  }

  /** Folds a version seen on the bus (a version already known changes nothing). */
  apply(data: PriceListPublished): void {
    const before = this.book;
    this.book = evolvePriceBook(this.book, { type: 'PriceListPublished', data });
    if (this.book !== before) this.logger.info({ priceListVersion: data.version, effectiveFrom: data.effectiveFrom, currency: data.currency }, 'price list version known');
  }

  private async catchUp(): Promise<void> {
    const events = await this.store.readStream(PRICE_LIST_STREAM, { fromRevision: this.nextRevision });
    for (const e of events) {
      if (e.type === 'PriceListPublished') this.apply(e.data as PriceListPublished);
      if (e.revision >= this.nextRevision) this.nextRevision = e.revision + 1n;
    }
  }

  private async publishFirst(): Promise<void> {
    const list = firstPriceList({ prices: this.config.GPUNET_PRICES, currency: this.config.GPUNET_CURRENCY, publishedAt: this.clock.now().toISOString() });
    try {
      await this.writer.append(PRICE_LIST_STREAM, [{ type: 'PriceListPublished', data: list }], { expectedRevision: 'no_stream' });
      this.logger.info({ priceListVersion: 1, rates: list.ratesMicrosPerGpuHour, defaultRate: list.defaultRateMicrosPerGpuHour, currency: list.currency }, 'published the first price list from the configuration');
    } catch (err) {
      // Another ledger published first: its list is the one in force.
      if (!(err instanceof WrongExpectedVersionError)) throw err;
      this.logger.info('the first price list was published by another ledger meanwhile');
    }
    await this.catchUp();
  }
}
