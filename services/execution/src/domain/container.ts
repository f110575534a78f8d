/**
 * Container work: the command line that runs a job's OCI image through `docker` or `podman`
 * with the same confinement a script gets (job user, no network unless asked, memory and
 * process caps, the run's directories and nothing else). Pure: the caller pulls the image and
 * resolves its digest first.
 */
import type { ContainerRuntime } from '#contracts';

/** Where the run's directories appear inside the container. */
export const CONTAINER_DIRS = {
  inputs: '/gpunet/inputs',
  work: '/gpunet/work',
  outputs: '/gpunet/outputs',
  checkpoints: '/gpunet/checkpoints',
} as const;

/** Everything {@link containerRunArgs} needs. */
export interface ContainerRun {
  readonly runtime: ContainerRuntime;
  /** Container name, unique per attempt, so the agent can kill and remove it by name. */
  readonly name: string;
  /** The image by the digest it resolved to (`sha256:…`), so what runs is what was recorded. */
  readonly imageId: string;
  /** Overrides the image's entrypoint; empty: the image's own. */
  readonly command?: readonly string[];
  readonly args: readonly string[];
  /** The job's env plus the platform's, with `GPUNET_*_DIR` pointing inside the container. */
  readonly env: Readonly<Record<string, string>>;
  /** Host directories of the run. */
  readonly dirs: { readonly inputs: string; readonly work: string; readonly outputs: string; readonly checkpoints: string };
  /** Job user (uid:gid); absent: the image's user. */
  readonly user?: { readonly uid: number; readonly gid: number };
  /** Whether the job may use the network. */
  readonly network: boolean;
  readonly memoryBytes?: number;
  readonly maxProcesses?: number;
  /** GPU indices to expose; empty or absent: none. Only for real devices (declared slots have nothing to expose). */
  readonly gpus?: readonly number[];
}

/**
 * `run` arguments for the runtime (after the binary name): removed on exit, an init process that
 * forwards signals and reaps, no capabilities, no privilege gain, the run's directories mounted
 * (inputs read-only), and the image by its id.
 */
export function containerRunArgs(c: ContainerRun): string[] {
  const args = ['run', '--rm', '--init', '--name', c.name, '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--network', c.network ? 'bridge' : 'none'];
  if (c.user) args.push('--user', `${c.user.uid}:${c.user.gid}`);
  if (c.memoryBytes !== undefined) args.push('--memory', String(c.memoryBytes), '--memory-swap', String(c.memoryBytes));
  if (c.maxProcesses !== undefined) args.push('--pids-limit', String(c.maxProcesses));
  args.push(
    '--volume', `${c.dirs.inputs}:${CONTAINER_DIRS.inputs}:ro`,
    '--volume', `${c.dirs.work}:${CONTAINER_DIRS.work}`,
    '--volume', `${c.dirs.outputs}:${CONTAINER_DIRS.outputs}`,
    '--volume', `${c.dirs.checkpoints}:${CONTAINER_DIRS.checkpoints}`,
    '--workdir', CONTAINER_DIRS.work,
  );
  for (const [name, value] of Object.entries(c.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) args.push('--env', `${name}=${value}`);
  if (c.gpus !== undefined && c.gpus.length > 0) {
    if (c.runtime === 'docker') args.push('--gpus', `"device=${c.gpus.join(',')}"`);
    else for (const i of c.gpus) args.push('--device', `nvidia.com/gpu=${i}`);
  }
  const [entrypoint, ...rest] = c.command ?? [];
  if (entrypoint !== undefined) args.push('--entrypoint', entrypoint);
  args.push(c.imageId, ...rest, ...c.args);
  return args;
}

/** The platform variables of a container run: the same names a script gets, with paths inside the container. */
export function containerEnv(hostEnv: Readonly<Record<string, string>>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(hostEnv)) {
    // PATH, HOME and TMPDIR are the image's business; the host's would be wrong inside it.
    if (k === 'PATH' || k === 'HOME' || k === 'TMPDIR') continue;
    env[k] = v;
  }
  env.GPUNET_INPUT_DIR = CONTAINER_DIRS.inputs;
  env.GPUNET_OUTPUT_DIR = CONTAINER_DIRS.outputs;
  env.GPUNET_CHECKPOINT_DIR = CONTAINER_DIRS.checkpoints;
  env.GPUNET_WORK_DIR = CONTAINER_DIRS.work;
  env.HOME = CONTAINER_DIRS.work;
  return env;
}

/** An image id as `docker image inspect --format {{.Id}}` prints it, checked: `sha256:<64 hex>`, else undefined. */
export function parseImageId(text: string): string | undefined {
  const id = text.trim();
  return /^sha256:[0-9a-f]{64}$/.test(id) ? id : undefined;
}

/** The message of a container job on a node without a runtime: names what is missing. */
export function missingRuntimeMessage(image: string, nodeId: string): string {
  return `work.kind container (${image}) needs a container runtime (docker or podman), and node ${nodeId} has none that answers`;
}
