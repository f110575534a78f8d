/**
 * `gpunet submit` without a job file: flags become a job file spec (inputs as `from:` local
 * paths, uploaded by the SDK). The same flags override a job file's fields. Pure: the caller
 * reads the script file.
 */
import { MAX_INLINE_SCRIPT_CHARS, type FieldIssue } from '#contracts';
import type { JobFileSpec } from '#sdk';
import { basename } from 'node:path';
import { UsageError } from './errors.js';

/** The flags of `gpunet submit`, as commander hands them over (text, repeatable ones as lists). */
export interface SubmitFlags {
  script?: string;
  interpreter?: string;
  name?: string;
  gpus?: string;
  gpuModel?: string;
  timeLimit?: string;
  deadline?: string;
  network?: boolean;
  /** `name=path`, repeatable. */
  input?: readonly string[];
  /** Output glob, repeatable. */
  output?: readonly string[];
  /** `NAME=value`, repeatable. */
  env?: readonly string[];
}

/** Time limit when neither the flags nor the file say. */
export const DEFAULT_TIME_LIMIT = '10m';

/** Which flag sets a spec field, so an error about `request.gpus` can say `--gpus`. */
const FLAG_OF_FIELD: ReadonlyArray<[RegExp, string]> = [
  [/^name$/, '--name'],
  [/^request\.gpus$/, '--gpus'],
  [/^request\.gpuModel$/, '--gpu-model'],
  [/^request\.timeLimit$/, '--time-limit'],
  [/^request\.deadline$/, '--deadline'],
  [/^work\.interpreter$/, '--interpreter'],
  [/^work\.script/, '--script'],
  [/^work\.env/, '--env'],
  [/^data\.inputs/, '--input'],
  [/^outputs/, '--output'],
];

/** The flag behind a spec field path, e.g. `request.timeLimit` → `--time-limit`. */
export function flagForField(path: string): string | undefined {
  return FLAG_OF_FIELD.find(([re]) => re.test(path))?.[1];
}

function parseCount(flag: string, text: string, issues: FieldIssue[]): number | undefined {
  if (/^[1-9]\d{0,5}$/.test(text.trim())) return Number(text.trim());
  issues.push({ path: flag, message: `must be a whole number ≥ 1, got \`${text}\``, fix: `write e.g. \`${flag} 2\`` });
  return undefined;
}

function parsePairs(flag: string, values: readonly string[], example: string, issues: FieldIssue[]): Array<[string, string]> {
  return values.flatMap((v): Array<[string, string]> => {
    const at = v.indexOf('=');
    if (at <= 0) {
      issues.push({ path: flag, message: `\`${v}\` is not \`${example.split('=')[0]}=${example.split('=')[1]}\``, fix: `write e.g. \`${flag} ${example}\`` });
      return [];
    }
    return [[v.slice(0, at), v.slice(at + 1)]];
  });
}

/** Inputs from `--input name=path`: the job finds each at `$GPUNET_INPUT_DIR/<name>`. */
function inputsOf(values: readonly string[], issues: FieldIssue[]): Record<string, unknown>[] {
  return parsePairs('--input', values, 'dataset=./data', issues).map(([name, from]) => {
    if (from === '') issues.push({ path: '--input', message: `input \`${name}\` names no path`, fix: `write e.g. \`--input ${name}=./data\`` });
    return { name, path: name, from };
  });
}

function throwIfAny(issues: FieldIssue[]): void {
  if (issues.length > 0) throw new UsageError(issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues);
}

/**
 * A job spec from flags alone. `script` is the file `--script` names, read by the caller: a
 * script up to the inline limit travels in the spec itself; a bigger one becomes an input
 * named `script` placed at its file name.
 */
export function specFromFlags(flags: SubmitFlags, script: { path: string; text: string }): JobFileSpec {
  const issues: FieldIssue[] = [];
  const inputs = inputsOf(flags.input ?? [], issues);
  let source: Record<string, unknown>;
  if (script.text.length <= MAX_INLINE_SCRIPT_CHARS) source = { inline: script.text };
  else {
    const file = basename(script.path);
    source = { path: file };
    inputs.push({ name: 'script', path: file, kind: 'file', from: script.path });
  }
  const gpus = parseCount('--gpus', flags.gpus ?? '1', issues);
  const env = Object.fromEntries(parsePairs('--env', flags.env ?? [], 'LEARNING_RATE=0.1', issues));
  throwIfAny(issues);
  return {
    ...(flags.name ? { name: flags.name } : {}),
    work: {
      kind: 'script',
      script: source,
      ...(flags.interpreter ? { interpreter: flags.interpreter } : {}),
      ...(Object.keys(env).length > 0 ? { env } : {}),
    },
    ...(inputs.length > 0 ? { data: { inputs } } : {}),
    request: {
      gpus,
      ...(flags.gpuModel ? { gpuModel: flags.gpuModel } : {}),
      timeLimit: flags.timeLimit ?? DEFAULT_TIME_LIMIT,
      ...(flags.deadline ? { deadline: flags.deadline } : {}),
      ...(flags.network ? { network: true } : {}),
    },
    ...(flags.output && flags.output.length > 0 ? { outputs: { globs: [...flags.output] } } : {}),
  };
}

function mapping(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/**
 * A job file's spec with the flags given on the command line taking precedence: name, request
 * fields, env (merged), outputs (replaced), inputs (added). `--script` and `--interpreter` belong
 * to flag-only submits and are refused here.
 */
export function applyOverrides(spec: JobFileSpec, flags: SubmitFlags): JobFileSpec {
  const issues: FieldIssue[] = [];
  if (flags.script) issues.push({ path: '--script', message: 'cannot be combined with a job file', fix: 'set `work.script` in the job file, or drop the job file and use flags only' });
  if (flags.interpreter) issues.push({ path: '--interpreter', message: 'cannot be combined with a job file', fix: 'set `work.interpreter` in the job file' });
  const gpus = flags.gpus === undefined ? undefined : parseCount('--gpus', flags.gpus, issues);
  const env = Object.fromEntries(parsePairs('--env', flags.env ?? [], 'LEARNING_RATE=0.1', issues));
  const extraInputs = inputsOf(flags.input ?? [], issues);
  throwIfAny(issues);

  const out: JobFileSpec = { ...spec };
  if (flags.name) out.name = flags.name;
  const request = { ...mapping(spec.request) };
  if (gpus !== undefined) request.gpus = gpus;
  if (flags.gpuModel) request.gpuModel = flags.gpuModel;
  if (flags.timeLimit) request.timeLimit = flags.timeLimit;
  if (flags.deadline) request.deadline = flags.deadline;
  if (flags.network) request.network = true;
  out.request = request;
  if (Object.keys(env).length > 0) {
    const work = mapping(spec.work);
    out.work = { ...work, env: { ...mapping(work.env), ...env } };
  }
  if (flags.output && flags.output.length > 0) out.outputs = { ...mapping(spec.outputs), globs: [...flags.output] };
  if (extraInputs.length > 0) {
    const data = mapping(spec.data);
    const existing = Array.isArray(data.inputs) ? data.inputs : [];
    out.data = { ...data, inputs: [...existing, ...extraInputs] };
  }
  return out;
}
