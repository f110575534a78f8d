/**
 * A folder input is addressed by its manifest: a small JSON blob listing every file of the
 * folder by content address. The folder's `sha256` and `size` in a job spec are those of the
 * manifest blob; the files are blobs of their own, so two folders sharing files share blobs.
 */
import { z } from 'zod';
import { fieldError, withFix } from './issues.js';
import { ByteCount, Sha256 } from './primitives.js';

/** Format tag of the manifest; a breaking change to the manifest gets a new tag. */
export const FOLDER_MANIFEST_FORMAT = 'gpunet.folder/1';

const filePathError = fieldError('manifest path', 'must be a relative file path with `/` separators, no `.` or `..` segment, no trailing `/`', 'write e.g. `train/part-0001.parquet`');
/** Relative, `/`-separated, no empty, `.` or `..` segment. */
const FILE_PATH = /^(?!\/)(?!.*\/\/)(?!(?:.*\/)?\.\.?(?:\/|$))(?!.*\/$).{1,1024}$/;

export const FolderManifestEntry = z
  .object({
    path: z.string({ error: filePathError }).regex(FILE_PATH, { error: filePathError }).describe('File path inside the folder, `/`-separated.'),
    sha256: Sha256,
    size: ByteCount,
    executable: z.boolean().optional().describe('True when the file must be executable (e.g. a script run by its `#!` line).'),
  })
  .describe('One file of the folder.');
export type FolderManifestEntry = z.output<typeof FolderManifestEntry>;

export const FolderManifest = z
  .object({
    format: z.literal(FOLDER_MANIFEST_FORMAT).describe(`Always \`${FOLDER_MANIFEST_FORMAT}\`.`),
    entries: z
      .array(FolderManifestEntry)
      .superRefine((entries, ctx) => {
        const seen = new Set<string>();
        entries.forEach((entry, i) => {
          if (seen.has(entry.path)) {
            ctx.addIssue({ code: 'custom', path: [i, 'path'], message: withFix(`manifest path \`${entry.path}\` is listed twice`, 'list each file once') });
          }
          seen.add(entry.path);
        });
      })
      .describe('Every file of the folder, each path once; sorted by path (Unicode code points) in the canonical form.'),
  })
  .describe('The files of a folder input by content address. The folder\'s sha256 is that of the manifest blob.');
export type FolderManifest = z.output<typeof FolderManifest>;

/**
 * The canonical bytes of a manifest: entries sorted by path in code point order (= UTF-8 byte
 * order), keys in a fixed order, no whitespace, `executable` only when true. Equal folders then
 * have equal addresses, so uploads and node caches are shared. Any valid manifest is accepted;
 * only reuse depends on the canonical form.
 */
export function encodeFolderManifest(entries: readonly FolderManifestEntry[]): string {
  const sorted = [...entries].sort((a, b) => compareCodePoints(a.path, b.path));
  const canonical = {
    format: FOLDER_MANIFEST_FORMAT,
    entries: sorted.map((e) => (e.executable ? { path: e.path, sha256: e.sha256, size: e.size, executable: true } : { path: e.path, sha256: e.sha256, size: e.size })),
  };
  FolderManifest.parse(canonical); // refuse to address an invalid manifest
  return JSON.stringify(canonical);
}

/** Orders strings by Unicode code point, as UTF-8 bytes would (JS `<` compares UTF-16 units). */
function compareCodePoints(a: string, b: string): number {
  const left = [...a];
  const right = [...b];
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const d = left[i]!.codePointAt(0)! - right[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return left.length - right.length;
}
