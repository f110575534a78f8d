import fc from 'fast-check';
import { formatDuration, parseDuration } from './index.js';

describe('durations', () => {
  it.each([
    ['2h', 7_200_000],
    ['90m', 5_400_000],
    ['1h30m', 5_400_000],
    ['45s', 45_000],
    ['500ms', 500],
    ['1m5s', 65_000],
    ['7d', 604_800_000],
  ])('reads %s as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '2', 'h', '2 h', '1.5h', '-1h', '2hours', 'PT2H', '1w'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  it('writes the shortest text, and reading it back gives the same ms', () => {
    expect(formatDuration(5_400_000)).toBe('1h30m');
    expect(formatDuration(0)).toBe('0s');
    expect(formatDuration(86_400_001)).toBe('1d1ms');
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000 * 86_400_000 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });

  it('refuses to format what is not a non-negative integer of ms', () => {
    expect(() => formatDuration(-1)).toThrow(RangeError);
    expect(() => formatDuration(1.5)).toThrow(RangeError);
  });
});
