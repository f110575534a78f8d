import { Command, InvalidArgumentError } from 'commander';

/**
 * The agent's command line: each flag sets the environment variable of the same meaning, so
 * flags and environment configure one typed config (flags win). Pure apart from reading `env`.
 *
 * @returns the environment to start with.
 * @throws CommanderError (exits with usage) for bad flags; Error when the node id and
 *   GPUNET_INSTANCE disagree (the instance names the consumer, the node id the streams).
 */
export function agentEnvironment(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const program = new Command('gpunet-execution')
    .description('gpunet execution node agent: runs the jobs placed on this node')
    .option('--gpus <n>', 'GPU slots to declare when nvidia-smi finds none (env GPUNET_GPUS, default 1)', positiveInt)
    .option('--gpu-model <name>', 'model name of the declared slots (env GPUNET_GPU_MODEL, default sim-gpu)')
    .option('--node-id <id>', 'this node\'s id (env GPUNET_NODE_ID, default node-<hostname>)')
    .option('--work-dir <dir>', 'run directories and input cache (env GPUNET_WORK_DIR, default .gpunet/nodes/<node-id>)')
    .exitOverride((err) => {
      // --help and --version end the process normally; anything else is a usage error.
      process.exit(err.exitCode);
    })
    .parse([...argv], { from: 'user' });
  const opts = program.opts<{ gpus?: number; gpuModel?: string; nodeId?: string; workDir?: string }>();

  const out: NodeJS.ProcessEnv = { ...env };
  if (opts.gpus !== undefined) out.GPUNET_GPUS = String(opts.gpus);
  if (opts.gpuModel !== undefined) out.GPUNET_GPU_MODEL = opts.gpuModel;
  if (opts.workDir !== undefined) out.GPUNET_WORK_DIR = opts.workDir;
  if (opts.nodeId !== undefined) out.GPUNET_NODE_ID = opts.nodeId;
  // The node id is the instance id: an instance given alone names the node.
  out.GPUNET_NODE_ID ??= out.GPUNET_INSTANCE;
  if (out.GPUNET_INSTANCE !== undefined && out.GPUNET_NODE_ID !== out.GPUNET_INSTANCE) {
    throw new Error(`GPUNET_INSTANCE (${out.GPUNET_INSTANCE}) and the node id (${out.GPUNET_NODE_ID}) differ; set only one of them`);
  }
  return out;
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError('a whole number ≥ 1, e.g. 4');
  return n;
}
