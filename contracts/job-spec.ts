/**
 * The job spec: what to run (the work), what it reads (the data), what it needs (the request)
 * and what to keep (the outputs).
 *
 * Two forms of one shape:
 * - {@link JobSpecInput} is what a person writes (`job.yaml`, `POST /v1/jobs`, `SubmitJob`):
 *   strict (an unknown field such as `gpu:` is an error, not silently dropped), durations as
 *   text (`timeLimit: 2h`), every field described, every error saying what to fix.
 * - {@link JobSpec} is what messages carry (inside `JobSubmitted`, `GetJob`): defaults filled,
 *   durations as integer ms (`timeLimitMs`), and tolerant of fields added later, so that an
 *   additive change never breaks an older consumer.
 * {@link toJobSpec} turns the first into the second.
 */
import { z } from 'zod';
import { DURATION_PATTERN, parseDuration } from './duration.js';
import { fieldError, formatIssues, strictObject, withFix, type FieldIssue } from './issues.js';
import { ByteCount, DurationMs, GpuCount, GpuModel, Sha256 } from './primitives.js';

/** Longest time limit a job may ask for. */
export const MAX_TIME_LIMIT_MS = 30 * 86_400_000;
/** Longest an input may be kept for reuse after the job. */
export const MAX_KEEP_MS = 366 * 86_400_000;
/** Largest inline script, in characters; bigger scripts belong among the inputs. */
export const MAX_INLINE_SCRIPT_CHARS = 256 * 1024;
/** Output globs used when a spec names none: everything the job writes to `GPUNET_OUTPUT_DIR`. */
export const DEFAULT_OUTPUT_GLOBS: readonly string[] = ['**'];

/** A relative path that cannot climb out of its directory: no leading `/`, no `..` segment. */
const RELATIVE_PATH = /^(?!\/)(?!(?:.*\/)?\.\.(?:\/|$)).{1,1024}$/;
/**
 * Names a job's own `env` may not set: the agent owns the GPU binding (`NVIDIA_VISIBLE_DEVICES`
 * is what container runtimes read). Intake refuses them at submit and the agent again before a run.
 */
export const RESERVED_ENV_NAMES = ['CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES'] as const;
/** Every variable name with this prefix is the platform's. */
export const RESERVED_ENV_PREFIX = 'GPUNET_';
/** Longest variable name a job may set. */
export const MAX_ENV_NAME_CHARS = 128;
/** A variable name as a shell and `execve` take it: letters, digits, `_`, not starting with a digit. */
const ENV_NAME_SHAPE = new RegExp(`^[A-Za-z_][A-Za-z0-9_]{0,${MAX_ENV_NAME_CHARS - 1}}$`);
/** Environment variable names the job may set: well formed and none of the reserved ones. */
const ENV_NAME = new RegExp(`^(?!${RESERVED_ENV_PREFIX})(?!(?:${RESERVED_ENV_NAMES.join('|')})$)${ENV_NAME_SHAPE.source.slice(1)}`);
/** A value `execve` can pass: no NUL character (it would end the string there). */
const ENV_VALUE = /^[^\0]*$/;

/**
 * Problems with a job's own environment variables, each naming `<field>.<name>` and its fix;
 * empty when the agent can use them as they are. The one rule for both sides: the spec schema
 * (intake, at submit) refuses exactly these, and the agent checks them again before a run, so
 * nothing accepted at submit is refused on a node.
 */
export function jobEnvIssues(env: Readonly<Record<string, unknown>> | undefined, field = 'env'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [name, value] of Object.entries(env ?? {})) {
    const path = `${field}.${name}`;
    if (!ENV_NAME_SHAPE.test(name)) {
      issues.push({ path, message: `is not a valid variable name`, fix: `use letters, digits and "_", not starting with a digit, at most ${MAX_ENV_NAME_CHARS} characters` });
    } else if (!ENV_NAME.test(name)) {
      issues.push({ path, message: `is set by the platform (${RESERVED_ENV_PREFIX}*, ${RESERVED_ENV_NAMES.join(', ')})`, fix: `remove it; the agent sets ${RESERVED_ENV_PREFIX}* and the GPU binding itself` });
    }
    if (typeof value !== 'string' || !ENV_VALUE.test(value)) {
      issues.push({ path, message: 'must be a string without NUL characters', fix: 'quote numbers and remove NUL characters (`\\0`) from the value' });
    }
  }
  return issues;
}

