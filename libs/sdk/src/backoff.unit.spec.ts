import { pollDelayMs } from './backoff.js';

describe('poll backoff', () => {
  it('starts quick right after a change and grows while nothing changes, capped', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => pollDelayMs(n))).toEqual([200, 300, 450, 675, 1013, 1519, 2000, 2000]);
  });

  it('takes its own bounds and never overflows', () => {
    expect(pollDelayMs(0, { initialMs: 50, maxMs: 100, factor: 2 })).toBe(50);
    expect(pollDelayMs(1, { initialMs: 50, maxMs: 100, factor: 2 })).toBe(100);
    expect(pollDelayMs(10_000)).toBe(2000);
    expect(pollDelayMs(-3)).toBe(200);
  });
});
