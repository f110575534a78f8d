import { ConcurrencyError, GpunetError } from '#errors';
import type { ExpectedRevision } from './event-store.js';

/** The stream was not at the revision the caller expected. */
export class WrongExpectedVersionError extends ConcurrencyError {
  override readonly code = 'wrong_expected_version';
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** The stream's current revision, or `no_stream`. */
    readonly actual: bigint | 'no_stream',
  ) {
    super(`stream ${streamId}: expected revision ${String(expected)}, actual ${String(actual)}`);
  }
}

/** An event id was reused with a different payload, or a batch partly overlaps an earlier one. Terminal. */
export class IdempotencyConflictError extends GpunetError {
  readonly code = 'idempotency_conflict';
  readonly retryable = false;
  constructor(
    message: string,
    readonly eventId: string,
  ) {
    super(message);
  }
}
