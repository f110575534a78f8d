/**
 * Whose fault a staging error is. Staging runs before compute is held, and its two kinds of
 * failure need opposite answers: a fault of this node (its disk, the object store it reached) is
 * retried here and then given back as `node_lost`, so placement tries another node; a fault of the
 * job (inputs missing or corrupt, or a layout no node can build, such as a file where the spec
 * wants a directory) would fail the same way on every node, so it ends the attempt `failed` with
 * the reason — given back as `node_lost`, it was requeued without end.
 */
import { GpunetError } from '#errors';

export type StagingFault = 'job' | 'node';

/**
 * File-system errors that come from the layout the spec asks for, not from the node: a directory
 * wanted where an input put a file (ENOTDIR, EEXIST), a file wanted where a directory is (EISDIR),
 * a name too long or looping through links. Every node lays the inputs out the same way.
 */
const LAYOUT_CODES: ReadonlySet<string> = new Set(['ENOTDIR', 'EEXIST', 'EISDIR', 'ERR_FS_EISDIR', 'ENAMETOOLONG', 'ELOOP']);

/**
 * `job` when staging would fail the same way on any node; `node` when another node (or a later
 * try) may succeed. Our own errors say so themselves (`retryable`: the object store not answering);
 * unknown errors count as the node's, as before, so a node's trouble never fails a job.
 */
export function stagingFault(err: unknown): StagingFault {
  if (err instanceof GpunetError) return err.retryable ? 'node' : 'job';
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && LAYOUT_CODES.has(code) ? 'job' : 'node';
}

/** The reason recorded for people: places named under `$GPUNET_INPUT_DIR`, not the node's own directories. */
export function stagingMessage(err: unknown, inputsDir: string): string {
  const text = err instanceof Error ? err.message : String(err);
  return `inputs could not be staged: ${text.split(inputsDir).join('$GPUNET_INPUT_DIR')}`;
}

/**
 * Attempts of a job (JobPlaced.attempt) after which staging that keeps failing for a reason no
 * rule above names ends the job: a cause that followed it to this many attempts travels with it.
 */
export const MAX_STAGING_ATTEMPTS = 5;

/**
 * What an attempt whose staging kept failing on this node (a `node` fault, tried here already)
 * ends as: `node_lost`, so placement tries another node; `failed` once the job has reached
 * {@link MAX_STAGING_ATTEMPTS}, so an unnamed cause cannot requeue it without end. An object store
 * that does not answer is the platform's whatever the attempt: it never fails a job.
 */
export function stagingGivesUp(err: unknown, attempt: number): 'node_lost' | 'failed' {
  if (err instanceof GpunetError && err.retryable) return 'node_lost';
  return attempt >= MAX_STAGING_ATTEMPTS ? 'failed' : 'node_lost';
}
