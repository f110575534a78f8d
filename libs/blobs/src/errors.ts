import { GpunetError, NotFoundError, TransientError, ValidationError, type FieldIssue } from '#errors';

/** The team holds no blob with this address. Terminal: upload it first. */
export class BlobNotFoundError extends NotFoundError {
  constructor(
    readonly team: string,
    readonly sha256: string,
    options?: { cause?: unknown },
  ) {
    super(`blob ${sha256} is not in the object store of team ${team}; upload it first`, options);
  }
}

/**
 * Bytes do not match their address: a download whose sha256 or size differs from what was asked
 * for, or a file that changed while it was being uploaded. Terminal for these bytes; nothing
 * partial is left behind.
 */
export class BlobIntegrityError extends GpunetError {
  readonly code = 'blob_integrity';
  readonly retryable = false;
  constructor(
    message: string,
    readonly expected: { sha256: string; size?: number },
    readonly actual: { sha256?: string; size?: number },
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A folder cannot be addressed as given (a special file, a symlink to a directory, a bad path). */
export class FolderInputError extends ValidationError {
  constructor(message: string, issues: readonly FieldIssue[] = [], options?: { cause?: unknown }) {
    super(message, issues, options);
  }
}

/** The object store did not answer or refused an operation for a reason retrying may fix. */
export class BlobStoreUnavailableError extends TransientError {}

/** A folder manifest blob that is not valid JSON or not a `gpunet.folder/1` manifest. Terminal. */
export class ManifestInvalidError extends ValidationError {}