/** True when a relative path names something below its directory, not the directory itself (`.`, `./`, `a/./..`-free forms). */
function namesAnEntry(path: string): boolean {
  return path.split('/').some((segment) => segment !== '' && segment !== '.');
}
const INPUT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A deadline counted from submission: `+<duration>`, e.g. `+6h`. */
const RELATIVE_DEADLINE = new RegExp(`^\\+${DURATION_PATTERN.source.slice(1)}`);
/**
 * A deadline phrase or a local time, resolved at intake in the team's time zone: `tonight`,
 * `end of day`, `tomorrow 09:00`, `today 18:00`, `end of week`, `in 6h`, `2026-07-01 18:00`
 * (an optional leading `by`). Only the shape is checked here; intake resolves it.
 */
const DEADLINE_PHRASE =
  /^\s*(?:by\s+)?(?:tonight|end\s+of\s+day|eod|end\s+of\s+week|eow|tomorrow(?:\s+\d{1,2}:\d{2})?|today\s+\d{1,2}:\d{2}|in\s+(?:\d{1,9}\s*(?:ms|s|m|h|d)\s*)+|\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(?::\d{2})?)\s*$/i;

/** Builds an object schema: strict for what people write, tolerant for what messages carry. */
type ObjectFactory = <S extends z.core.$ZodLooseShape>(shape: S, what: string) => z.ZodObject<S, z.core.$strip>;
// Strict and strip objects infer the same types; only unknown-key handling differs.
const strict: ObjectFactory = (shape, what) => strictObject(shape, what) as unknown as z.ZodObject<typeof shape, z.core.$strip>;
const tolerant: ObjectFactory = (shape) => z.object(shape);

// ── the work ────────────────────────────────────────────────────────────────────────────

function stringList(field: string, example: string, description: string) {
  const key = field.slice(field.lastIndexOf('.') + 1);
  const error = fieldError(field, 'must be a list of strings', `quote each item, e.g. \`${key}: ${example}\``);
  return z.array(z.string({ error }), { error }).max(1000, { error: fieldError(field, 'may hold at most 1000 items', 'pass fewer items') }).describe(description);
}

const envError = fieldError(
  'env',
  'must map variable names (letters, digits, `_`; not starting with a digit; not `GPUNET_*`, `CUDA_VISIBLE_DEVICES` or `NVIDIA_VISIBLE_DEVICES`, which the agent sets) to string values',
  'write e.g. `env: { LEARNING_RATE: "0.1" }` (quote numbers)',
);
const envValueError = fieldError('env value', 'must not hold a NUL character (the agent could not pass it to the job)', 'remove the NUL characters (`\\0`) from the value');
// The same rule as jobEnvIssues (its unit test holds the two together); here as patterns, so the JSON Schema says it too.
const Env = z
  .record(z.string().regex(ENV_NAME, { error: envError }), z.string({ error: envError }).regex(ENV_VALUE, { error: envValueError }), { error: envError })
  .describe('Environment variables for the job, on top of a scrubbed environment. Values are strings without NUL: quote numbers.');

