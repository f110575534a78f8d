import { lstat, mkdir, readdir, chmod, chown, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { ValidationError, type FieldIssue } from '#errors';

/** The directories of one run attempt. All paths are absolute. */
export interface RunDirs {
  /** `<root>/runs/<jobId>/<attemptId>`: everything of this attempt lives below it. */
  readonly root: string;
  /** Staged inputs; read-only once {@link sealInputs} ran. */
  readonly inputs: string;
  /** The job's working directory, also its `HOME` and `TMPDIR`. */
  readonly work: string;
  /** What the job leaves here and matches its output globs is collected after the run. */
  readonly outputs: string;
  /** Saved and restored across attempts. */
  readonly checkpoints: string;
  /** Written by the agent (captured stdout/stderr), not exposed to the job through the environment. */
  readonly logs: string;
}

/**
 * Ids become path segments, so they are restricted to a conservative alphabet: letters, digits,
 * `_`, `-`, `.`, starting with a letter or digit (which also excludes `.` and `..`), at most 128.
 * UUIDs and ULIDs fit.
 */
const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** Issues with a job or attempt id used as a directory name; empty when both are safe. */
export function runIdIssues(jobId: string, attemptId: string): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [path, value] of [
    ['jobId', jobId],
    ['attemptId', attemptId],
  ] as const) {
    if (typeof value !== 'string' || !RUN_ID.test(value)) {
      issues.push({
        path,
        message: `${JSON.stringify(value)} cannot be used as a directory name`,
        fix: 'use 1–128 letters, digits, "_", "-" or ".", starting with a letter or digit (a UUID works)',
      });
    }
  }
  return issues;
}

/** Tolerates EEXIST, so preparing the same attempt twice is harmless. */
function existing(err: NodeJS.ErrnoException): void {
  if (err.code !== 'EEXIST') throw err;
}

/** Mode of every run directory: only the agent's user (and the job, which runs as it for now). */
const DIR_MODE = 0o700;

/**
 * Creates the directories of one run attempt under `<root>/runs/<jobId>/<attemptId>/`.
 * Idempotent: an agent restarting mid-attempt gets the same directories back.
 *
 * @throws ValidationError when an id could escape `root` or is not a plain name.
 */
export async function prepareRunDirs(root: string, jobId: string, attemptId: string): Promise<RunDirs> {
  const issues = runIdIssues(jobId, attemptId);
  if (issues.length > 0) throw new ValidationError('invalid run ids', issues);
  const base = resolve(root);
  const attemptRoot = join(base, 'runs', jobId, attemptId);
  // The alphabet above already prevents escaping; this guards the invariant against future edits.
  const rel = relative(base, attemptRoot);
  if (rel.startsWith('..') || isAbsolute(rel)) {
    throw new ValidationError('run directory would escape the agent root', [{ path: 'jobId', message: rel }]);
  }
  const dirs: RunDirs = {
    root: attemptRoot,
    inputs: join(attemptRoot, 'inputs'),
    work: join(attemptRoot, 'work'),
    outputs: join(attemptRoot, 'outputs'),
    checkpoints: join(attemptRoot, 'checkpoints'),
    logs: join(attemptRoot, 'logs'),
  };
  await mkdir(attemptRoot, { recursive: true, mode: DIR_MODE });
  await Promise.all([dirs.inputs, dirs.work, dirs.outputs, dirs.checkpoints, dirs.logs].map((dir) => mkdir(dir, { mode: DIR_MODE }).catch(existing)));
  return dirs;
}

/**
 * Makes the staged inputs read-only (`chmod -R a-w`), so a job cannot alter a dataset that a
 * node-local cache may share with the next job. Symlinks are skipped, never followed: chmod
 * through a link could change a file outside the run.
 *
 * Note: permission bits do not bind a job running as root; that needs an unprivileged job user
 * or a read-only bind mount.
 */
export async function sealInputs(inputsDir: string): Promise<void> {
  await walkNoFollow(inputsDir, async (path, mode) => {
    await chmod(path, mode & ~0o222);
  });
}

/**
 * Hands a run's directories to the unprivileged job user, so that it can use its own and no
 * other run's (call after {@link sealInputs}, and after anything the agent writes for the job,
 * e.g. a restored checkpoint):
 * - `work/`, `outputs/`, `checkpoints/` (and what is in them): owned by the job user, 0700;
 * - the attempt root: `root:<gid>` 0710 (the job passes through it, cannot list or write it);
 * - `inputs/`: `root:<gid>` 0550 (the job reads, never writes; other jobs cannot enter);
 * - `logs/`: stays the agent's (0700), the job cannot read or forge its own log;
 * - `runs/` and `runs/<jobId>/`: 0711, passable but not listable, so no job learns the others' ids.
 * Symlinks are never followed.
 */
export async function grantRunDirs(dirs: RunDirs, user: { uid: number; gid: number }): Promise<void> {
  for (const dir of [dirs.work, dirs.outputs, dirs.checkpoints]) {
    await walkNoFollow(dir, async (path) => {
      await chown(path, user.uid, user.gid);
    });
    await chmod(dir, 0o700);
  }
  await chown(dirs.inputs, 0, user.gid);
  await chmod(dirs.inputs, 0o550);
  await chown(dirs.root, 0, user.gid);
  await chmod(dirs.root, 0o710);
  const jobDir = dirname(dirs.root);
  await chmod(jobDir, 0o711);
  await chmod(dirname(jobDir), 0o711);
}

/**
 * Removes an attempt's directories, first giving directories back their owner write bit
 * (a sealed `inputs/` cannot otherwise be emptied by a non-root agent).
 */
export async function removeRunDirs(dirs: Pick<RunDirs, 'root'>): Promise<void> {
  try {
    await makeDirsWritable(dirs.root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await rm(dirs.root, { recursive: true, force: true });
}

/** Only directories matter for removal (unlinking needs write on the parent), so files are not visited. */
async function makeDirsWritable(dir: string): Promise<void> {
  const st = await lstat(dir);
  if (!st.isDirectory()) return;
  if ((st.mode & 0o700) !== 0o700) await chmod(dir, (st.mode & 0o7777) | 0o700);
  const entries = await readdir(dir, { withFileTypes: true });
  await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => makeDirsWritable(join(dir, e.name))));
}

/** Visits `dir` and everything below it (dirs before their contents), skipping symlinks. */
async function walkNoFollow(
  dir: string,
  visit: (path: string, mode: number) => Promise<void>,
): Promise<void> {
  const st = await lstat(dir);
  if (st.isSymbolicLink()) return;
  await visit(dir, st.mode & 0o7777);
  if (!st.isDirectory()) return;
  for (const entry of await readdir(dir)) {
    await walkNoFollow(join(dir, entry), visit);
  }
}
