import { createHash } from 'node:crypto';
import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import picomatch from 'picomatch';
import { ValidationError, type FieldIssue } from '#errors';

/** One output file accepted for upload. */
export interface OutputFile {
  /** Path relative to the outputs directory, `/`-separated. */
  readonly path: string;
  /** Bytes hashed, which is what the uploader must send. */
  readonly size: number;
  /** Lowercase hex sha256 of the content. */
  readonly sha256: string;
  /** Where to read it: the file itself, or the target of a symlink that stays inside the outputs. */
  readonly sourcePath: string;
}

// eslint-disable-next-line no-control-regex -- control characters are exactly what this finds
const CONTROL_CHAR = /[\u0000-\u001f\u007f]/;

/** Why a file matching the globs was not accepted. */
export type RejectionReason =
  | 'symlink_outside' // a symlink whose target is outside the outputs directory: never followed
  | 'symlink_dangling'
  | 'not_regular_file' // directory symlink, FIFO, socket, device
  | 'size_cap' // accepting it would exceed the total size cap
  | 'changed' // it changed type while being collected
  | 'unreadable' // a directory the agent cannot list (its path is reported, whatever the globs)
  | 'invalid_name'; // a name with a control character, e.g. a newline (reported whatever the globs: a glob cannot match it)

/** A matching path that was refused, with a message fit for the job's record. */
export interface RejectedOutput {
  readonly path: string;
  readonly reason: RejectionReason;
  readonly message: string;
}

/** Result of {@link collectOutputs}; both lists sorted by path. */
export interface CollectedOutputs {
  readonly files: readonly OutputFile[];
  readonly rejected: readonly RejectedOutput[];
  /** Sum of `files[].size`. */
  readonly totalBytes: number;
}

/** Options of {@link collectOutputs}. */
export interface CollectOptions {
  /** Total bytes accepted; files are taken in path order until the next would exceed it. Default no cap. */
  readonly maxTotalBytes?: number;
}

/**
 * Problems with a job's output globs; empty when usable. Globs are relative to the outputs
 * directory: absolute globs and `..` segments are refused (they could only name files outside).
 * A leading `!` excludes. Pure.
 */
export function outputGlobIssues(globs: readonly string[], field = 'outputs'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (globs.length === 0) issues.push({ path: field, message: 'lists no glob', fix: 'e.g. ["**/*"] for everything in $GPUNET_OUTPUT_DIR' });
  globs.forEach((glob, i) => {
    const path = `${field}.${i}`;
    const body = typeof glob === 'string' && glob.startsWith('!') ? glob.slice(1) : glob;
    if (typeof body !== 'string' || body.length === 0 || body.includes('\0')) {
      issues.push({ path, message: 'must be a non-empty glob' });
    } else if (body.startsWith('/') || isAbsolute(body)) {
      issues.push({ path, message: `${glob} is absolute`, fix: 'write globs relative to $GPUNET_OUTPUT_DIR, e.g. "model/*.pt"' });
    } else if (body.split(/[\\/]/).includes('..')) {
      issues.push({ path, message: `${glob} climbs out with ".."`, fix: 'outputs are only collected from inside $GPUNET_OUTPUT_DIR' });
    }
  });
  return issues;
}

/**
 * Lists the files under `outputsDir` that match `globs` (picomatch syntax, dotfiles included,
 * `!glob` excludes), each with size and streamed sha256. Symlinks are never followed while
 * walking; a matching symlink is accepted only if its target is a regular file inside the
 * outputs directory, and otherwise reported in `rejected` with the reason.
 *
 * Meant to run after the run's process group is gone; files are opened with O_NOFOLLOW so a
 * path swapped for a symlink in the meantime is refused rather than read.
 *
 * @throws ValidationError for unusable globs.
 */