function workSchema(obj: ObjectFactory) {
  const pathError = fieldError(
    'work.script.path',
    'must be a relative path without `..`',
    'give the script\'s path inside your inputs, e.g. `script: { path: code/train.sh }`',
  );
  const inlineError = fieldError(
    'work.script.inline',
    `must be the script text, at most ${MAX_INLINE_SCRIPT_CHARS} characters`,
    'put a bigger script among your inputs and use `script: { path: ... }`',
  );
  const ScriptSource = z
    .union(
      [
        obj(
          {
            path: z
              .string({ error: pathError })
              .regex(RELATIVE_PATH, { error: pathError })
              .describe('Path of the script inside the job\'s inputs (relative to `GPUNET_INPUT_DIR`), e.g. `code/train.sh`.'),
          },
          'work.script',
        ),
        obj(
          {
            inline: z
              .string({ error: inlineError })
              .min(1, { error: inlineError })
              .max(MAX_INLINE_SCRIPT_CHARS, { error: inlineError })
              .describe('The script text itself; the agent writes it to a file in the run\'s work directory.'),
          },
          'work.script',
        ),
      ],
      {
        error: fieldError(
          'work.script',
          'must have exactly one of `path` (a script file among your inputs) or `inline` (the script text)',
          'write e.g. `script: { path: code/train.sh }` or `script: { inline: "python train.py" }`',
        ),
      },
    )
    .describe('Where the script comes from: `{ path }` inside the inputs, or `{ inline }` text.');

  const interpreterError = fieldError('work.interpreter', 'must be a program name or path', 'write e.g. `interpreter: python3`');
  const ScriptWork = obj(
    {
      kind: z.literal('script').describe('A script run as a process on the node.'),
      script: ScriptSource,
      interpreter: z
        .string({ error: interpreterError })
        .regex(/^\S{1,256}$/, { error: interpreterError })
        .optional()
        .describe('Program that runs the script, e.g. `bash` or `python3`. Default: the script\'s `#!` line, else `sh`.'),
      args: stringList('work.args', '["--epochs", "3"]', 'Arguments passed to the script.').default([]),
      env: Env.default({}),
    },
    'work',
  ).describe('Run a script as a process on the node.');

  const imageError = fieldError('work.image', 'must be a container image reference without spaces', 'write e.g. `image: ghcr.io/acme/train:1.4`');
  const ContainerWork = obj(
    {
      kind: z.literal('container').describe('A container image run on the node.'),
      image: z
        .string({ error: imageError })
        .regex(/^\S{1,512}$/, { error: imageError })
        .describe('Container image reference, e.g. `ghcr.io/acme/train:1.4` (pin a digest for reproducible runs).'),
      archive: obj(
        {
          sha256: Sha256.describe('sha256 of the image archive (`podman save` / `docker save` / OCI archive) as `gpunet image push` stored it in the team\'s blobs.'),
          size: ByteCount.describe('Size in bytes of the archive.'),
          keep: Keep.optional().describe('How long the node keeps the staged archive after the job, e.g. `1d`, so later jobs start from its cache; absent: removed at release when no job needs it.'),
        },
        'work.archive',
      )
        .optional()
        .describe(
          'The image as data: an archive the team pushed (`gpunet image push`), staged to the node like an input (content-addressed, cached per node, before compute is held) and loaded there; `image` is then its name for people. Absent: `image` is pulled by the node when it does not hold it.',
        ),
      command: stringList('work.command', '["python", "train.py"]', 'Overrides the image\'s entrypoint; default: the image\'s own.').optional(),
      args: stringList('work.args', '["--epochs", "3"]', 'Arguments passed after the command.').default([]),
      env: Env.default({}),
    },
    'work',
  ).describe('Run a container image on the node.');

  return z
    .discriminatedUnion('kind', [ScriptWork, ContainerWork], {
      error: fieldError('work', 'must have `kind: script` or `kind: container`', 'write e.g. `work: { kind: script, script: { path: train.sh } }`'),
    })
    .describe('What to run: a script (`kind: script`) or a container image (`kind: container`).');
}

// ── the data ────────────────────────────────────────────────────────────────────────────

function inputFields() {
  const nameError = fieldError(
    'input name',
    'must be 1–64 letters, digits, `.`, `_` or `-`, starting with a letter or digit',
    'write e.g. `name: dataset`',
  );
  const pathError = fieldError('input path', 'must be a relative path without `..`', 'write where the job should find it, e.g. `path: data/train`');
  const kindError = fieldError('input kind', 'must be `file` or `folder`', 'write `kind: file` or `kind: folder`');
  return {
    name: z
      .string({ error: nameError })
      .regex(INPUT_NAME, { error: nameError })
      .describe('Name of the input, unique within the job, e.g. `dataset`.'),
    path: z
      .string({ error: pathError })
      .regex(RELATIVE_PATH, { error: pathError })
      .refine(namesAnEntry, {
        error: fieldError('input path', 'names the inputs directory itself', 'give the input a place inside it, e.g. `path: data` (its files then appear under `$GPUNET_INPUT_DIR/data`)'),
      })
      .describe('Where the input appears, relative to `GPUNET_INPUT_DIR` (read-only), e.g. `data/train`; not `.` (the directory itself).'),
    kind: z
      .enum(['file', 'folder'], { error: kindError })
      .default('file')
      .describe('`file`: sha256 addresses the file\'s bytes. `folder`: sha256 addresses the folder manifest (see FolderManifest).'),
    sha256: Sha256.describe('Content address: sha256 of the file, or of the folder manifest for a folder.'),
    size: ByteCount.describe('Size in bytes of the blob that sha256 addresses (the file, or the folder manifest).'),
  };
}

