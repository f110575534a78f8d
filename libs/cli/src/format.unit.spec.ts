import { displayPath, formatDuration, formatMicros, formatMs, formatWait, sumMicros, table } from './format.js';

describe('money from integer micro-units', () => {
  it('prints units with exactly 6 decimals, small, large and negative', () => {
    expect(formatMicros(0)).toBe('0.000000');
    expect(formatMicros(5)).toBe('0.000005');
    expect(formatMicros(7_384)).toBe('0.007384');
    expect(formatMicros(2_500_000)).toBe('2.500000');
    expect(formatMicros(-1_234_567)).toBe('-1.234567');
    expect(formatMicros(Number.MAX_SAFE_INTEGER)).toBe('9007199254.740991');
  });

  it('sums beyond the safe-integer range exactly, from numbers, bigints and decimal text', () => {
    const total = sumMicros([Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 2n, '1']);
    expect(total).toBe(18_014_398_509_481_985n);
    expect(formatMicros(total)).toBe('18014398509.481985');
  });

  it('where floats would drift, integer micros do not', () => {
    // 0.1 + 0.2 as floats is 0.30000000000000004; as micros it is exact.
    expect(formatMicros(sumMicros([100_000, 200_000]))).toBe('0.300000');
    expect(formatMicros(sumMicros(Array.from({ length: 1000 }, () => 1)))).toBe('0.001000');
  });

  it('refuses what is not an integer instead of rounding it', () => {
    expect(() => formatMicros(1.5)).toThrow(RangeError);
    expect(() => formatMicros('12.5')).toThrow(RangeError);
    expect(() => sumMicros([Number.MAX_SAFE_INTEGER + 2])).toThrow(RangeError);
  });
});

describe('durations', () => {
  it('prints billing ms as seconds with 3 decimals, and long ones with hours', () => {
    expect(formatMs(3_692)).toBe('3.692 s');
    expect(formatMs(0)).toBe('0.000 s');
    expect(formatMs(59_999)).toBe('59.999 s');
    expect(formatMs(3_723_004)).toBe('1h 02m 03.004s');
  });

  it('prints a time limit in job-file units', () => {
    expect(formatDuration(300_000)).toBe('5m');
    expect(formatDuration(5_400_500)).toBe('1h30m500ms');
    expect(formatDuration(0)).toBe('0s');
    // A predicted wait drops the ms that mean nothing, except below a second.
    expect(formatWait(109_283)).toBe('1m49s');
    expect(formatWait(1_500)).toBe('2s');
    expect(formatWait(420)).toBe('420ms');
  });
});

describe('tables', () => {
  it('pads columns, right-aligns the ones asked for, and trims trailing space', () => {
    expect(table(['A', 'AMOUNT'], [['x', '1.000000'], ['longer', '12.500000']], ['l', 'r'])).toBe(
      ['A          AMOUNT', 'x        1.000000', 'longer  12.500000'].join('\n'),
    );
  });
});

describe('paths', () => {
  it('are relative under the working directory and absolute elsewhere', () => {
    expect(displayPath('/work/repo', '/work/repo/.gpunet/logs')).toBe('.gpunet/logs');
    expect(displayPath('/work/repo', '/work/repo')).toBe('.');
    expect(displayPath('/work/repo', '/tmp/net/logs')).toBe('/tmp/net/logs');
  });
});
