import { ERROR_CODES, isErrorCode } from '#contracts';
import { ConcurrencyError, GpunetError, IllegalStateError, isRetryable, NotFoundError, TransientError, ValidationError } from '#errors';

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

  it('carries only codes of the contracts\' list, which the documents publish', () => {
    for (const err of [new ValidationError('x'), new ConcurrencyError('x'), new IllegalStateError('x'), new TransientError('x'), new NotFoundError('x')]) {
      expect(isErrorCode(err.code)).toBe(true);
      expect(ERROR_CODES[err.code].length).toBeGreaterThan(10);
    }
    // A class whose code is not in the list does not compile (`npm run typecheck` fails without this directive).
    class Unlisted extends GpunetError {
      // @ts-expect-error 'no_such_code' is not an ErrorCode: add it to contracts/error-codes.ts with its meaning first
      readonly code = 'no_such_code';
      readonly retryable = false;
    }
    expect(isErrorCode(new Unlisted('x').code)).toBe(false);
  });
});
