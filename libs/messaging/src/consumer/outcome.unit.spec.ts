import { IllegalStateError, TransientError, ValidationError } from '#errors';
import { MalformedMessageError } from '../errors.js';
import { backoffDelayMs, failureOutcome, type RetryPolicy } from './outcome.js';

const policy: RetryPolicy = { maxDeliveries: 4, backoffBaseMs: 100, backoffMaxMs: 500 };

describe('failureOutcome', () => {
  it('retries a retryable error with exponential backoff capped at the maximum', () => {
    expect([1, 2, 3].map((n) => failureOutcome(new TransientError('db down'), n, policy))).toEqual([
      { kind: 'retry', delayMs: 100, code: 'transient', message: 'db down' },
      { kind: 'retry', delayMs: 200, code: 'transient', message: 'db down' },
      { kind: 'retry', delayMs: 400, code: 'transient', message: 'db down' },
    ]);
    expect(backoffDelayMs(10, policy)).toBe(500);
  });

  it('dead-letters a retryable error once maxDeliveries is reached, saying it was exhausted', () => {
    expect(failureOutcome(new TransientError('db down'), 4, policy)).toEqual({
      kind: 'dead_letter',
      reason: { code: 'transient', name: 'TransientError', message: 'db down', exhausted: true, deliveryCount: 4 },
    });
  });

  it('treats unknown errors as retryable, bounded by maxDeliveries', () => {
    expect(failureOutcome(new Error('boom'), 1, policy)).toMatchObject({ kind: 'retry', code: 'error' });
    expect(failureOutcome('thrown string', 4, policy)).toMatchObject({ kind: 'dead_letter', reason: { code: 'error', message: 'thrown string' } });
  });

  it('dead-letters terminal errors, schema failures and malformed bodies at the first delivery, with their issues', () => {
    expect(failureOutcome(new IllegalStateError('job finished'), 1, policy)).toMatchObject({
      kind: 'dead_letter',
      reason: { code: 'illegal_state', exhausted: false, deliveryCount: 1 },
    });
    const issues = [{ path: 'data.gpus', message: 'Expected number' }];
    expect(failureOutcome(new ValidationError('bad', issues), 1, policy)).toMatchObject({ kind: 'dead_letter', reason: { code: 'validation_failed', issues } });
    expect(failureOutcome(new MalformedMessageError('not JSON'), 1, policy)).toMatchObject({ kind: 'dead_letter', reason: { code: 'malformed_message' } });
  });
});
