import type { PriceListPublished } from '#contracts';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import {
  decidePriceList,
  emptyPriceBook,
  evolvePriceBook,
  firstPriceList,
  latestVersion,
  PRICE_LIST_STREAM,
  statesPrices,
  type PriceBook,
  type PriceListRequest,
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
  /** The published lists as recorded, by version. */
  private readonly lists = new Map<number, PriceListPublished>();
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
    if (!this.lists.has(data.version)) this.lists.set(data.version, data);
    if (this.book !== before) this.logger.info({ priceListVersion: data.version, effectiveFrom: data.effectiveFrom, currency: data.currency }, 'price list version known');
  }

  /** Every published list as recorded, ascending by version, after catching up with the store. */
  async published(): Promise<PriceListPublished[]> {
    await this.catchUp();
    return [...this.lists.values()].sort((a, b) => a.version - b.version);
  }

  /**
   * Records the next version (`decidePriceList`: numbered after the latest, never in force
   * before now). The append expects the stream revision this ledger folded, so two publishers
   * at once get two consecutive versions: the loser catches up and numbers again.
   */
  async publish(request: PriceListRequest): Promise<PriceListPublished> {
    for (let attempt = 1; ; attempt++) {
      await this.catchUp();
      const list = decidePriceList(this.book, request, this.clock.now());
      try {
        await this.writer.append(PRICE_LIST_STREAM, [{ type: 'PriceListPublished', data: list }], {
          expectedRevision: this.nextRevision === 0n ? 'no_stream' : this.nextRevision - 1n,
        });
      } catch (err) {
        if (err instanceof WrongExpectedVersionError && attempt < 5) continue;
        throw err;
      }
      await this.catchUp();
      this.logger.info({ priceListVersion: list.version, effectiveFrom: list.effectiveFrom, currency: list.currency, publishedBy: list.publishedBy }, 'price list published');
      return list;
    }
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