export async function collectOutputs(outputsDir: string, globs: readonly string[], opts: CollectOptions = {}): Promise<CollectedOutputs> {
  const issues = outputGlobIssues(globs);
  if (opts.maxTotalBytes !== undefined && (!Number.isSafeInteger(opts.maxTotalBytes) || opts.maxTotalBytes < 0)) {
    issues.push({ path: 'maxTotalBytes', message: 'must be a non-negative integer' });
  }
  if (issues.length > 0) throw new ValidationError('invalid output globs', issues);

  const include = picomatch(globs.filter((g) => !g.startsWith('!')), { dot: true });
  const excludes = globs.filter((g) => g.startsWith('!')).map((g) => g.slice(1));
  const exclude = excludes.length > 0 ? picomatch(excludes, { dot: true }) : () => false;
  const matches = (rel: string) => include(rel) && !exclude(rel);

  const root = await realpath(outputsDir);
  const files: OutputFile[] = [];
  const rejected: RejectedOutput[] = [];
  const reject = (path: string, reason: RejectionReason, message: string) => rejected.push({ path, reason, message });
  const candidates: { rel: string; abs: string; entry: Dirent }[] = [];
  await walk(root, '', {
    file: (rel, abs, entry) => {
      // Glob matching never sees such a name (`*` stops at a newline), so it would vanish without a word.
      if (CONTROL_CHAR.test(rel)) {
        const shown = JSON.stringify(rel).slice(1, -1);
        reject(shown, 'invalid_name', `${shown} was not kept: its name holds a control character; rename it without newlines or other control characters`);
      } else if (matches(rel)) candidates.push({ rel, abs, entry });
    },
    unreadable: (rel, err) => reject(rel, 'unreadable', `${rel} could not be listed (${err.code ?? err.message}); its files were not collected`),
  });
  candidates.sort((a, b) => byPath(a.rel, b.rel));

  let totalBytes = 0;
  let capReached = false;

  for (const { rel, abs, entry } of candidates) {
    let source = abs;
    if (entry.isSymbolicLink()) {
      const target = await symlinkTarget(root, abs);
      if (target.kind === 'dangling') {
        reject(rel, 'symlink_dangling', `${rel} is a symlink to nothing`);
        continue;
      }
      if (target.kind === 'outside') {
        reject(rel, 'symlink_outside', `${rel} is a symlink pointing outside the output directory; it was not followed`);
        continue;
      }
      source = target.path;
    } else if (!entry.isFile()) {
      reject(rel, 'not_regular_file', `${rel} is not a regular file`);
      continue;
    }
    const st = await lstat(source).catch(() => null);
    if (st === null || !st.isFile()) {
      reject(rel, entry.isSymbolicLink() ? 'not_regular_file' : 'changed', `${rel} is not a regular file`);
      continue;
    }
    if (capReached || (opts.maxTotalBytes !== undefined && totalBytes + st.size > opts.maxTotalBytes)) {
      capReached = true; // take files in path order, so which ones were kept is predictable
      reject(rel, 'size_cap', `${rel} (${st.size} bytes) was not kept: the outputs size cap of ${opts.maxTotalBytes} bytes was reached`);
      continue;
    }
    const hashed = await hashFile(source);
    if (hashed === null) {
      reject(rel, 'changed', `${rel} changed while outputs were collected`);
      continue;
    }
    totalBytes += hashed.size;
    files.push({ path: rel, size: hashed.size, sha256: hashed.sha256, sourcePath: source });
  }
  rejected.sort((a, b) => byPath(a.path, b.path));
  return { files, rejected, totalBytes };
}

/** Code-unit order: stable across locales, so the accepted set under a cap is reproducible. */
const byPath = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

interface WalkVisitor {
  file(rel: string, abs: string, entry: Dirent): void;
  unreadable(rel: string, err: NodeJS.ErrnoException): void;
}

/** Depth-first walk that never follows symlinks; `rel` is `/`-separated. Only the root must be listable. */
async function walk(dir: string, relDir: string, visitor: WalkVisitor): Promise<void> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (relDir === '') throw err;
    visitor.unreadable(relDir, err as NodeJS.ErrnoException);
    return;
  }
  for (const entry of entries) {
    const rel = relDir === '' ? entry.name : `${relDir}/${entry.name}`;
    const abs = join(dir, entry.name);
    if (entry.isDirectory()) await walk(abs, rel, visitor);
    else visitor.file(rel, abs, entry);
  }
}

/** Resolves a symlink fully and says whether it stays inside `root` (itself a real path). */
async function symlinkTarget(root: string, link: string): Promise<{ kind: 'dangling' } | { kind: 'outside' } | { kind: 'inside'; path: string }> {
  let target: string;
  try {
    target = await realpath(link);
  } catch {
    return { kind: 'dangling' };
  }
  const rel = relative(root, target);
  if (rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return { kind: 'outside' };
  return { kind: 'inside', path: target };
}

/**
 * Streams a file through sha256. O_NOFOLLOW refuses a path that became a symlink; O_NONBLOCK
 * keeps a path that became a FIFO from blocking the open; fstat then confirms a regular file.
 */
async function hashFile(path: string): Promise<{ size: number; sha256: string } | null> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    if (!(await handle.stat()).isFile()) return null;
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of handle.createReadStream({ autoClose: false, highWaterMark: 1024 * 1024 })) {
      hash.update(chunk as Buffer);
      size += (chunk as Buffer).length;
    }
    return { size, sha256: hash.digest('hex') };
  } finally {
    await handle.close();
  }
}
