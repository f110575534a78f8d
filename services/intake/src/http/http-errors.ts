/**
 * THE mapping from an error to an HTTP answer (one place; `ErrorFilter` applies it):
 *
 * | error | status | `error.code` |
 * |---|---|---|
 * | ValidationError (incl. a body that is not JSON) | 400 | `validation_failed`, with `issues` |
 * | UnauthorizedError | 401 + `WWW-Authenticate: Bearer` | `unauthorized` |
 * | ForbiddenError | 403 | `forbidden` |
 * | NotFoundError, unknown route | 404 | `not_found` |
 * | BudgetExceededError | 402 | `budget_exceeded`, with `issues` |
 * | IllegalStateError | 409 | `illegal_state` |
 * | IdempotencyConflictError | 409 | `idempotency_conflict` |
 * | body too large | 413 | `payload_too_large` |
 * | any retryable error (store busy, bus down, query timeout) | 503 + `Retry-After` | its code |
 * | another service's terminal error | 502 | its code |
 * | anything else | 500 | `internal`, no detail (it is logged) |
 */
import type { ErrorCode, HttpStatusCode } from '#contracts';
import { GpunetError, IllegalStateError, NotFoundError, ValidationError, type FieldIssue } from '#errors';
import { HttpException } from '@nestjs/common';
import { z } from 'zod';
import { ForbiddenError, HOW_TO_AUTHENTICATE, UnauthorizedError } from '../common/errors.js';

/** Seconds a client should wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 1;

/** The body of every error answer. */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string().describe('Machine-readable code, one of contracts\' `ERROR_CODES` (e.g. `validation_failed`, `unauthorized`, `not_found`, `idempotency_conflict`), or `http_<status>` for a status the API has no code of its own for.'),
      message: z.string().describe('What went wrong, for people.'),
      retryable: z.boolean().describe('Whether the same request may succeed later.'),
      issues: z
        .array(
          z.object({
            path: z.string().describe('The field at fault, e.g. `request.gpus`; empty for the whole body.'),
            message: z.string().describe('What is wrong with it.'),
            fix: z.string().optional().describe('How to fix it.'),
          }),
        )
        .optional()
        .describe('For `validation_failed`: every bad field and its fix.'),
    }),
  })
  .describe('An error: its code, a message for people, and for invalid input each bad field with its fix.');
export type ErrorBody = z.output<typeof ErrorBody>;

export interface HttpError {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
  /** True when the error is this service's fault and worth a log line at error level. */
  internal: boolean;
}

function answer(status: number, code: ErrorCode | HttpStatusCode, message: string, options: { retryable?: boolean; issues?: readonly FieldIssue[]; headers?: Record<string, string>; internal?: boolean } = {}): HttpError {
  const error: ErrorBody['error'] = { code, message, retryable: options.retryable ?? false };
  if (options.issues) error.issues = [...options.issues];
  return { status, headers: options.headers ?? {}, body: { error }, internal: options.internal ?? false };
}

/** An error as an HTTP status, headers and body. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof GpunetError) return fromGpunetError(err);
  if (err instanceof HttpException) return fromHttpException(err);
  // Body-parser errors that reach us unwrapped carry an HTTP status of their own.
  const status = (err as { status?: unknown } | null)?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return fromStatus(status, (err as Error).message);
  return answer(500, 'internal', 'internal error', { internal: true });
}

function fromGpunetError(err: GpunetError): HttpError {
  // Payment Required: the request is valid, the team's budget does not cover its worst case.
  if (err.code === 'budget_exceeded') return answer(402, err.code, err.message, { issues: (err as ValidationError).issues });
  if (err instanceof ValidationError) return answer(400, err.code, err.message, { issues: err.issues });
  if (err instanceof UnauthorizedError) return answer(401, err.code, err.message, { headers: { 'WWW-Authenticate': 'Bearer realm="gpunet"' } });
  if (err instanceof ForbiddenError) return answer(403, err.code, err.message);
  if (err instanceof NotFoundError) return answer(404, 'not_found', err.message);
  if (err instanceof IllegalStateError) return answer(409, err.code, err.message);
  if (err.code === 'idempotency_conflict') return answer(409, err.code, err.message);
  if (err.retryable) return answer(503, err.code, err.message, { retryable: true, headers: { 'Retry-After': String(RETRY_AFTER_SECONDS) } });
  // A terminal error from elsewhere (another service's answer, a corrupt blob): we relay it, it is not the caller's fault.
  return answer(502, err.code, err.message, { internal: true });
}

function fromHttpException(err: HttpException): HttpError {
  const status = err.getStatus();
  if (status === 400) {
    // Nest wraps the JSON parser's SyntaxError in a 400.
    return answer(400, 'validation_failed', `the body is not valid JSON: ${err.message}`, {
      issues: [{ path: '', message: 'is not valid JSON', fix: 'send a JSON object with `Content-Type: application/json`' }],
    });
  }
  return fromStatus(status, err.message);
}

function fromStatus(status: number, message: string): HttpError {
  switch (status) {
    case 400:
      return answer(400, 'validation_failed', message, { issues: [{ path: '', message, fix: 'send a JSON object with `Content-Type: application/json`' }] });
    case 401:
      return answer(401, 'unauthorized', HOW_TO_AUTHENTICATE, { headers: { 'WWW-Authenticate': 'Bearer realm="gpunet"' } });
    case 404:
      return answer(404, 'not_found', `${message}; the API is described at /openapi.json`);
    case 413:
      return answer(413, 'payload_too_large', `the body is too large (${message})`);
    default:
      return answer(status, `http_${status}`, message);
  }
}
