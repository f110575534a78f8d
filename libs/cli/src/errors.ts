/** Errors of the command line itself (not of the network it talks to). */
import { GpunetError, IssuesError, type FieldIssue } from '#errors';

/** The command was called wrongly: missing or conflicting arguments, no network to talk to. Exit 2. */
export class UsageError extends IssuesError {
  readonly code = 'usage';
}

/** `.gpunet/state.json` exists but cannot be read or does not have the expected shape. Exit 2. */
export class StateFileError extends GpunetError {
  readonly code = 'state_file_invalid';
  readonly retryable = false;
  constructor(
    readonly path: string,
    message: string,
    readonly issues: readonly FieldIssue[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The local network could not be started or stopped as asked (`up`, `down`). Exit 1. */
export class LocalNetworkError extends GpunetError {
  readonly code = 'local_network';
  readonly retryable = false;
  constructor(
    message: string,
    /** Log files worth reading, e.g. the one of a service that exited at start. */
    readonly logs: readonly string[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
