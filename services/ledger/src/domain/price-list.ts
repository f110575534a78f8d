/**
 * The price book: every published version of the price list, folded from `PriceListPublished`,
 * and the first version the ledger publishes from its configuration. Pure.
 */
import type { PriceListPublished } from '#contracts';
import { ValidationError } from '#errors';
import type { PriceListVersion } from './pricing.js';

/** The key of a configured price map that sets the rate for models the map does not name. */
export const DEFAULT_RATE_KEY = 'default';

/**
 * Prices the ledger publishes at first start when none are configured, in micros per GPU-hour:
 * 2.00 for any model, and 3.60 for `sim-gpu` (the model local agents declare), which is exactly
 * one micro per GPU-millisecond so a demo's charge can be checked by eye.
 */
export const DEFAULT_PRICES: Readonly<Record<string, number>> = { [DEFAULT_RATE_KEY]: 2_000_000, 'sim-gpu': 3_600_000 };

/** Currency of the first list when none is configured. */
export const DEFAULT_CURRENCY = 'EUR';

/**
 * The first version is in force from the epoch, so attempts held before the ledger first started
 * (agents may run before it) are priced too.
 */
export const FIRST_VERSION_EFFECTIVE_FROM = '1970-01-01T00:00:00.000Z';

/** Every version known, ascending by version number; rateAt picks among them. */
export interface PriceBook {
  readonly versions: readonly PriceListVersion[];
}

export const emptyPriceBook: PriceBook = { versions: [] };

export interface PriceListPublishedEvent {
  type: 'PriceListPublished';
  data: PriceListPublished;
}

/** A timestamp of a contract as epoch ms; ValidationError when it is not a time. */
export function epochMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new ValidationError(`${field} is not a time: ${JSON.stringify(iso)}`, [{ path: field, message: 'must be a UTC ISO-8601 time' }]);
  return ms;
}

/** A published list in the form pricing works with (effectiveFrom in epoch ms). */
export function priceVersionOf(published: PriceListPublished): PriceListVersion {
  const version: PriceListVersion = {
    version: published.version,
    currency: published.currency,
    effectiveFrom: epochMs(published.effectiveFrom, 'effectiveFrom'),
    ratesMicrosPerGpuHour: { ...published.ratesMicrosPerGpuHour },
  };
  if (published.defaultRateMicrosPerGpuHour !== undefined) version.defaultRateMicrosPerGpuHour = published.defaultRateMicrosPerGpuHour;
  if (published.minimumChargeMicros !== undefined) version.minimumChargeMicros = published.minimumChargeMicros;
  return version;
}

/**
 * Adds a published version. A version number already known is ignored (the first one recorded
 * wins, as in the store), so folding a redelivered event changes nothing.
 */
export function evolvePriceBook(book: PriceBook, event: PriceListPublishedEvent): PriceBook {
  if (book.versions.some((v) => v.version === event.data.version)) return book;
  const versions = [...book.versions, priceVersionOf(event.data)].sort((a, b) => a.version - b.version);
  return { versions };
}

/** The highest version, or undefined before any list was published. */
export function latestVersion(book: PriceBook): PriceListVersion | undefined {
  return book.versions[book.versions.length - 1];
}

/** Splits a configured map (`{ "default": 2000000, "A100": 3500000 }`) into named rates and the default rate. */
export function splitPrices(prices: Readonly<Record<string, number>>): { rates: Record<string, number>; defaultRate?: number } {
  const rates: Record<string, number> = {};
  let defaultRate: number | undefined;
  for (const [model, rate] of Object.entries(prices)) {
    if (model === DEFAULT_RATE_KEY) defaultRate = rate;
    else rates[model] = rate;
  }
  return defaultRate === undefined ? { rates } : { rates, defaultRate };
}

/** Version 1 of the price list, from configured prices, in force from the epoch. */
export function firstPriceList(options: { prices: Readonly<Record<string, number>>; currency: string; publishedAt: string }): PriceListPublished {
  const { rates, defaultRate } = splitPrices(options.prices);
  const list: PriceListPublished = {
    version: 1,
    currency: options.currency,
    effectiveFrom: FIRST_VERSION_EFFECTIVE_FROM,
    ratesMicrosPerGpuHour: rates,
    publishedAt: options.publishedAt,
  };
  if (defaultRate !== undefined) list.defaultRateMicrosPerGpuHour = defaultRate;
  return list;
}

/** Whether a version states exactly the configured prices and currency (to warn when the configuration moved on). */
export function statesPrices(version: PriceListVersion, prices: Readonly<Record<string, number>>, currency: string): boolean {
  const { rates, defaultRate } = splitPrices(prices);
  const named = Object.keys(rates);
  return (
    version.currency === currency &&
    version.defaultRateMicrosPerGpuHour === defaultRate &&
    named.length === Object.keys(version.ratesMicrosPerGpuHour).length &&
    named.every((m) => version.ratesMicrosPerGpuHour[m] === rates[m])
  );
}

/** What a publisher asks for; the ledger adds the version number and the time. */
export interface PriceListRequest {
  currency: string;
  effectiveFrom?: string;
  ratesMicrosPerGpuHour: Readonly<Record<string, number>>;
  defaultRateMicrosPerGpuHour?: number;
  minimumChargeMicros?: number;
  publishedBy?: string;
}

/**
 * The next version of the price list: numbered after the latest, in force from `effectiveFrom`
 * (default `now`). Refused (ValidationError naming the field) when it names no price, or when it
 * would apply before `now`: a price list never changes the past, so a line once priced keeps its
 * rate and an invoice once derived stays what it was.
 */
export function decidePriceList(book: PriceBook, request: PriceListRequest, now: Date): PriceListPublished {
  if (Object.keys(request.ratesMicrosPerGpuHour).length === 0 && request.defaultRateMicrosPerGpuHour === undefined) {
    throw new ValidationError('the price list names no price', [
      { path: 'ratesMicrosPerGpuHour', message: 'names no GPU model and there is no defaultRateMicrosPerGpuHour', fix: 'add e.g. `"A100": 3500000` or a defaultRateMicrosPerGpuHour' },
    ]);
  }
  const effectiveFrom = request.effectiveFrom ?? now.toISOString();
  if (epochMs(effectiveFrom, 'effectiveFrom') < now.getTime()) {
    throw new ValidationError(`effectiveFrom ${effectiveFrom} is before now (${now.toISOString()})`, [
      { path: 'effectiveFrom', message: 'must not be in the past: a price list never changes the past', fix: 'leave it out to apply from now, or give a later time' },
    ]);
  }
  const list: PriceListPublished = {
    version: (latestVersion(book)?.version ?? 0) + 1,
    currency: request.currency,
    effectiveFrom: new Date(epochMs(effectiveFrom, 'effectiveFrom')).toISOString(),
    ratesMicrosPerGpuHour: { ...request.ratesMicrosPerGpuHour },
    publishedAt: now.toISOString(),
  };
  if (request.defaultRateMicrosPerGpuHour !== undefined) list.defaultRateMicrosPerGpuHour = request.defaultRateMicrosPerGpuHour;
  if (request.minimumChargeMicros !== undefined) list.minimumChargeMicros = request.minimumChargeMicros;
  if (request.publishedBy !== undefined) list.publishedBy = request.publishedBy;
  return list;
}
