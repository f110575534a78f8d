import { currencyDigits, formatMoney } from './money.js';

describe('formatMoney (integer micro-units, no floating point)', () => {
  it('rounds half away from zero to the currency\'s decimals and groups thousands', () => {
    expect(formatMoney(1_234_565_000, 'EUR')).toBe('EUR 1,234.57');
    expect(formatMoney(1_234_564_999, 'EUR')).toBe('EUR 1,234.56');
    expect(formatMoney(4_153, 'EUR')).toBe('EUR 0.00');
    expect(formatMoney(5_000, 'EUR')).toBe('EUR 0.01');
    expect(formatMoney(-5_000, 'EUR')).toBe('−EUR 0.01');
    expect(formatMoney(-4_000, 'EUR')).toBe('EUR 0.00');
    expect(formatMoney(1_500_000, 'JPY')).toBe('JPY 2');
    expect(formatMoney(1_234_500, 'KWD')).toBe('KWD 1.235');
  });

  it('keeps every micro when asked, and is exact beyond 2^53 (BigInt)', () => {
    expect(formatMoney(4_153, 'EUR', { precise: true })).toBe('EUR 0.004153');
    expect(formatMoney('9007199254740993', 'USD', { precise: true })).toBe('USD 9,007,199,254.740993');
    expect(formatMoney(9_007_199_254_740_993n, 'USD')).toBe('USD 9,007,199,254.74');
  });

  it('knows the currencies without two decimals', () => {
    expect([currencyDigits('EUR'), currencyDigits('JPY'), currencyDigits('BHD')]).toEqual([2, 0, 3]);
  });
});
