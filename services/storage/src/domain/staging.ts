/**
 * Staging decision: given what the object store says about each input of a submitted job,
 * either every input is there and intact (`InputsStaged`, placement may now hold compute) or
 * the job cannot run (`StagingFailed`, naming what is wrong and what to do).
 */
import { IMAGE_ARCHIVE_INPUT, type InputsStaged, type JobSubmitted, type StagingFailed } from '#contracts';

/** What the object store says about one input (or, for a folder, about one of its blobs). */
export type InputCheck =
  | { input: string; status: 'ok' }
  | { input: string; status: 'missing'; sha256: string; size: number; file?: string }
  | { input: string; status: 'size_mismatch'; sha256: string; expected: number; actual: number; file?: string }
  | { input: string; status: 'checksum_mismatch'; sha256: string; recorded: string | undefined; file?: string }
  | { input: string; status: 'manifest_invalid'; sha256: string; detail: string };

export type StagingProblem = Exclude<InputCheck, { status: 'ok' }>;

export type StagingDecision = { type: 'InputsStaged'; data: InputsStaged } | { type: 'StagingFailed'; data: StagingFailed };

const REASON: Record<StagingProblem['status'], StagingFailed['reason']> = {
  missing: 'blob_missing',
  size_mismatch: 'size_mismatch',
  checksum_mismatch: 'checksum_mismatch',
  manifest_invalid: 'manifest_invalid',
};

/** Problems listed by name in the message; the rest are counted. */
const LISTED_PROBLEMS = 5;
/** HumanText's bound. */
const MAX_MESSAGE = 2000;

/**
 * Decides the staging outcome of a job from the checks of its inputs (any order; problems are
 * reported in the spec's input order). The reason is that of the first problem; the message
 * names each problem and how to fix it.
 */
export function decideStaging(job: JobSubmitted, checks: readonly InputCheck[], now: Date): StagingDecision {
  const order = new Map(job.spec.data.inputs.map((input, i) => [input.name, i]));
  const problems = checks
    .filter((c): c is StagingProblem => c.status !== 'ok')
    .sort((a, b) => (order.get(a.input) ?? Infinity) - (order.get(b.input) ?? Infinity));
  const at = now.toISOString();
  if (problems.length === 0) {
    const inputs = job.spec.data.inputs.map((i) => ({ name: i.name, sha256: i.sha256, size: i.size }));
    return {
      type: 'InputsStaged',
      data: { jobId: job.jobId, inputs, totalBytes: inputs.reduce((n, i) => n + i.size, 0), stagedAt: at },
    };
  }
  const first = problems[0]!;
  const lines = problems.slice(0, LISTED_PROBLEMS).map(describe);
  if (problems.length > LISTED_PROBLEMS) lines.push(`and ${problems.length - LISTED_PROBLEMS} more`);
  const message = `${lines.join('; ')}. ${fixFor(first)}`;
  return {
    type: 'StagingFailed',
    data: {
      jobId: job.jobId,
      inputName: first.input,
      reason: REASON[first.status],
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message,
      failedAt: at,
    },
  };
}

function what(p: StagingProblem): string {
  if (p.input === IMAGE_ARCHIVE_INPUT) return 'the container image archive (`work.archive`)';
  return 'file' in p && p.file !== undefined ? `file \`${p.file}\` of input \`${p.input}\`` : `input \`${p.input}\``;
}

function describe(p: StagingProblem): string {
  switch (p.status) {
    case 'missing':
      return `${what(p)} (sha256 ${p.sha256}, ${p.size} bytes) is not in the object store`;
    case 'size_mismatch':
      return `${what(p)} (sha256 ${p.sha256}) is stored with ${p.actual} bytes, the spec says ${p.expected}`;
    case 'checksum_mismatch':
      return `${what(p)} is stored under sha256 ${p.sha256} but its bytes hash to ${p.recorded ?? 'an unreadable digest'}`;
    case 'manifest_invalid':
      return `input \`${p.input}\` (sha256 ${p.sha256}) is not a valid folder manifest: ${p.detail}`;
  }
}

function fixFor(p: StagingProblem): string {
  switch (p.status) {
    case 'missing':
      if (p.input === IMAGE_ARCHIVE_INPUT) return 'Push the image first (`gpunet image push image.tar`, or `--local NAME` for an image on this machine), put the sha256 and size it prints in `work.archive`, and submit the job again.';
      return 'Upload the inputs (`gpunet submit` does it before submitting, skipping what is already stored) and submit the job again.';
    case 'size_mismatch':
      return 'Check the size in the spec (`stat -c %s FILE`), or upload the file again, and submit the job again.';
    case 'checksum_mismatch':
      return 'Upload the original file again (the stored copy is damaged) and submit the job again.';
    case 'manifest_invalid':
      return 'Upload the folder with `gpunet` so its manifest is written for you, and use the sha256 and size it prints.';
  }
}
