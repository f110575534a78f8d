import type { ErrorCode } from '#contracts';

/**
 * The error family every gpunet part uses. Each error says whether retrying can help:
 * retryable errors map to `nak(delay)` on the bus and 503 over HTTP; terminal ones to
 * dead-letter and 4xx. That mapping lives in one place per transport.
 */
export abstract class GpunetError extends Error {
  /** Stable machine-readable code, e.g. `validation_failed`: one of contracts' `ERROR_CODES`, so the documents list every code. */
  abstract readonly code: ErrorCode;
  /** Whether the same operation may succeed if tried again later. */
  abstract readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** One problem with an input: where it is, what is wrong and how to fix it. */
export interface FieldIssue {
  /** Dotted path of the field, e.g. `request.gpus`. */
  path: string;
  message: string;
  /** What to do about it. */
  fix?: string;
}

/** A terminal error that names each field at fault; subclasses only set their `code`. */
export abstract class IssuesError extends GpunetError {
  readonly retryable: boolean = false;
  constructor(
    message: string,
    /** Each bad field with what is wrong and how to fix it. */
    readonly issues: readonly FieldIssue[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Input does not satisfy its schema or a business rule. Terminal. */
export class ValidationError extends IssuesError {
  readonly code: ErrorCode = 'validation_failed';
}

/** An optimistic concurrency check failed. Retryable after re-reading state. */
export class ConcurrencyError extends GpunetError {
  readonly code: ErrorCode = 'concurrency_conflict';
  readonly retryable = true;
}

/** The command is not allowed in the current state (e.g. cancelling a finished job). Terminal. */
export class IllegalStateError extends GpunetError {
  readonly code = 'illegal_state';
  readonly retryable = false;
}

/** A dependency (database, bus) is unavailable or timed out. Retryable. */
export class TransientError extends GpunetError {
  readonly code = 'transient';
  readonly retryable = true;
}

/** Thing asked for does not exist. Terminal. */
export class NotFoundError extends GpunetError {
  readonly code = 'not_found';
  readonly retryable = false;
}

/** True when retrying may help; unknown errors are treated as retryable (bounded by the caller). */
export function isRetryable(err: unknown): boolean {
  return err instanceof GpunetError ? err.retryable : true;
}
