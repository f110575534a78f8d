/**
 * Events of a job's data: inputs staged before compute is held (staging is never billed),
 * outputs stored after the run, blobs removed once no job needs them.
 */
import { z } from 'zod';
import { withFix } from '../issues.js';
import { defineEvent } from '../message.js';
import { AttemptId, ByteCount, HumanText, JobId, NodeId, Sha256, Timestamp } from '../primitives.js';

const relativePathError = withFix('path must be relative', 'drop the leading `/`');

/** A stored blob: its content address and size. */
export const BlobRef = z
  .object({ sha256: Sha256, size: ByteCount })
  .describe('A blob in the object store, by content address.');
export type BlobRef = z.output<typeof BlobRef>;

/** One stored output file. */
export const OutputFile = z
  .object({
    path: z
      .string()
      .regex(/^(?!\/).+$/, { error: relativePathError })
      .describe('Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators.'),
    sha256: Sha256,
    size: ByteCount,
  })
  .describe('One output file: where the job wrote it and its content address.');
export type OutputFile = z.output<typeof OutputFile>;

export const OUTPUT_REFUSAL_REASONS = ['symlink_outside', 'symlink_dangling', 'not_regular_file', 'size_cap', 'changed', 'unreadable', 'invalid_name'] as const;
/** A file matching the output globs that was not kept, and why. */
export const RejectedOutput = z
  .object({
    path: z.string().describe('Path relative to `GPUNET_OUTPUT_DIR`, with `/` separators; control characters escaped as in JSON (`\\n`) for `invalid_name`.'),
    reason: z
      .enum(OUTPUT_REFUSAL_REASONS)
      .describe(
        '`symlink_outside`: a symlink pointing outside the output directory (never followed); `symlink_dangling`: points at nothing; ' +
          '`not_regular_file`: a directory link, FIFO, socket or device; `size_cap`: `outputs.maxBytes` was reached; ' +
          '`changed`: it changed while outputs were collected; `unreadable`: a directory the agent could not list; ' +
          '`invalid_name`: its name holds a control character (a newline, say) that no output path may hold, whatever the globs.',
      ),
    message: HumanText.describe('What was refused and why, for people.'),
  })
  .describe('An output file that matched the globs but was refused.');
export type RejectedOutput = z.output<typeof RejectedOutput>;

export const InputsStaged = z.object({
  jobId: JobId,
  inputs: z
    .array(z.object({ name: z.string().describe('Input name from the spec.'), sha256: Sha256, size: ByteCount }))
    .describe('Every input of the spec, now present in the object store and verified against its sha256 and size.'),
  totalBytes: ByteCount.describe('Sum of the input sizes.'),
  stagedAt: Timestamp.describe('When the last input was verified.'),
});
export type InputsStaged = z.output<typeof InputsStaged>;

export const STAGING_FAILURE_REASONS = ['blob_missing', 'checksum_mismatch', 'size_mismatch', 'manifest_invalid', 'storage_error'] as const;
export const StagingFailed = z.object({
  jobId: JobId,
  inputName: z.string().optional().describe('The input at fault, when one is.'),
  reason: z
    .enum(STAGING_FAILURE_REASONS)
    .describe('`blob_missing`: not uploaded; `checksum_mismatch` / `size_mismatch`: bytes differ from the spec; `manifest_invalid`: bad folder manifest; `storage_error`: gave up after retries.'),
  message: HumanText.describe('What went wrong and what to do, for people.'),
  failedAt: Timestamp.describe('When staging gave up.'),
});
export type StagingFailed = z.output<typeof StagingFailed>;

export const OutputsStored = z.object({
  jobId: JobId,
  attemptId: AttemptId,
  files: z.array(OutputFile).describe('Every stored file that matched the output globs.'),
  totalBytes: ByteCount.describe('Sum of the stored file sizes.'),
  truncated: z.boolean().default(false).describe('True when files were skipped because `outputs.maxBytes` was reached.'),
  rejected: z
    .array(RejectedOutput)
    .max(1000)
    .default([])
    .describe('Files matching the globs that were refused (symlinks leaving the output directory, the size cap, …), each with why; at most 1000 listed.'),
  logs: z
    .array(z.object({ stream: z.enum(['stdout', 'stderr']).describe('Which stream.'), sha256: Sha256, size: ByteCount }))
    .default([])
    .describe('The run\'s captured stdout and stderr, stored like outputs.'),
  storedAt: Timestamp.describe('When the last file was stored.'),
});
export type OutputsStored = z.output<typeof OutputsStored>;

export const DATA_SCOPES = ['inputs', 'outputs', 'checkpoints', 'logs', 'node_cache'] as const;
export const DATA_REMOVAL_REASONS = ['job_released', 'retention_expired', 'evicted'] as const;
export const DataRemoved = z.object({
  jobId: JobId.optional().describe('The job the data belonged to; absent for a cache eviction serving many jobs.'),
  scope: z.enum(DATA_SCOPES).describe('Which kind of data: a job\'s staged inputs, outputs, checkpoints, logs, or a node\'s local cache.'),
  nodeId: NodeId.optional().describe('The node whose local copy was removed; absent for the shared object store.'),
  blobs: z.array(BlobRef).describe('Blobs removed.'),
  reason: z
    .enum(DATA_REMOVAL_REASONS)
    .describe('`job_released`: no job needs it after release; `retention_expired`: its keep time passed; `evicted`: cache space was needed.'),
  removedAt: Timestamp.describe('When the data was removed.'),
});
export type DataRemoved = z.output<typeof DataRemoved>;

export const dataEvents = [
  defineEvent({
    name: 'InputsStaged',
    version: 1,
    producers: ['storage'],
    description: 'Every input of the job is in the object store and verified. Placement may now hold compute for it.',
    schema: InputsStaged,
  }),
  defineEvent({
    name: 'StagingFailed',
    version: 1,
    producers: ['storage'],
    description: 'The job\'s inputs could not be staged; the job will not run. Nothing is billed.',
    schema: StagingFailed,
  }),
  defineEvent({
    name: 'OutputsStored',
    version: 1,
    producers: ['storage'],
    description: 'The files matching the job\'s output globs, and its logs, are stored by content address.',
    schema: OutputsStored,
  }),
  defineEvent({
    name: 'DataRemoved',
    version: 1,
    producers: ['storage', 'execution'],
    description: 'Blobs were removed because no job needs them and their retention passed (or a node cache evicted them).',
    schema: DataRemoved,
  }),
] as const;
