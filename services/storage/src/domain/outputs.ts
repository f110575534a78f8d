/**
 * Recording an attempt's outputs: every output file and log blob the agent names must be in the
 * object store under the job's team with the stated size and sha256; then `OutputsStored` lists
 * them. One record per attempt: a retried request finds the first one.
 */
import type { OutputsStored, StoreOutputs } from '#contracts';

/** What the object store says about one blob the request names. */
export type OutputCheck =
  | { status: 'ok' }
  | { status: 'missing' }
  | { status: 'size_mismatch'; actual: number }
  | { status: 'checksum_mismatch'; recorded: string | undefined };

/** One thing wrong with the request, by field (`files.3`, `logs.0`), with its fix. */
export interface OutputIssue {
  path: string;
  message: string;
  fix: string;
}

export type OutputsDecision = { ok: true; data: OutputsStored } | { ok: false; issues: OutputIssue[] };

/** The blobs a request names, files first then logs, in the order `decideOutputs` expects checks. */
export function outputBlobs(cmd: StoreOutputs): { path: string; label: string; sha256: string; size: number }[] {
  return [
    ...cmd.files.map((f, i) => ({ path: `files.${i}`, label: `output \`${f.path}\``, sha256: f.sha256, size: f.size })),
    ...cmd.logs.map((l, i) => ({ path: `logs.${i}`, label: `${l.stream} log`, sha256: l.sha256, size: l.size })),
  ];
}

/** Decides from one check per {@link outputBlobs} entry. */
export function decideOutputs(cmd: StoreOutputs, checks: readonly OutputCheck[], now: Date): OutputsDecision {
  const blobs = outputBlobs(cmd);
  if (checks.length !== blobs.length) throw new RangeError(`expected ${blobs.length} checks, got ${checks.length}`);
  const issues: OutputIssue[] = [];
  checks.forEach((check, i) => {
    const blob = blobs[i]!;
    switch (check.status) {
      case 'ok':
        return;
      case 'missing':
        issues.push({ path: blob.path, message: `${blob.label} (sha256 ${blob.sha256}) is not in the object store of team ${cmd.team}`, fix: 'upload it before asking storage to record it' });
        return;
      case 'size_mismatch':
        issues.push({ path: blob.path, message: `${blob.label} is stored with ${check.actual} bytes, the request says ${blob.size}`, fix: 'upload the file again and send its real size' });
        return;
      case 'checksum_mismatch':
        issues.push({ path: blob.path, message: `${blob.label} is stored under sha256 ${blob.sha256} but its bytes hash to ${check.recorded ?? 'an unreadable digest'}`, fix: 'upload the file again' });
        return;
    }
  });
  if (issues.length > 0) return { ok: false, issues };
  return {
    ok: true,
    data: {
      jobId: cmd.jobId,
      attemptId: cmd.attemptId,
      files: cmd.files.map((f) => ({ path: f.path, sha256: f.sha256, size: f.size })),
      totalBytes: cmd.files.reduce((n, f) => n + f.size, 0),
      truncated: cmd.truncated,
      rejected: cmd.rejected.map((r) => ({ path: r.path, reason: r.reason, message: r.message })),
      logs: cmd.logs.map((l) => ({ stream: l.stream, sha256: l.sha256, size: l.size })),
      storedAt: now.toISOString(),
    },
  };
}

/** The attempt's OutputsStored among the events of a job's storage stream, if recorded. */
export function recordedOutputs(events: readonly { type: string; data: unknown }[], attemptId: string): OutputsStored | undefined {
  const found = events.find((e) => e.type === 'OutputsStored' && (e.data as OutputsStored).attemptId === attemptId);
  return found?.data as OutputsStored | undefined;
}

/** True once the job's staging was decided (InputsStaged or StagingFailed) in its storage stream. */
export function stagingDecided(events: readonly { type: string }[]): boolean {
  return events.some((e) => e.type === 'InputsStaged' || e.type === 'StagingFailed');
}
