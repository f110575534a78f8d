/**
 * The small types every message is built from: ids, times, money, hashes, sizes, GPUs.
 *
 * Limits worth knowing:
 * - Integers are JavaScript safe integers (|n| ≤ 2^53 − 1). Money is integer micro-units
 *   (1 unit = 1,000,000 micros), so one amount can reach about 9.007 × 10^9 units; durations
 *   are integer milliseconds (up to about 285,000 years). Nothing is a float.
 * - Times stamped by gpunet are UTC ISO-8601 with a `Z` (`2025-06-01T12:00:00.000Z`), so they
 *   sort as strings and compare without time-zone work.
 * - Ids are 1–64 characters of `A–Z a–z 0–9 _ -`, never dots or wildcards, so any id can be a
 *   NATS subject token or part of an event stream id.
 */
import { z } from 'zod';
import { fieldError } from './issues.js';

/** Characters allowed in every gpunet id (job, team, node, attempt). */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** An id schema; `field` and `example` feed the error message and its fix. */
function id(field: string, example: string, description: string) {
  const error = fieldError(field, 'must be 1–64 letters, digits, `_` or `-`, starting with a letter or digit', `use an id such as \`${example}\``);
  return z.string({ error }).regex(ID_PATTERN, { error }).describe(description);
}

export const JobId = id('jobId', 'job_01jz8k4m2n', 'Job id, assigned by intake at submission, e.g. `job_01jz8k4m2n`.');
export const EstimateId = id(
  'estimateId',
  'est_0193a5f2c1d87e6b9a4c2f1e0d3b5a79',
  'Estimate id, given by intake with `gpunet estimate` (`POST /v1/estimate`), e.g. `est_0193a5f2c1d87e6b9a4c2f1e0d3b5a79`; a submit may name it to be held to it.',
);
export const TeamId = id('team', 'team-ml', 'Team that owns the job and pays for it; taken from the API key, never from the spec.');
export const NodeId = id('nodeId', 'node-a100-01', 'Execution node (one agent process) id, e.g. `node-a100-01`.');
export const AttemptId = id(
  'attemptId',
  'job_01jz8k4m2n-a1',
  'One run attempt of a job: a requeued job gets a new attempt id. Billing is per attempt.',
);

/** Event ids are UUIDs: they are the idempotency key of the event store and `Nats-Msg-Id` on the bus. */
export const EventId = z
  .uuid({ error: fieldError('eventId', 'must be a UUID', 'generate one with a UUID v4 or v7 library') })
  .describe('Event id (UUID): the idempotency key in the event store and `Nats-Msg-Id` on the bus.');

const traceIdError = fieldError('correlation id', 'must be 1–128 characters', 'pass the id you received, or a new UUID');
/** Correlation and causation ids: opaque, set by whoever started the chain (often a UUID). */
export const TraceId = z.string({ error: traceIdError }).min(1, { error: traceIdError }).max(128, { error: traceIdError });

/** A UTC instant, ISO-8601 with `Z`, e.g. `2025-06-01T12:00:00.000Z`. */
export const Timestamp = z.iso
  .datetime({
    error: fieldError('time', 'must be a UTC ISO-8601 time ending in `Z`', 'write e.g. `2025-06-01T12:00:00.000Z` (`new Date().toISOString()`)'),
  })
  .describe('UTC instant, ISO-8601 with `Z`.');

/** A whole number ≥ 0; `field`, `unit` and `fix` feed the error message. */
function wholeNumber(field: string, unit: string, fix: string) {
  const error = fieldError(field, `must be a whole number of ${unit} ≥ 0`, fix);
  return z.int({ error }).min(0, { error });
}

/** A whole number of milliseconds, ≥ 0. */
export const DurationMs = wholeNumber('duration', 'milliseconds', 'write e.g. `5400000` for 1h30m').describe('Duration in whole milliseconds.');

/** Money: a whole number of micro-units (1 unit = 1,000,000), ≥ 0, a safe integer. */
export const Micros = wholeNumber('amount', 'micro-units', 'write e.g. `2500000` for 2.50').describe(
  'Money in integer micro-units (1 unit = 1,000,000 micros); a safe integer, so at most about 9.007e9 units.',
);

/** A byte count, ≥ 0. */
export const ByteCount = wholeNumber('size', 'bytes', 'use the file size in bytes, e.g. from `stat -c %s FILE`').describe('Size in bytes.');

