import { ConcurrencyError, isRetryable, ValidationError } from '#errors';

describe('error family', () => {
  it('splits retryable from terminal and keeps the cause', () => {
    const cause = new Error('disk');
    const v = new ValidationError('bad spec', [{ path: 'request.gpus', message: 'must be ≥ 1', fix: 'ask for at least one GPU' }], { cause });
    expect(v.retryable).toBe(false);
    expect(v.cause).toBe(cause);
    expect(v.name).toBe('ValidationError');
    expect(isRetryable(v)).toBe(false);
    expect(isRetryable(new ConcurrencyError('x'))).toBe(true);
    expect(isRetryable(new Error('unknown'))).toBe(true);
  });
});