/** Where a relative path lands: `./data/`, `data//` and `data` are one place (`data`). */
function placeOf(path: string): string {
  return path
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .join('/');
}

/**
 * Inputs the agent could not place as written, found at submit: one place written twice (the
 * second would silently replace the first) and an input below a file input (nothing can be placed
 * inside a file; staging would fail on every node).
 */
function placementIssues(inputs: readonly { path: string; kind?: string }[], ctx: z.core.$RefinementCtx): void {
  const places = new Map<string, number>();
  const files = new Map<string, number>();
  inputs.forEach((item, i) => {
    const place = placeOf(item.path);
    const first = places.get(place);
    if (first !== undefined && inputs[first]!.path !== item.path) {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'path'],
        message: withFix(`input path \`${item.path}\` names the same place as input ${first} (\`${inputs[first]!.path}\`); the one staged last would replace the other`, 'give each input its own path'),
      });
    }
    if (first === undefined) places.set(place, i);
    if (item.kind !== 'folder' && !files.has(place)) files.set(place, i);
  });
  inputs.forEach((item, i) => {
    const segments = placeOf(item.path).split('/');
    for (let depth = 1; depth < segments.length; depth++) {
      const file = files.get(segments.slice(0, depth).join('/'));
      if (file === undefined) continue;
      ctx.addIssue({
        code: 'custom',
        path: [i, 'path'],
        message: withFix(`input path \`${item.path}\` lies below input ${file}, a file at \`${inputs[file]!.path}\`; nothing can be placed inside a file`, `move one of them, or make input ${file} a folder`),
      });
      break;
    }
  });
}

function inputList<T extends z.ZodType<{ name: string; path: string; kind?: string }>>(input: T, strictPlaces = false) {
  const listError = fieldError('data.inputs', 'must be a list of inputs', 'write e.g. `inputs: [{ name: dataset, path: data, sha256: ..., size: ... }]`');
  return z
    .array(input, { error: listError })
    .max(10_000, { error: fieldError('data.inputs', 'may hold at most 10000 inputs', 'pack small files into a folder input') })
    .superRefine((inputs, ctx) => {
      for (const field of ['name', 'path'] as const) {
        const seen = new Map<string, number>();
        inputs.forEach((item, i) => {
          const first = seen.get(item[field]);
          if (first === undefined) seen.set(item[field], i);
          else
            ctx.addIssue({
              code: 'custom',
              path: [i, field],
              message: withFix(`input ${field} \`${item[field]}\` is already used by input ${first}`, `give each input its own ${field}`),
            });
        });
      }
      // Only what people write: a spec recorded before this rule must still read back.
      if (strictPlaces) placementIssues(inputs, ctx);
    })
    .describe('Files and folders the job reads, by content address; staged before compute is held (staging is not billed).');
}

// ── the outputs ─────────────────────────────────────────────────────────────────────────

function outputsSchema(obj: ObjectFactory) {
  const globError = fieldError('outputs.globs', 'must be a list of relative glob patterns without `..`', 'write e.g. `globs: ["model/**", "metrics.json"]`');
  const maxError = fieldError('outputs.maxBytes', 'must be a whole number of bytes ≥ 1', 'write e.g. `maxBytes: 10000000000` for 10 GB');
  return obj(
    {
      globs: z
        .array(z.string({ error: globError }).regex(RELATIVE_PATH, { error: globError }), { error: globError })
        .min(1, { error: globError })
        .max(1000, { error: globError })
        .describe('Glob patterns, relative to `GPUNET_OUTPUT_DIR`, of the files to keep after the run, e.g. `model/**`.'),
      maxBytes: z
        .int({ error: maxError })
        .min(1, { error: maxError })
        .optional()
        .describe('Most bytes of output to keep; files beyond it are skipped and the result is marked truncated.'),
    },
    'outputs',
  ).describe('Which files of the run to keep.');
}