const currencyError = fieldError('currency', 'must be a three-letter ISO 4217 code', 'write e.g. `EUR` or `USD`');
/** ISO 4217 currency code. */
export const Currency = z
  .string({ error: currencyError })
  .regex(/^[A-Z]{3}$/, { error: currencyError })
  .describe('ISO 4217 currency code of the micro-unit amounts, e.g. `EUR`.');

const sha256Error = fieldError('sha256', 'must be 64 lower-case hex characters', 'use the output of `sha256sum FILE` (first column)');
/** Lower-case hex sha256, the content address of a blob. */
export const Sha256 = z
  .string({ error: sha256Error })
  .regex(/^[0-9a-f]{64}$/, { error: sha256Error })
  .describe('Content address: lower-case hex sha256 of the bytes.');

const gpuCountError = fieldError('gpus', 'must be a whole number ≥ 1', 'write e.g. `gpus: 2`');
/** GPU count of a request or a hold, ≥ 1. */
export const GpuCount = z.int({ error: gpuCountError }).min(1, { error: gpuCountError }).describe('Number of GPUs, a whole number ≥ 1.');

const gpuModelError = fieldError(
  'gpuModel',
  'must be 1–64 characters without leading or trailing spaces',
  'write the model as nodes report it, e.g. `gpuModel: A100-80GB`',
);
/** GPU model name as nodes report it (`nvidia-smi` name or the declared slot model). */
export const GpuModel = z
  .string({ error: gpuModelError })
  .regex(/^\S(?:.{0,62}\S)?$/, { error: gpuModelError })
  .describe('GPU model name as nodes report it, e.g. `A100-80GB`; declared slots use the name given to the agent.');

const gpuIndexError = fieldError('GPU index', 'must be a whole number ≥ 0', 'use the index `nvidia-smi` shows, e.g. `0`');
/** Index of one GPU on its node, as `CUDA_VISIBLE_DEVICES` counts them. */
export const GpuIndex = z.int({ error: gpuIndexError }).min(0, { error: gpuIndexError }).describe('GPU index on its node (as in `CUDA_VISIBLE_DEVICES`).');

/** The GPUs of one hold: at least one, no index twice. */
export const GpuIndices = z
  .array(GpuIndex)
  .min(1, { error: fieldError('gpuIndices', 'must list at least one GPU', 'list the held GPU indices, e.g. `[0, 1]`') })
  .refine((xs) => new Set(xs).size === xs.length, {
    error: fieldError('gpuIndices', 'must not list a GPU twice', 'list each held GPU index once'),
  })
  .describe('GPU indices on the node, each once; the job sees them through `CUDA_VISIBLE_DEVICES`.');

const decimalError = fieldError(
  'number',
  'must be a non-negative integer written as decimal text',
  'write e.g. `"42"` (a string, so 64-bit values survive JSON)',
);
/** A non-negative integer that may exceed 2^53 (event store revisions and positions), as decimal text. */
export const DecimalString = z
  .string({ error: decimalError })
  .regex(/^(?:0|[1-9][0-9]{0,19})$/, { error: decimalError })
  .describe('Non-negative 64-bit integer as decimal text (JSON numbers lose precision above 2^53).');

/** How one run attempt ended. */
export const JOB_OUTCOMES = ['completed', 'failed', 'timeout', 'cancelled', 'node_lost', 'deadline'] as const;
export type JobOutcome = (typeof JOB_OUTCOMES)[number];

/** Caps at which the agent stops a job (`JobFinished.limit`): its disk, or its memory. */
export const JOB_LIMITS = ['disk_limit', 'memory_limit'] as const;
export type JobLimit = (typeof JOB_LIMITS)[number];
export const JobLimit = z
  .enum(JOB_LIMITS, { error: fieldError('limit', `must be one of ${JOB_LIMITS.join(', ')}`, 'use one of the listed limits') })
  .describe('The cap the job was stopped at: `disk_limit` (more disk than its `resources.disk`), `memory_limit` (a process killed at its memory cap).');
export const JobOutcome = z
  .enum(JOB_OUTCOMES, { error: fieldError('outcome', `must be one of ${JOB_OUTCOMES.join(', ')}`, 'use one of the listed outcomes') })
  .describe(
    'How the attempt ended: `completed` (exit 0), `failed` (non-zero exit or could not start), `timeout` (time limit hit, killed), ' +
      '`cancelled` (on request), `node_lost` (the node vanished; a platform fault), `deadline` (could not finish before the deadline).',
  );

const humanTextError = fieldError('message', 'must be text of at most 2000 characters', 'shorten the text');
/** A short human-readable explanation (logs, UIs); never parsed by programs. */
export const HumanText = z.string({ error: humanTextError }).max(2000, { error: humanTextError });
