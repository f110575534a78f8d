import { jobEnvIssues, RESERVED_ENV_NAMES, RESERVED_ENV_PREFIX } from '#contracts';
import type { RunDirs } from './dirs.js';

/** Names a job's own `env` may not set (the contract's list: intake refuses them at submit already). */
export const RESERVED_ENV = RESERVED_ENV_NAMES;
export { RESERVED_ENV_PREFIX };

/**
 * Problems with a job's own environment variables; empty when it can be used as is. The
 * contract's rule, the one intake's schema applies at submit: a spec accepted there is never
 * refused here for its env (this check stays for specs recorded before a rule was added).
 */
export { jobEnvIssues };

/** Host variables copied into a run by default. Nothing else of the agent's environment reaches a job. */
export const DEFAULT_PASS_ENV: readonly string[] = ['PATH', 'LANG'];
/** `PATH` when the host has none to pass. */
export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** What {@link buildRunEnv} needs to know about one run. */
export interface RunEnvInput {
  readonly jobId: string;
  readonly attemptId: string;
  readonly dirs: RunDirs;
  /** GPU indices held for the attempt, in the order the job sees them as devices 0, 1, … */
  readonly gpus: readonly number[];
  /** A multi-node gang: this part's rank and every node in rank order. Absent: one node (rank 0 of 1). */
  readonly gang?: { readonly rank: number; readonly nodes: readonly string[] };
  /** The job's own variables; they override the passed-through host values, never the platform's. */
  readonly jobEnv?: Readonly<Record<string, string>>;
  /** The agent's environment; only the names in `passEnv` are read. */
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Host variable names copied through. Default {@link DEFAULT_PASS_ENV}. */
  readonly passEnv?: readonly string[];
}

/**
 * The complete environment of a run, built from an allow-list: never the agent's own settings
 * or secrets. Layers, later wins: passed host names → neutral defaults (`HOME`/`TMPDIR` = work
 * dir, `TZ=UTC`) → the job's `env` → the platform's `GPUNET_*` and `CUDA_VISIBLE_DEVICES`.
 * Pure. The caller validates `jobEnv` with {@link jobEnvIssues} first.
 */
export function buildRunEnv(input: RunEnvInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of input.passEnv ?? DEFAULT_PASS_ENV) {
    const value = input.hostEnv?.[name];
    if (value !== undefined) env[name] = value;
  }
  env.PATH ??= DEFAULT_PATH;
  env.LANG ??= 'C.UTF-8';
  env.HOME = input.dirs.work;
  env.TMPDIR = input.dirs.work;
  env.TZ = 'UTC';
  Object.assign(env, input.jobEnv);
  // An empty CUDA_VISIBLE_DEVICES hides every GPU, which is right for a job holding none.
  env.CUDA_VISIBLE_DEVICES = input.gpus.join(',');
  env.GPUNET_JOB_ID = input.jobId;
  env.GPUNET_ATTEMPT_ID = input.attemptId;
  env.GPUNET_INPUT_DIR = input.dirs.inputs;
  env.GPUNET_OUTPUT_DIR = input.dirs.outputs;
  env.GPUNET_CHECKPOINT_DIR = input.dirs.checkpoints;
  env.GPUNET_WORK_DIR = input.dirs.work;
  // The parts of a multi-node job find each other by these (rank 0 writes the outputs).
  env.GPUNET_NODE_RANK = String(input.gang?.rank ?? 0);
  env.GPUNET_NUM_NODES = String(input.gang?.nodes.length ?? 1);
  if (input.gang) env.GPUNET_NODES = input.gang.nodes.join(',');
  return env;
}
