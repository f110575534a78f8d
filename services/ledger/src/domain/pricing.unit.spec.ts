import fc from 'fast-check';
import { billableMs, chargeMicros, highestRateAt, lineAmountMicros, NoPriceError, rateAt, type PriceListVersion } from './pricing.js';

const v1: PriceListVersion = { version: 1, currency: 'EUR', effectiveFrom: 0, ratesMicrosPerGpuHour: { A100: 2_000_000 }, defaultRateMicrosPerGpuHour: 1_000_000 };
const v2: PriceListVersion = { version: 2, currency: 'EUR', effectiveFrom: 1_000, ratesMicrosPerGpuHour: { A100: 3_000_000 } };

describe('rateAt', () => {
  it('takes the latest version in force at the time', () => {
    expect(rateAt([v1, v2], 'A100', 999)).toEqual({ priceListVersion: 1, rateMicrosPerGpuHour: 2_000_000, currency: 'EUR' });
    expect(rateAt([v2, v1], 'A100', 1_000)).toEqual({ priceListVersion: 2, rateMicrosPerGpuHour: 3_000_000, currency: 'EUR' });
  });
  it('uses the default rate for unnamed models, and refuses when there is none', () => {
    expect(rateAt([v1], 'T4', 5).rateMicrosPerGpuHour).toBe(1_000_000);
    expect(() => rateAt([v1, v2], 'T4', 2_000)).toThrow(NoPriceError);
    expect(() => rateAt([v2], 'A100', 10)).toThrow(NoPriceError);
  });
});

describe('highestRateAt', () => {
  it('takes the dearest rate of the version in force, the default included', () => {
    expect(highestRateAt([v1, v2], 999)).toEqual({ priceListVersion: 1, rateMicrosPerGpuHour: 2_000_000, currency: 'EUR' });
    expect(highestRateAt([v1, { ...v1, version: 3, effectiveFrom: 5, defaultRateMicrosPerGpuHour: 9_000_000 }], 5).rateMicrosPerGpuHour).toBe(9_000_000);
    expect(highestRateAt([v1, v2], 1_000)).toMatchObject({ priceListVersion: 2, rateMicrosPerGpuHour: 3_000_000 });
  });
  it('refuses when no version covers the time', () => {
    expect(() => highestRateAt([v2], 10)).toThrow(NoPriceError);
  });
});

describe('chargeMicros', () => {
  it('bills one GPU-hour at exactly the rate', () => {
    expect(chargeMicros(1, 3_600_000, 2_000_000)).toBe(2_000_000);
    expect(chargeMicros(4, 1_800_000, 2_000_000)).toBe(4_000_000);
    expect(chargeMicros(0, 1_000, 2_000_000)).toBe(0);
  });
  it('rounds half up, once per line', () => {
    // 1 GPU × 1 ms at 1.8 units/h = 0.5 µ → 1 µ; one micro less per hour → 0.4999997 µ → 0.
    expect(chargeMicros(1, 1, 1_800_000)).toBe(1);
    expect(chargeMicros(1, 1, 1_799_999)).toBe(0);
    expect(chargeMicros(3, 1, 1_800_000)).toBe(2); // 1.5 µ → 2 µ
  });
  it('refuses fractional or negative input instead of guessing', () => {
    expect(() => chargeMicros(1.5, 1, 1)).toThrow(/gpus/);
    expect(() => chargeMicros(1, -1, 1)).toThrow(/billableMs/);
  });
  it('never differs from the exact value by more than half a micro', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 30 * 86_400_000 }), fc.integer({ min: 0, max: 50_000_000 }), (g, ms, rate) => {
        const exactTimes2 = BigInt(g) * BigInt(ms) * BigInt(rate) * 2n;
        const got = BigInt(chargeMicros(g, ms, rate)) * 3_600_000n * 2n;
        const diff = got > exactTimes2 ? got - exactTimes2 : exactTimes2 - got;
        return diff <= 3_600_000n;
      }),
    );
  });
});

describe('billableMs', () => {
  it('is finished − held, never negative', () => {
    expect(billableMs(1_000, 4_500)).toBe(3_500);
    expect(billableMs(5_000, 4_000)).toBe(0);
  });
});

describe('lineAmountMicros (the one rounding rule, then the minimum charge)', () => {
  it('rounds the exact charge once, half up, and raises a charged line to the minimum', () => {
    // 1 A100 × 1,026 ms at 3.50/h = 997.5 µ → 998 µ; a minimum of 1,000 µ lifts it.
    expect(lineAmountMicros(1, 1_026, 3_500_000)).toEqual({ amountMicros: 998, minimumApplied: false });
    expect(lineAmountMicros(1, 1_026, 3_500_000, 1_000)).toEqual({ amountMicros: 1_000, minimumApplied: true });
    expect(lineAmountMicros(1, 1_026, 3_500_000, 998)).toEqual({ amountMicros: 998, minimumApplied: false });
  });
  it('charges nothing for a line of 0 ms, minimum or not (nothing was held)', () => {
    expect(lineAmountMicros(4, 0, 3_600_000, 50_000)).toEqual({ amountMicros: 0, minimumApplied: false });
  });
  it('is never below the minimum for a charged line and never differs from the exact value by more than half a micro above it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 30 * 86_400_000 }), fc.integer({ min: 0, max: 50_000_000 }), fc.integer({ min: 0, max: 1_000_000 }), (g, ms, rate, min) => {
        const { amountMicros, minimumApplied } = lineAmountMicros(g, ms, rate, min);
        const rounded = chargeMicros(g, ms, rate);
        return amountMicros === Math.max(rounded, min) && minimumApplied === rounded < min;
      }),
    );
  });
});
