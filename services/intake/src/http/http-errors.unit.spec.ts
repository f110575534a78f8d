import { ConcurrencyError, IllegalStateError, NotFoundError, TransientError, ValidationError } from '#errors';
import { IdempotencyConflictError, WrongExpectedVersionError } from '#event-store';
import { QueryTimeoutError, QueryUnavailableError, RemoteQueryError } from '#messaging';
import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { ForbiddenError, UnauthorizedError } from '../common/errors.js';
import { ErrorBody, toHttpError } from './http-errors.js';

describe('toHttpError (the one error → HTTP mapping)', () => {
  it('ValidationError → 400 validation_failed with every issue (path, message, fix)', () => {
    const issues = [
      { path: 'request.gpus', message: 'gpus must be ≥ 1', fix: 'write e.g. `gpus: 2`' },
      { path: 'work', message: 'work is missing', fix: 'add `work`' },
    ];
    const answer = toHttpError(new ValidationError('invalid', issues));
    expect(answer).toMatchObject({ status: 400, internal: false, body: { error: { code: 'validation_failed', message: 'invalid', retryable: false, issues } } });
    expect(ErrorBody.parse(answer.body)).toEqual(answer.body);
  });

  it('UnauthorizedError → 401 with WWW-Authenticate; ForbiddenError → 403', () => {
    expect(toHttpError(new UnauthorizedError('no API key'))).toMatchObject({ status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="gpunet"' }, body: { error: { code: 'unauthorized' } } });
    expect(toHttpError(new ForbiddenError('not yours'))).toMatchObject({ status: 403, body: { error: { code: 'forbidden', message: 'not yours' } } });
  });

  it('NotFoundError → 404; IllegalStateError → 409; IdempotencyConflictError → 409 idempotency_conflict', () => {
    expect(toHttpError(new NotFoundError('job x does not exist'))).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    expect(toHttpError(new IllegalStateError('already final'))).toMatchObject({ status: 409, body: { error: { code: 'illegal_state' } } });
    expect(toHttpError(new IdempotencyConflictError('the key was used with a different spec', 'e1'))).toMatchObject({
      status: 409,
      body: { error: { code: 'idempotency_conflict', message: 'the key was used with a different spec', retryable: false } },
    });
  });

  it.each([
    ['TransientError', new TransientError('store busy')],
    ['ConcurrencyError', new ConcurrencyError('raced')],
    ['WrongExpectedVersionError', new WrongExpectedVersionError('s', 'no_stream', 0n)],
    ['QueryTimeoutError', new QueryTimeoutError('gpunet.qry.ledger.GetCharges', 5000)],
    ['QueryUnavailableError', new QueryUnavailableError('gpunet.qry.ledger.GetCharges')],
    ['a retryable remote error', new RemoteQueryError('transient', 'busy', 'gpunet.qry.ledger.GetCharges')],
  ])('%s (retryable) → 503 with Retry-After', (_name, err) => {
    const answer = toHttpError(err);
    expect(answer.status).toBe(503);
    expect(answer.headers['Retry-After']).toMatch(/^\d+$/);
    expect(answer.body.error.retryable).toBe(true);
  });

  it('a terminal error from another service → 502, logged as ours to look at', () => {
    expect(toHttpError(new RemoteQueryError('internal', 'internal error', 'gpunet.qry.ledger.GetCharges'))).toMatchObject({ status: 502, internal: true, body: { error: { code: 'internal' } } });
  });

  it('Nest and body-parser errors: bad JSON → 400 naming the body, unknown route → 404, too large → 413', () => {
    expect(toHttpError(new BadRequestException('Unexpected token } in JSON'))).toMatchObject({
      status: 400,
      body: { error: { code: 'validation_failed', issues: [{ path: '', fix: expect.stringContaining('JSON') }] } },
    });
    expect(toHttpError(new NotFoundException('Cannot GET /v2/nope'))).toMatchObject({ status: 404, body: { error: { code: 'not_found', message: expect.stringContaining('/openapi.json') } } });
    expect(toHttpError(new PayloadTooLargeException('request entity too large'))).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large' } } });
    expect(toHttpError(Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large' }))).toMatchObject({ status: 413 });
  });

  it('anything else → 500 internal without detail', () => {
    const answer = toHttpError(new Error('database password is hunter2'));
    expect(answer).toMatchObject({ status: 500, internal: true, body: { error: { code: 'internal', message: 'internal error' } } });
    expect(JSON.stringify(answer.body)).not.toContain('hunter2');
  });
});
