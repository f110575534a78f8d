import { isRetryableEnd, retriesAfter } from './retry.js';

const policy = { exitCodes: [75, 137], maxAttempts: 3 };
const failed = (exitCode: number | null) => ({ outcome: 'failed', exitCode });

describe('retry policy', () => {
  it('retries only a failure with one of its exit codes', () => {
    expect(isRetryableEnd(policy, failed(75))).toBe(true);
    expect(isRetryableEnd(policy, failed(1))).toBe(false);
    expect(isRetryableEnd(policy, failed(null))).toBe(false);
    expect(isRetryableEnd(policy, { outcome: 'timeout', exitCode: 75 })).toBe(false);
    expect(isRetryableEnd(undefined, failed(75))).toBe(false);
  });

  it('stops at maxAttempts retryable ends; node losses do not count', () => {
    expect(retriesAfter(policy, [failed(75)])).toBe(true);
    expect(retriesAfter(policy, [failed(75), failed(137)])).toBe(true);
    expect(retriesAfter(policy, [failed(75), failed(137), failed(75)])).toBe(false);
    expect(retriesAfter(policy, [failed(75), { outcome: 'node_lost', exitCode: null }, failed(75)])).toBe(true);
    expect(retriesAfter(policy, [failed(75), failed(2)])).toBe(false);
    expect(retriesAfter(policy, [])).toBe(false);
  });
});
