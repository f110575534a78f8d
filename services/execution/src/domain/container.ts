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
  /** How the held GPUs reach the container (see {@link gpuAccess}); absent: none. */
  readonly gpus?: GpuAccess;
  /**
   * Arguments before `run`: podman's OCI runtime and cgroup manager for this host (see
   * {@link podmanGlobalArgs}). Empty for docker, whose daemon has its own.
   */
  readonly globalArgs?: readonly string[];
  /** `RLIMIT_NOFILE` of the container (soft = hard). podman's default is above the hard limit of many hosts, where the run fails on `setrlimit`. */
  readonly openFiles?: number;
  /**
   * Size in bytes of each private tmpfs (`/tmp`, `/var/tmp`, `/dev/shm`) over the read-only root
   * file system: the image cannot be written to, so whatever the job writes is either in the
   * run's measured directories or in these bounded, memory-charged mounts.
   */
  readonly tmpfsBytes?: number;
}

/**
 * How a container gets its GPUs: NVIDIA's CDI names (`nvidia.com/gpu=N`, the toolkit's spec
 * injects the device nodes and driver libraries), the raw device nodes, or nothing but the
 * declared slots in `CUDA_VISIBLE_DEVICES` / `NVIDIA_VISIBLE_DEVICES` (no device exists).
 */
export interface GpuAccess {
  readonly mode: 'cdi' | 'devices' | 'slots';
  /** What was handed over: CDI names, device paths, or the slot indices as strings. Recorded in JobStarted. */
  readonly devices: readonly string[];
  /** Variables the container gets for it (the platform's: the job cannot override them). */
  readonly env: Readonly<Record<string, string>>;
}

/** What a node offers for handing GPUs to containers, found once at start. */
export interface GpuHost {
  /** NVIDIA's CDI spec is installed (`/etc/cdi/nvidia.yaml`, `/var/run/cdi/nvidia.yaml`, or `nvidia-ctk cdi list` names devices). */
  readonly cdi: boolean;
  /** `/dev/nvidia*` nodes present (e.g. `/dev/nvidia0`, `/dev/nvidiactl`, `/dev/nvidia-uvm`). */
  readonly deviceNodes: readonly string[];
}

/** The per-GPU device nodes and the shared ones every CUDA process needs. */
const SHARED_NVIDIA_NODES = ['/dev/nvidiactl', '/dev/nvidia-uvm', '/dev/nvidia-uvm-tools', '/dev/nvidia-modeset'] as const;

/**
 * How the held GPUs `indices` reach a container on `host`: CDI when the node has NVIDIA's spec,
 * else the device nodes of exactly those GPUs plus the shared control nodes, else the declared
 * slots through the environment only. Pure.
 */
export function gpuAccess(host: GpuHost, indices: readonly number[]): GpuAccess | undefined {
  if (indices.length === 0) return undefined;
  const list = indices.join(',');
  if (host.cdi) return { mode: 'cdi', devices: indices.map((i) => `nvidia.com/gpu=${i}`), env: { NVIDIA_VISIBLE_DEVICES: list } };
  const present = new Set(host.deviceNodes);
  if (indices.every((i) => present.has(`/dev/nvidia${i}`))) {
    // Inside, only the handed GPUs exist; CUDA numbers them from 0, so CUDA_VISIBLE_DEVICES is left to it.
    return { mode: 'devices', devices: [...indices.map((i) => `/dev/nvidia${i}`), ...SHARED_NVIDIA_NODES.filter((n) => present.has(n))], env: { NVIDIA_VISIBLE_DEVICES: list } };
  }
  return { mode: 'slots', devices: indices.map(String), env: { CUDA_VISIBLE_DEVICES: list, NVIDIA_VISIBLE_DEVICES: list } };
}

/** What {@link podmanGlobalArgs} needs to know of the host. */
export interface PodmanHost {
  /** `/sys/fs/cgroup` is the unified cgroup v2 hierarchy (crun works there). */
  readonly cgroupV2: boolean;
  /** systemd is the init (`/run/systemd/system` exists): podman's default cgroup manager works. */
  readonly systemd: boolean;
  /** Absolute path of `runc`, when installed. */
  readonly runc: string | null;
  /** Operator's choice (`GPUNET_OCI_RUNTIME`); `auto`: decided here. */
  readonly ociRuntime: string;
}

