/**
 * Uploading the local inputs a job file names (`from:`) into the team's content-addressed blob
 * store, skipping blobs the team already holds, and filling in their addresses.
 */
import type { FieldIssue } from '#contracts';
import type { ProgressListener, TransferProgress } from '#blobs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { JobFileError } from './errors.js';
import { checkJobFile, resolveInputs, type JobFileSpec, type PendingInput, type ResolvedInput } from './job-file.js';

/**
 * Where inputs are uploaded to: the team's blob store over NATS (`BlobStore`) or intake's tus
 * endpoint over HTTP (`HttpUploader`); both store the same content-addressed objects.
 */
export interface InputUploader {
  uploadFile(team: string, path: string, options: { onProgress?: ProgressListener }): Promise<{ sha256: string; size: number; skipped: boolean; bytesSent: number; resumedFromBytes: number }>;
  uploadFolder(team: string, dir: string, options: { onProgress?: ProgressListener }): Promise<{ sha256: string; size: number; files: number; totalBytes: number; bytesUploaded: number }>;
}

/** Progress of one input's upload: hashing, then sending the bytes not already stored. */
export interface InputProgress extends TransferProgress {
  /** The input's name in the spec. */
  input: string;
}

/** What happened to one uploaded input. */
export interface InputUpload {
  name: string;
  kind: 'file' | 'folder';
  /** The local path it came from (absolute). */
  source: string;
  /** Its address: the file's sha256, or the folder manifest's. */
  sha256: string;
  size: number;
  /** Files in it (1 for a file). */
  files: number;
  /** Bytes of content (for a folder: its files, the manifest not counted). */
  totalBytes: number;
  /** Bytes actually sent; 0 when everything was already stored. */
  bytesUploaded: number;
  /** Bytes an earlier, interrupted upload of this file had stored, kept rather than sent again (files only). */
  resumedFromBytes: number;
  /** True when the team already held every blob of it. */
  skipped: boolean;
}

/** Options of {@link uploadJobInputs}. */
export interface UploadInputsOptions {
  /** Called after every chunk hashed or sent. */
  onProgress?: (progress: InputProgress) => void;
  /** Called when an input is done (stored or found already stored). */
  onInput?: (upload: InputUpload) => void;
}

/** A job file with its inputs uploaded: `spec` is ready to submit. */
export interface UploadedInputs {
  spec: JobFileSpec;
  inputs: InputUpload[];
}

/** Every `from:` input exists and is what its `kind` says, or one error listing each problem. */
async function locate(pending: readonly PendingInput[], baseDir: string): Promise<Array<PendingInput & { source: string; kind: 'file' | 'folder' }>> {
  const issues: FieldIssue[] = [];
  const found = await Promise.all(
    pending.map(async (p) => {
      const source = resolve(baseDir, p.from);
      const at = `data.inputs[${p.index}].from`;
      try {
        const s = await stat(source);
        const kind = s.isDirectory() ? 'folder' : s.isFile() ? 'file' : undefined;
        if (!kind) issues.push({ path: at, message: `${source} is neither a file nor a folder`, fix: 'point `from` at a regular file or a folder' });
        else if (p.kind && p.kind !== kind)
          issues.push({ path: at, message: `${source} is a ${kind}, but the input says \`kind: ${p.kind}\``, fix: `write \`kind: ${kind}\` or point \`from\` at a ${p.kind}` });
        return kind ? { ...p, source, kind } : undefined;
      } catch (err) {
        issues.push({
          path: at,
          message: `${source} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
          fix: 'check the path; it is relative to the job file\'s directory',
        });
        return undefined;
      }
    }),
  );
  if (issues.length > 0) throw new JobFileError(`inputs cannot be uploaded: ${issues.map((i) => i.message).join('; ')}`, issues);
  return found as Array<PendingInput & { source: string; kind: 'file' | 'folder' }>;
}

/**
 * Validates the job file (nothing moves for a spec the server would refuse), checks every
 * `from:` path, then uploads the inputs one after another (a folder's files in parallel, as
 * the blob store does) and returns the spec with their addresses.
 */
export async function uploadJobInputs(blobs: InputUploader, team: string, spec: JobFileSpec, baseDir: string, options: UploadInputsOptions = {}): Promise<UploadedInputs> {
  const pending = checkJobFile(spec);
  const located = await locate(pending, baseDir);
  const uploads: InputUpload[] = [];
  const resolved: ResolvedInput[] = [];
  for (const input of located) {
    const onProgress = options.onProgress ? (p: TransferProgress) => options.onProgress!({ ...p, input: input.name }) : undefined;
    let upload: InputUpload;
    if (input.kind === 'folder') {
      const r = await blobs.uploadFolder(team, input.source, onProgress ? { onProgress } : {});
      upload = { name: input.name, kind: 'folder', source: input.source, sha256: r.sha256, size: r.size, files: r.files, totalBytes: r.totalBytes, bytesUploaded: r.bytesUploaded, resumedFromBytes: 0, skipped: r.bytesUploaded === 0 };
    } else {
      const r = await blobs.uploadFile(team, input.source, onProgress ? { onProgress } : {});
      upload = { name: input.name, kind: 'file', source: input.source, sha256: r.sha256, size: r.size, files: 1, totalBytes: r.size, bytesUploaded: r.bytesSent, resumedFromBytes: r.resumedFromBytes, skipped: r.skipped };
    }
    uploads.push(upload);
    resolved.push({ index: input.index, kind: upload.kind, sha256: upload.sha256, size: upload.size });
    options.onInput?.(upload);
  }
  return { spec: resolveInputs(spec, resolved), inputs: uploads };
}
