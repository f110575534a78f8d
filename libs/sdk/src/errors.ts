/**
 * What can go wrong talking to a gpunet network, as named errors with `cause`:
 * the server said no ({@link GpunetApiError}), nobody answered ({@link GpunetUnreachableError}),
 * the answer was not what the contract promises ({@link GpunetProtocolError}), a wait ran out
 * ({@link WaitTimeoutError}), or a local job file cannot be used ({@link JobFileError}).
 */
import type { ErrorCode } from '#contracts';
import { GpunetError, IssuesError, type FieldIssue } from '#errors';

/** A non-2xx HTTP answer: `{ error: { code, message, issues } }` from intake, kept whole. */
export class GpunetApiError extends GpunetError {
  /** As intake sent it: one of contracts' `ERROR_CODES`, or `http_<status>` for a status the API has no code of its own for. */
  readonly code: ErrorCode;
  readonly retryable: boolean;
  constructor(
    /** HTTP status, e.g. 400, 401, 404, 409, 503. */
    readonly status: number,
    code: string,
    message: string,
    /** For `validation_failed`: each bad field with its fix. */
    readonly issues: readonly FieldIssue[] = [],
    options?: { cause?: unknown; retryable?: boolean },
  ) {
    super(message, options);
    this.code = code as ErrorCode;
    // The server says when it knows; otherwise only overload and gateway answers are worth a retry.
    this.retryable = options?.retryable ?? (status === 429 || status === 502 || status === 503 || status === 504);
  }
}

/** No answer from the API (connection refused, reset, DNS, timeout). Retryable. */
export class GpunetUnreachableError extends GpunetError {
  readonly code = 'unreachable';
  readonly retryable = true;
  constructor(
    /** The URL that did not answer. */
    readonly url: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An answer outside the contract (not JSON, or failing the reply schema). Terminal: a version mismatch. */
export class GpunetProtocolError extends IssuesError {
  readonly code = 'protocol_error';
}

/** `waitFor` gave up before the job reached a final state; `lastSeen` is the newest view it read. */
export class WaitTimeoutError extends GpunetError {
  readonly code = 'wait_timeout';
  readonly retryable = true;
  constructor(
    readonly jobId: string,
    readonly timeoutMs: number,
    readonly lastState: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(`job ${jobId} did not reach a final state within ${timeoutMs} ms${lastState ? ` (last seen: ${lastState})` : ''}`, options);
  }
}

/** A job file or spec that cannot be submitted as it is: each problem with its field and fix. */
export class JobFileError extends IssuesError {
  readonly code = 'validation_failed';
}

/** A downloaded output whose bytes are not the ones the job recorded. */
export class OutputIntegrityError extends GpunetError {
  readonly code = 'integrity_failed';
  readonly retryable = true;
  constructor(
    readonly path: string,
    readonly expected: { sha256: string; size: number },
    readonly actual: { sha256: string; size: number },
  ) {
    super(
      `output ${path}: expected ${expected.size} bytes with sha256 ${expected.sha256}, received ${actual.size} bytes with sha256 ${actual.sha256}; download it again`,
    );
  }
}

/** The client lacks a setting an operation needs (e.g. `natsUrl` or `team` to upload inputs). Terminal. */
export class ClientConfigError extends GpunetError {
  readonly code = 'client_config';
  readonly retryable = false;
  constructor(
    /** The option to set, e.g. `natsUrl`. */
    readonly option: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