// ── the request and the whole spec, as people write it ─────────────────────────────────────

const timeLimitError = fieldError(
  'timeLimit',
  `must be a duration such as \`2h\`, \`90m\` or \`1h30m\` (units ms, s, m, h, d), more than 0 and at most 30d`,
  'write e.g. `timeLimit: 2h`',
);
/** A time limit as people write it, e.g. `2h`. */
export const TimeLimit = z
  .string({ error: timeLimitError })
  .regex(DURATION_PATTERN, { error: timeLimitError })
  .refine((text) => {
    const ms = parseDuration(text);
    return ms !== undefined && ms > 0 && ms <= MAX_TIME_LIMIT_MS;
  }, { error: timeLimitError })
  .describe('Longest the job may run once started, e.g. `2h`, `90m`, `1h30m` (units ms, s, m, h, d; at most 30d). At the limit it gets SIGTERM, then SIGKILL.');

const keepError = fieldError('keep', 'must be a duration such as `24h` or `7d`, at most 366d', 'write e.g. `keep: 7d`');
const Keep = z
  .string({ error: keepError })
  .regex(DURATION_PATTERN, { error: keepError })
  .refine((text) => (parseDuration(text) ?? Infinity) <= MAX_KEEP_MS, { error: keepError })
  .describe('Keep the staged input this long after the job, so related jobs reuse it, e.g. `7d`. Default: removed at release.');

const deadlineError = fieldError(
  'deadline',
  'must be an ISO-8601 time, `+<duration>` / `in <duration>` from submission, or a phrase',
  'write e.g. `deadline: 2025-07-01T18:00:00Z`, `+6h`, `in 90m`, `tonight`, `end of day`, `tomorrow 09:00` or `end of week` (local times in your team\'s time zone)',
);
/** When the job must be done by, kept as written; resolution to an instant happens at intake. */
export const Deadline = z
  .union([z.iso.datetime({ offset: true }), z.string().regex(RELATIVE_DEADLINE), z.string().max(64).regex(DEADLINE_PHRASE)], { error: deadlineError })
  .describe(
    'When the job must be finished by, as written: an ISO-8601 time (`2025-07-01T18:00:00Z`), a duration from submission (`+6h`, `in 90m`), ' +
      'or a phrase in the team\'s time zone (`tonight`, `end of day`, `tomorrow 09:00`, `today 18:00`, `end of week` = Friday 23:59, `2025-07-01 18:00`); ' +
      'intake echoes it as an instant (`deadlineAt`). ' +
      'A job that cannot finish in time ends with outcome `deadline`.',
  );

const networkError = fieldError('network', 'must be `true` or `false`', 'write `network: true` to allow network access');
const Network = z.boolean({ error: networkError }).default(false).describe('Whether the job may use the network. Default `false`: no network.');

// ── unattended runs: warning before the limit, retries, checkpoints ───────────────────────────

