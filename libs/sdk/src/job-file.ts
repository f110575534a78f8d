/**
 * Job files as people keep them next to their data. A `job.yaml` is a {@link JobSpecInput} in
 * which an input may name a local file or folder with `from:` instead of its content address:
 *
 * ```yaml
 * data:
 *   inputs:
 *     - { name: dataset, path: dataset, kind: folder, from: ./data }   # uploaded, then addressed
 *     - { name: weights, path: w.bin, sha256: 3b4c…, size: 1048576 }   # already stored
 * ```
 *
 * `from` is relative to the job file's directory. {@link checkJobFile} validates everything
 * else before any byte moves; {@link resolveInputs} swaps each `from` for the address the
 * upload produced. Pure: no file or network access here.
 */
import { formatIssues, JobSpecInput, type FieldIssue } from '#contracts';
import YAML from 'yaml';
import { JobFileError } from './errors.js';

/** A job spec as written, possibly with `from:` inputs: JSON-like data, checked by {@link checkJobFile}. */
export type JobFileSpec = Record<string, unknown>;

/** One input still to upload. */
export interface PendingInput {
  /** Position in `data.inputs`. */
  index: number;
  name: string;
  /** The local path as written (resolve it against the job file's directory). */
  from: string;
  /** The kind as written; absent: decided by what `from` is on disk. */
  kind?: 'file' | 'folder';
}

/** The address an upload produced for one pending input. */
export interface ResolvedInput {
  index: number;
  kind: 'file' | 'folder';
  sha256: string;
  size: number;
}

// Placeholders that satisfy the contract, so that every other field is checked before uploading.
const PLACEHOLDER = { sha256: '0'.repeat(64), size: 0 };

/** Parses YAML (or JSON) text of a job file; a syntax error names the line. */
export function parseJobFileText(text: string, source = 'job file'): JobFileSpec {
  let doc: unknown;
  try {
    doc = YAML.parse(text, { prettyErrors: true });
  } catch (err) {
    const message = (err as Error).message;
    throw new JobFileError(`${source} is not valid YAML: ${message}`, [{ path: '', message: `not valid YAML: ${message}`, fix: 'fix the YAML syntax at the line shown' }], { cause: err });
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new JobFileError(`${source} must be a mapping with \`work\`, \`request\` and optionally \`name\`, \`data\`, \`outputs\``, [
      { path: '', message: 'must be a mapping of fields', fix: 'start the file with `work:` and `request:` sections' },
    ]);
  }
  return doc as JobFileSpec;
}

function inputsOf(spec: JobFileSpec): unknown[] | undefined {
  const data = spec.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
  const inputs = (data as Record<string, unknown>).inputs;
  return Array.isArray(inputs) ? inputs : undefined;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Checks a job file against the contract as if every `from:` input were already uploaded, and
 * lists those inputs. Throws {@link JobFileError} with one issue per bad field (paths as the
 * server would name them, e.g. `request.gpus`), so nothing is uploaded for a spec that would be refused.
 */
export function checkJobFile(spec: JobFileSpec, source = 'job file'): PendingInput[] {
  const issues: FieldIssue[] = [];
  const pending: PendingInput[] = [];
  const inputs = inputsOf(spec);
  const substituted = inputs?.map((item, index) => {
    if (!isMapping(item) || !('from' in item)) return item;
    const { from, ...rest } = item;
    const at = `data.inputs[${index}]`;
    if (typeof from !== 'string' || from.trim() === '') {
      issues.push({ path: `${at}.from`, message: 'must be the path of a local file or folder', fix: 'write e.g. `from: ./data`' });
    }
    if ('sha256' in rest || 'size' in rest) {
      issues.push({
        path: at,
        message: 'has both `from` and a content address (`sha256`/`size`)',
        fix: 'keep `from` to upload the local copy, or `sha256` and `size` for a blob already stored',
      });
    }
    if (typeof from === 'string' && from.trim() !== '') {
      const kind = rest.kind === 'file' || rest.kind === 'folder' ? rest.kind : undefined;
      pending.push({ index, name: typeof rest.name === 'string' ? rest.name : `#${index}`, from, ...(kind ? { kind } : {}) });
    }
    return { ...rest, ...PLACEHOLDER };
  });
  const candidate = substituted ? { ...spec, data: { ...(spec.data as object), inputs: substituted } } : spec;
  const parsed = JobSpecInput.safeParse(candidate);
  if (!parsed.success) issues.push(...formatIssues(parsed.error));
  if (issues.length > 0) {
    throw new JobFileError(`${source} cannot be submitted: ${issues.map((i) => `${i.path || '(spec)'}: ${i.message}`).join('; ')}`, issues);
  }
  return pending;
}

/** The spec with each uploaded input's `from` replaced by its kind, sha256 and size. */
export function resolveInputs(spec: JobFileSpec, resolved: readonly ResolvedInput[]): JobFileSpec {
  const inputs = inputsOf(spec);
  if (!inputs || resolved.length === 0) return spec;
  const byIndex = new Map(resolved.map((r) => [r.index, r]));
  const filled = inputs.map((item, index) => {
    const r = byIndex.get(index);
    if (!r || !isMapping(item)) return item;
    const { from: _from, ...rest } = item;
    return { ...rest, kind: r.kind, sha256: r.sha256, size: r.size };
  });
  return { ...spec, data: { ...(spec.data as object), inputs: filled } };
}

/** The `from:` inputs still in a spec (after {@link resolveInputs}, none should be). */
export function unresolvedInputs(spec: JobFileSpec): string[] {
  return (inputsOf(spec) ?? []).flatMap((item, i) => (isMapping(item) && 'from' in item ? [`data.inputs[${i}]`] : []));
}