/**
 * podman's global arguments for this host. On cgroup v1 or hybrid hierarchies podman's default
 * crun refuses ("cgroups in hybrid mode not supported"), so runc is used; without systemd as
 * init the `systemd` cgroup manager cannot work, so `cgroupfs`. Pure.
 */
export function podmanGlobalArgs(host: PodmanHost): string[] {
  const args: string[] = [];
  const runtime = host.ociRuntime !== 'auto' ? host.ociRuntime : !host.cgroupV2 && host.runc !== null ? host.runc : undefined;
  if (runtime !== undefined) args.push('--runtime', runtime);
  if (!host.systemd) args.push('--cgroup-manager', 'cgroupfs');
  return args;
}

/**
 * Arguments for the runtime (after the binary name): the global ones, then `run`: removed on
 * exit, an init process that forwards signals and reaps, no capabilities, no privilege gain, the
 * job user, memory / pids / open-file caps, a read-only root file system with bounded tmpfs
 * mounts, the run's directories mounted (inputs read-only), the GPUs handed over, and the image
 * by its id. Nothing of the job's spec becomes a flag: it only fills values.
 */
export function containerRunArgs(c: ContainerRun): string[] {
  const args = [...(c.globalArgs ?? []), 'run', '--rm', '--init', '--name', c.name, '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--network', c.network ? 'bridge' : 'none'];
  if (c.user) args.push('--user', `${c.user.uid}:${c.user.gid}`);
  if (c.memoryBytes !== undefined) args.push('--memory', String(c.memoryBytes), '--memory-swap', String(c.memoryBytes));
  if (c.maxProcesses !== undefined) args.push('--pids-limit', String(c.maxProcesses), '--ulimit', `nproc=${c.maxProcesses}:${c.maxProcesses}`);
  if (c.openFiles !== undefined) args.push('--ulimit', `nofile=${c.openFiles}:${c.openFiles}`);
  if (c.tmpfsBytes !== undefined) {
    args.push('--read-only', '--read-only-tmpfs=false');
    for (const path of ['/tmp', '/var/tmp', '/run']) args.push('--tmpfs', `${path}:rw,nosuid,nodev,size=${c.tmpfsBytes},mode=1777`);
    args.push('--shm-size', String(c.tmpfsBytes));
  }
  args.push(
    '--volume', `${c.dirs.inputs}:${CONTAINER_DIRS.inputs}:ro`,
    '--volume', `${c.dirs.work}:${CONTAINER_DIRS.work}`,
    '--volume', `${c.dirs.outputs}:${CONTAINER_DIRS.outputs}`,
    '--volume', `${c.dirs.checkpoints}:${CONTAINER_DIRS.checkpoints}`,
    '--workdir', CONTAINER_DIRS.work,
  );
  const env = { ...c.env, ...c.gpus?.env };
  for (const [name, value] of Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) args.push('--env', `${name}=${value}`);
  if (c.gpus !== undefined && c.gpus.mode !== 'slots') {
    if (c.runtime === 'docker' && c.gpus.mode === 'cdi') args.push('--gpus', `"device=${c.gpus.env.NVIDIA_VISIBLE_DEVICES}"`);
    else for (const d of c.gpus.devices) args.push('--device', d);
  }
  const [entrypoint, ...rest] = c.command ?? [];
  // One argument, so an entrypoint that starts with a dash can never be read as a flag.
  if (entrypoint !== undefined) args.push(`--entrypoint=${entrypoint}`);
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

/** An image id as `docker|podman image inspect --format {{.Id}}` prints it (podman without the `sha256:`), as `sha256:<64 hex>`, else undefined. */
export function parseImageId(text: string): string | undefined {
  const id = text.trim();
  if (/^[0-9a-f]{64}$/.test(id)) return `sha256:${id}`;
  return /^sha256:[0-9a-f]{64}$/.test(id) ? id : undefined;
}

/** The message of a container job on a node without a runtime: names what is missing. */
export function missingRuntimeMessage(image: string, nodeId: string): string {
  return `work.kind container (${image}) needs a container runtime (docker or podman), and node ${nodeId} has none that answers`;
}