/** Signals a job may ask to be warned with before its time limit. */
export const WARNING_SIGNALS = ['SIGUSR1', 'SIGUSR2', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGALRM', 'SIGWINCH'] as const;
/** Most attempts a retry policy may allow. */
export const MAX_RETRY_ATTEMPTS = 10;

const warnSignalError = fieldError('request.warning.signal', `must be one of ${WARNING_SIGNALS.join(', ')}`, 'write e.g. `signal: SIGUSR1`');
const WarningSignal = z.enum(WARNING_SIGNALS, { error: warnSignalError }).describe('Signal sent to the job\'s process group, e.g. `SIGUSR1`.');
const warnBeforeError = fieldError('request.warning.before', 'must be a duration such as `60s`, shorter than the time limit', 'write e.g. `before: 60s`');
const WarningInput = strictObject(
  {
    signal: WarningSignal.default('SIGUSR1'),
    before: z
      .string({ error: warnBeforeError })
      .regex(DURATION_PATTERN, { error: warnBeforeError })
      .refine((t) => (parseDuration(t) ?? 0) > 0, { error: warnBeforeError })
      .describe('How long before the time limit the signal comes, e.g. `60s`.'),
  },
  'request.warning',
).describe('A signal before the time limit, so the job can checkpoint and exit; then SIGTERM at the limit, grace, SIGKILL.');

function retrySchema(obj: ObjectFactory) {
  const codesError = fieldError('retry.exitCodes', 'must be a list of exit codes from 1 to 255', 'write e.g. `exitCodes: [75, 137]`');
  const maxError = fieldError('retry.maxAttempts', `must be a whole number from 2 to ${MAX_RETRY_ATTEMPTS}`, 'write e.g. `maxAttempts: 3`');
  return obj(
    {
      exitCodes: z
        .array(z.int({ error: codesError }).min(1, { error: codesError }).max(255, { error: codesError }), { error: codesError })
        .min(1, { error: codesError })
        .max(255, { error: codesError })
        .describe('Exit codes after which the job is run again (from its last checkpoint), e.g. `[75]`. Other failures end the job.'),
      maxAttempts: z
        .int({ error: maxError })
        .min(2, { error: maxError })
        .max(MAX_RETRY_ATTEMPTS, { error: maxError })
        .describe('Most attempts that may end in one of `exitCodes`, the first one included; attempts lost with their node do not count.'),
    },
    'retry',
  ).describe('Run the job again when it fails with one of these exit codes, up to maxAttempts.');
}

const intervalError = fieldError('checkpoint.interval', 'must be a duration of at least 10s, e.g. `10m`', 'write e.g. `interval: 10m`');
const CheckpointInput = strictObject(
  {
    interval: z
      .string({ error: intervalError })
      .regex(DURATION_PATTERN, { error: intervalError })
      .refine((t) => (parseDuration(t) ?? 0) >= 10_000, { error: intervalError })
      .describe('How often `GPUNET_CHECKPOINT_DIR` is saved while the job runs, e.g. `10m` (it is always saved when the job ends).'),
  },
  'checkpoint',
).describe('Saving `GPUNET_CHECKPOINT_DIR`; a later attempt of the job starts with the last saved checkpoint.');

// ── resources: memory and disk caps ─────────────────────────────────────────────────────

/** Units a size may be written in; binary (`GiB`) and decimal (`GB`) both, bare numbers are bytes. */
const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 2 ** 10, m: 1e6, mb: 1e6, mib: 2 ** 20, g: 1e9, gb: 1e9, gib: 2 ** 30, t: 1e12, tb: 1e12, tib: 2 ** 40 };
const SIZE_PATTERN = /^\s*(\d{1,15}(?:\.\d{1,6})?)\s*([a-zA-Z]{0,3})\s*$/;

