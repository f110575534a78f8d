import { PriceListPublished } from '#contracts';
import { ValidationError } from '#errors';
import {
  decidePriceList,
  DEFAULT_PRICES,
  emptyPriceBook,
  epochMs,
  evolvePriceBook,
  firstPriceList,
  latestVersion,
  priceVersionOf,
  splitPrices,
  statesPrices,
  type PriceBook,
} from './price-list.js';
import { rateAt } from './pricing.js';

const publishedAt = '2025-06-01T00:00:00.000Z';

function published(version: number, effectiveFrom: string, rates: Record<string, number>): PriceListPublished {
  return { version, currency: 'EUR', effectiveFrom, ratesMicrosPerGpuHour: rates, publishedAt };
}

function fold(...lists: PriceListPublished[]): PriceBook {
  return lists.reduce((book, data) => evolvePriceBook(book, { type: 'PriceListPublished', data }), emptyPriceBook);
}

describe('firstPriceList', () => {
  it('given the default prices, then version 1 names sim-gpu, moves `default` to the default rate and is in force from the epoch', () => {
    const list = firstPriceList({ prices: DEFAULT_PRICES, currency: 'EUR', publishedAt });
    expect(list).toEqual({
      version: 1,
      currency: 'EUR',
      effectiveFrom: '1970-01-01T00:00:00.000Z',
      ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000 },
      defaultRateMicrosPerGpuHour: 2_000_000,
      publishedAt,
    });
    expect(() => PriceListPublished.parse(list)).not.toThrow();
  });

  it('given prices without `default`, then the list has no default rate', () => {
    expect(firstPriceList({ prices: { A100: 3_500_000 }, currency: 'USD', publishedAt })).not.toHaveProperty('defaultRateMicrosPerGpuHour');
    expect(splitPrices({ A100: 1, default: 2 })).toEqual({ rates: { A100: 1 }, defaultRate: 2 });
  });
});

describe('the price book', () => {
  it('given versions published out of order, then it holds them by version and prices from each in its time', () => {
    const book = fold(published(2, '2025-07-01T00:00:00.000Z', { A100: 4_000_000 }), published(1, '1970-01-01T00:00:00.000Z', { A100: 3_000_000 }));
    expect(book.versions.map((v) => v.version)).toEqual([1, 2]);
    expect(latestVersion(book)?.version).toBe(2);
    expect(rateAt(book.versions, 'A100', Date.parse('2025-06-30T23:59:59.999Z')).rateMicrosPerGpuHour).toBe(3_000_000);
    expect(rateAt(book.versions, 'A100', Date.parse('2025-07-01T00:00:00.000Z')).rateMicrosPerGpuHour).toBe(4_000_000);
  });

  it('given a version already known, when it is folded again (redelivery), then nothing changes', () => {
    const once = fold(published(1, '1970-01-01T00:00:00.000Z', { A100: 3_000_000 }));
    const again = evolvePriceBook(once, { type: 'PriceListPublished', data: published(1, '1970-01-01T00:00:00.000Z', { A100: 9 }) });
    expect(again).toBe(once);
    expect(again.versions[0]!.ratesMicrosPerGpuHour.A100).toBe(3_000_000);
  });

  it('given nothing published, then there is no latest version', () => {
    expect(latestVersion(emptyPriceBook)).toBeUndefined();
  });

  it('converts the contract form (ISO effectiveFrom) to epoch ms at the edge', () => {
    expect(priceVersionOf(published(3, '2025-06-01T12:00:00.000Z', { A: 1 })).effectiveFrom).toBe(Date.UTC(2025, 5, 1, 12));
    expect(() => epochMs('yesterday', 'heldAt')).toThrow(ValidationError);
  });
});

describe('statesPrices', () => {
  it('tells whether the latest version still says what the configuration says', () => {
    const v = priceVersionOf(firstPriceList({ prices: DEFAULT_PRICES, currency: 'EUR', publishedAt }));
    expect(statesPrices(v, DEFAULT_PRICES, 'EUR')).toBe(true);
    expect(statesPrices(v, DEFAULT_PRICES, 'USD')).toBe(false);
    expect(statesPrices(v, { ...DEFAULT_PRICES, A100: 1 }, 'EUR')).toBe(false);
    expect(statesPrices(v, { 'sim-gpu': 3_600_000 }, 'EUR')).toBe(false);
  });
});

describe('decidePriceList', () => {
  const now = new Date('2025-06-15T12:00:00.000Z');
  const book = [published(1, '1970-01-01T00:00:00.000Z', { A100: 1 }), published(2, '2025-06-01T00:00:00.000Z', { A100: 2 })].reduce(
    (b, data) => evolvePriceBook(b, { type: 'PriceListPublished', data }),
    emptyPriceBook as PriceBook,
  );

  it('numbers the next version after the latest, in force from now by default, with who asked and the minimum', () => {
    const list = decidePriceList(book, { currency: 'EUR', ratesMicrosPerGpuHour: { A100: 3_500_000 }, minimumChargeMicros: 10_000, publishedBy: 'billing/key-1' }, now);
    expect(list).toEqual({
      version: 3,
      currency: 'EUR',
      effectiveFrom: '2025-06-15T12:00:00.000Z',
      ratesMicrosPerGpuHour: { A100: 3_500_000 },
      minimumChargeMicros: 10_000,
      publishedBy: 'billing/key-1',
      publishedAt: '2025-06-15T12:00:00.000Z',
    });
    expect(() => PriceListPublished.parse(list)).not.toThrow();
    expect(decidePriceList(emptyPriceBook, { currency: 'EUR', ratesMicrosPerGpuHour: {}, defaultRateMicrosPerGpuHour: 1 }, now).version).toBe(1);
  });

  it('refuses a list in force before now (a price list never changes the past), naming effectiveFrom', () => {
    expect(() => decidePriceList(book, { currency: 'EUR', effectiveFrom: '2025-06-15T11:59:59.999Z', ratesMicrosPerGpuHour: { A100: 1 } }, now)).toThrow(
      expect.objectContaining({ issues: [expect.objectContaining({ path: 'effectiveFrom' })] }),
    );
    expect(decidePriceList(book, { currency: 'EUR', effectiveFrom: '2025-07-01T00:00:00Z', ratesMicrosPerGpuHour: { A100: 1 } }, now).effectiveFrom).toBe('2025-07-01T00:00:00.000Z');
  });

  it('refuses a list that names no price', () => {
    expect(() => decidePriceList(book, { currency: 'EUR', ratesMicrosPerGpuHour: {} }, now)).toThrow(ValidationError);
  });
});
