import type { ErrorCode } from '#contracts';
import { GpunetError, IssuesError, type FieldIssue } from '#errors';

/** A bus message body that cannot be decoded (not JSON, not an event envelope). Terminal: dead-lettered at once. */
export class MalformedMessageError extends IssuesError {
  readonly code = 'malformed_message';
}

/**
 * An event on the bus that the event store does not hold as it arrived: forged, altered on the
 * way, or published by something that is not a trusted writer. Terminal: dead-lettered at once,
 * never handled.
 */
export class UnrecordedEventError extends GpunetError {
  readonly code = 'not_recorded';
  readonly retryable = false;
}

/** A topology definition (streams and consumers as data) does not satisfy its schema. */
export class TopologyError extends IssuesError {
  readonly code = 'invalid_topology';
}

/** The server refused to create or update a stream or consumer as defined (e.g. an immutable field changed). */
export class ProvisioningError extends GpunetError {
  readonly code = 'provisioning_failed';
  readonly retryable = false;
  constructor(
    message: string,
    /** `stream NAME` or `consumer STREAM/DURABLE`. */
    readonly resource: string,
    /** Fields that differ between the definition and the server, when known. */
    readonly fields: readonly string[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** No reply to a query within its timeout. Retryable. */
export class QueryTimeoutError extends GpunetError {
  readonly code = 'query_timeout';
  readonly retryable = true;
  constructor(
    readonly subject: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`no reply on ${subject} within ${timeoutMs} ms`, options);
  }
}

/** Nobody serves the query subject right now. Retryable. */
export class QueryUnavailableError extends GpunetError {
  readonly code = 'query_unavailable';
  readonly retryable = true;
  constructor(
    readonly subject: string,
    options?: { cause?: unknown },
  ) {
    super(`no responder on ${subject}`, options);
  }
}

/** Remote error codes a caller may retry. */
const RETRYABLE_REMOTE_CODES = new Set(['transient', 'concurrency_conflict', 'wrong_expected_version', 'query_timeout', 'query_unavailable']);

/** The query's responder answered `ok: false` with a code this side has no class for. */
export class RemoteQueryError extends GpunetError {
  readonly retryable: boolean;
  /** As the responder sent it: a gpunet responder's codes are those of contracts' `ERROR_CODES` (its error classes are typed so). */
  readonly code: ErrorCode;
  constructor(
    code: string,
    message: string,
    readonly subject: string,
    readonly issues: readonly FieldIssue[] = [],
    /** As the responder said; when it did not, decided by the code. */
    retryable?: boolean,
  ) {
    super(message);
    this.code = code as ErrorCode;
    this.retryable = retryable ?? RETRYABLE_REMOTE_CODES.has(code);
  }
}

/** An operation on a runner, relay or client that was already closed. */
export class ClosedError extends GpunetError {
  readonly code = 'closed';
  readonly retryable = false;
}
