import { ConcurrencyError, GpunetError } from '#errors';
import type { AppendFence, ExpectedRevision } from './event-store.js';

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

/**
 * A fenced append found its fence stream moved on: another holder of the writer's role has
 * taken over since this writer's term began (decision 0029). Nothing was written. Terminal for
 * this writer: it is no longer the one that decides, so it must step down, not retry.
 */
export class FencedError extends GpunetError {
  readonly code = 'fenced';
  readonly retryable = false;
  constructor(
    /** The stream the append was meant for. */
    readonly streamId: string,
    readonly fence: AppendFence,
    /** The fence stream's current revision, or `no_stream`. */
    readonly actual: bigint | 'no_stream',
  ) {
    super(`append to ${streamId} fenced off: ${fence.streamId} is at revision ${String(actual)}, not ${fence.revision} (another instance has taken over this role)`);
  }
}