/** Bytes of a size as people write it (`16GiB`, `500MB`, `1073741824`), or `undefined`. Pure. */
export function parseSize(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text >= 0 ? text : undefined;
  const m = SIZE_PATTERN.exec(text);
  if (!m) return undefined;
  const unit = SIZE_UNITS[m[2]!.toLowerCase()];
  if (unit === undefined) return undefined;
  const bytes = Math.floor(Number(m[1]) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

function sizeSchema(field: string, example: string, description: string) {
  const error = fieldError(field, 'must be a size of at least 1MiB, such as `16GiB`, `500MB` or a number of bytes', `write e.g. \`${field.slice(field.lastIndexOf('.') + 1)}: ${example}\``);
  return z
    .union([z.string(), z.int()], { error })
    .refine((v) => (parseSize(v) ?? 0) >= 2 ** 20, { error })
    .describe(description);
}

const ResourcesInput = strictObject(
  {
    memory: sizeSchema('resources.memory', '16GiB', 'Most memory the job may use (its processes and what it keeps in /tmp and /dev/shm), e.g. `16GiB`; beyond it the kernel kills a process of the job. Default: the node\'s memory per GPU times the GPUs asked for; at most the node\'s limit.').optional(),
    disk: sizeSchema('resources.disk', '100GiB', 'Most disk the job may fill (work, outputs, checkpoints, /tmp), e.g. `100GiB`; beyond it the job is stopped (`failed`, limit `disk_limit`). Default: the node\'s disk per GPU times the GPUs asked for; at most the node\'s limit.').optional(),
  },
  'resources',
).describe('Caps on memory and disk; each defaults to the node\'s share per GPU.');

const nameError = fieldError('name', 'must be 1–128 characters', 'write e.g. `name: resnet50-finetune`');
const JobName = z
  .string({ error: nameError })
  .min(1, { error: nameError })
  .max(128, { error: nameError })
  .describe('A label for people, e.g. `resnet50-finetune`; not unique.');

const RequestInput = strictObject(
  {
    gpus: GpuCount.describe('Number of GPUs, a whole number ≥ 1, e.g. `gpus: 2`. All on one node.'),
    gpuModel: GpuModel.optional().describe('Required GPU model, e.g. `A100-80GB`. Default: any model.'),
    timeLimit: TimeLimit,
    deadline: Deadline.optional(),
    network: Network,
    warning: WarningInput.optional(),
  },
  'request',
).describe('What the job needs: GPUs, model, time limit, deadline, network.');

const datasetError = fieldError('dataset', 'must be 1–64 letters, digits, `.`, `_` or `-`, starting with a letter or digit', 'write e.g. `dataset: imagenet-2012`');
/** A team's name for an input it reuses across jobs. */
const DatasetName = z
  .string({ error: datasetError })
  .regex(INPUT_NAME, { error: datasetError })
  .describe(
    'Name the input as one of the team\'s datasets, e.g. `imagenet-2012`: it is kept for related jobs (in the object store and in node caches) ' +
      'until a later job of the team names the dataset with other bytes. Without it (and without `keep`) the staged input is removed when no job needs it.',
  );

const InputRefInput = strictObject({ ...inputFields(), keep: Keep.optional(), dataset: DatasetName.optional() }, 'each input').describe(
  'One input: a file or folder by content address, placed at `path` under `GPUNET_INPUT_DIR`.',
);

/** The job spec as people write it (`job.yaml`, HTTP, `SubmitJob`). Parse, then {@link toJobSpec}. */
export const JobSpecInput = strictObject(
  {
    name: JobName.optional(),
    work: workSchema(strict),
    data: strictObject({ inputs: inputList(InputRefInput, true).default([]) }, 'data')
      .default({ inputs: [] })
      .describe('What the job reads.'),
    request: RequestInput,
    outputs: outputsSchema(strict).default({ globs: [...DEFAULT_OUTPUT_GLOBS] }),
    retry: retrySchema(strict).optional(),
    checkpoint: CheckpointInput.optional(),
    resources: ResourcesInput.optional(),
  },
  'the job spec',
).describe('A gpunet job: the work, the data, the request and the outputs.');
/** A job spec after parsing (defaults filled, durations still as text). */
export type JobSpecInput = z.output<typeof JobSpecInput>;

// ── the spec as messages carry it ────────────────────────────────────────────────────────

const InputRef = z
  .object({
    ...inputFields(),
    keepMs: DurationMs.optional().describe('How long to keep the staged input after the job, in ms; absent: removed at release.'),
    dataset: DatasetName.optional(),
  })
  .describe('One input: a file or folder by content address.');
export type InputRef = z.output<typeof InputRef>;

/** The job spec as events and replies carry it: defaults filled, durations in ms. */
export const JobSpec = z
  .object({
    name: JobName.optional(),
    work: workSchema(tolerant),
    data: z.object({ inputs: inputList(InputRef) }).describe('What the job reads.'),
    request: z
      .object({
        gpus: GpuCount,
        gpuModel: GpuModel.optional().describe('Required GPU model; absent: any model.'),
        timeLimitMs: DurationMs.min(1).max(MAX_TIME_LIMIT_MS).describe('Longest the job may run once started, in ms.'),
        deadline: Deadline.optional(),
        network: z.boolean().describe('Whether the job may use the network.'),
        warning: z
          .object({ signal: WarningSignal, beforeMs: DurationMs.min(1).describe('How long before the time limit, in ms.') })
          .optional()
          .describe('A signal before the time limit; absent: none.'),
      })
      .describe('What the job needs.'),
    outputs: outputsSchema(tolerant),
    retry: retrySchema(tolerant).optional(),
    checkpoint: z
      .object({ intervalMs: DurationMs.min(1).describe('How often the checkpoint directory is saved while the job runs, in ms.') })
      .optional()
      .describe('Saving the checkpoint directory; absent: the node\'s default interval.'),
    resources: z
      .object({
        memoryBytes: ByteCount.min(1).optional().describe('Memory cap in bytes; absent: the node\'s default per GPU.'),
        diskBytes: ByteCount.min(1).optional().describe('Disk cap in bytes; absent: the node\'s default per GPU.'),
      })
      .optional()
      .describe('Memory and disk caps the job asked for; absent: the node\'s defaults.'),
  })
  .describe('A job spec as messages carry it: defaults filled, durations in integer ms.');
export type JobSpec = z.output<typeof JobSpec>;
export type Work = JobSpec['work'];

/** Name of the input that carries a container job's image archive (`work.archive`); no input of the job may use it. */
export const IMAGE_ARCHIVE_INPUT = 'gpunet-image';
/** Where the image archive is staged, under the inputs directory. */
export const imageArchivePath = (sha256: string) => `.gpunet-image/${sha256}.tar`;

/**
 * Normalizes a parsed {@link JobSpecInput}: durations become integer ms, and a container image
 * archive (`work.archive`) becomes one more input ({@link IMAGE_ARCHIVE_INPUT}), so it is checked,
 * staged, cached, placed near and removed exactly as the job's data is.
 */
export function toJobSpec(input: JobSpecInput): JobSpec {
  const { timeLimit, warning, ...request } = input.request;
  const { checkpoint, resources, ...rest } = input;
  const memoryBytes = resources?.memory === undefined ? undefined : parseSize(resources.memory);
  const diskBytes = resources?.disk === undefined ? undefined : parseSize(resources.disk);
  return {
    ...rest,
    data: {
      inputs: [
        ...input.data.inputs.map(({ keep, ...rest }) => (keep === undefined ? rest : { ...rest, keepMs: durationMs(keep) })),
        ...(input.work.kind === 'container' && input.work.archive !== undefined
          ? [
              {
                name: IMAGE_ARCHIVE_INPUT,
                path: imageArchivePath(input.work.archive.sha256),
                kind: 'file' as const,
                sha256: input.work.archive.sha256,
                size: input.work.archive.size,
                ...(input.work.archive.keep !== undefined && { keepMs: durationMs(input.work.archive.keep) }),
              },
            ]
          : []),
      ],
    },
    request: {
      ...request,
      timeLimitMs: durationMs(timeLimit),
      ...(warning !== undefined && { warning: { signal: warning.signal, beforeMs: durationMs(warning.before) } }),
    },
    ...(checkpoint !== undefined && { checkpoint: { intervalMs: durationMs(checkpoint.interval) } }),
    ...((memoryBytes !== undefined || diskBytes !== undefined) && {
      resources: { ...(memoryBytes !== undefined && { memoryBytes }), ...(diskBytes !== undefined && { diskBytes }) },
    }),
  };
}

function durationMs(text: string): number {
  const ms = parseDuration(text);
  // Unreachable after JobSpecInput parsed the text; kept so a hand-built input cannot smuggle NaN.
  if (ms === undefined) throw new RangeError(`not a duration: ${text}`);
  return ms;
}

/** Validates a spec as people write it and normalizes it, or says what to fix in each bad field. */
export function parseJobSpec(raw: unknown): { ok: true; spec: JobSpec } | { ok: false; issues: FieldIssue[] } {
  const parsed = JobSpecInput.safeParse(raw);
  if (!parsed.success) return { ok: false, issues: formatIssues(parsed.error) };
  const reserved = parsed.data.data.inputs.findIndex((i) => i.name === IMAGE_ARCHIVE_INPUT || placeOf(i.path).split('/')[0] === '.gpunet-image');
  if (reserved >= 0) {
    return {
      ok: false,
      issues: [{ path: `data.inputs.${reserved}`, message: `the name \`${IMAGE_ARCHIVE_INPUT}\` and the path \`.gpunet-image\` are kept for the container image archive (\`work.archive\`)`, fix: 'give the input another name and path' }],
    };
  }
  const spec = toJobSpec(parsed.data);
  if (spec.request.warning !== undefined && spec.request.warning.beforeMs >= spec.request.timeLimitMs) {
    return {
      ok: false,
      issues: [{ path: 'request.warning.before', message: 'must be shorter than the time limit', fix: `give a duration below ${parsed.data.request.timeLimit}, e.g. \`before: 60s\`` }],
    };
  }
  return { ok: true, spec };
}
