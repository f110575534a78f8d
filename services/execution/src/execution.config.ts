import { GpuModel, NodeId } from '#contracts';
import type { BaseConfig } from '#service-kit';
import { hostname } from 'node:os';
import { z } from 'zod';

const positiveInt = (what: string) => z.coerce.number().int().min(1).describe(what);
const nonNegativeInt = (what: string) => z.coerce.number().int().min(0).describe(what);

/** A node id from the host name: lower-case, only the characters an id may hold. */
export function defaultNodeId(host = hostname()): string {
  const cleaned = host.toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^[^a-z0-9]+/, '');
  return `node-${cleaned || 'local'}`.slice(0, 64);
}

/**
 * The execution agent's own environment variables (merged with the kit's). Each has a flag of
 * `main.ts` that sets it; see services/execution/README.md.
 */
export const ExecutionConfig = z.object({
  GPUNET_NODE_ID: NodeId.default(() => defaultNodeId()).describe('this node\'s id (letters, digits, _ and -); also the instance id'),
  GPUNET_GPUS: positiveInt('GPU slots to declare when nvidia-smi finds none, e.g. 4').default(1),
  GPUNET_GPU_MODEL: GpuModel.default('sim-gpu').describe('model name of the declared slots, e.g. A100-80GB'),
  GPUNET_WORK_DIR: z.string().min(1).optional().describe('directory for run directories and the input cache; default .gpunet/nodes/<nodeId>'),
  GPUNET_CACHE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .describe('most bytes the node input cache holds; blobs no attempt uses are evicted, least recently used first; default: no cap'),
  GPUNET_NVIDIA_SMI: z.string().min(1).default('nvidia-smi').describe('the nvidia-smi binary; when it is not found the declared slots are used'),
  GPUNET_HEARTBEAT_MS: positiveInt('milliseconds between heartbeats').default(2_000),
  GPUNET_KILL_GRACE_MS: nonNegativeInt('milliseconds between SIGTERM and SIGKILL at the time limit or a cancel').default(10_000),
  GPUNET_SHUTDOWN_GRACE_MS: nonNegativeInt('milliseconds a job gets after SIGTERM when the agent itself stops').default(3_000),
  GPUNET_MAX_LOG_BYTES: positiveInt('bytes of job output kept per attempt').default(64 * 1024 * 1024),
  GPUNET_NODE_DATA_TIMEOUT_MS: positiveInt('milliseconds to wait for storage to copy a checkpoint between the team\'s bucket and the node\'s (or check an attempt)').default(600_000),
  GPUNET_STORE_OUTPUTS_TIMEOUT_MS: positiveInt('milliseconds to wait for one StoreOutputs reply').default(10_000),
  GPUNET_STORE_OUTPUTS_GIVE_UP_MS: positiveInt('milliseconds of retrying StoreOutputs before the outputs are given up').default(120_000),
  GPUNET_JOB_UIDS: z
    .string()
    .regex(/^(off|\d{1,10}-\d{1,10})$/, { error: 'GPUNET_JOB_UIDS must be a uid range such as 61000-61999, or off' })
    .default('61000-61999')
    .describe('uids (= gids) jobs run as when the agent is root, one per concurrent attempt; off: jobs run as the agent\'s user'),
  GPUNET_NETWORK_ISOLATION: z.enum(['auto', 'off']).default('auto').describe('auto: a job without `network: true` gets its own network namespace where the agent can make one'),
  GPUNET_JOB_MAX_PROCESSES: positiveInt('processes one job may have at once (cgroup pids.max, else RLIMIT_NPROC of its job user)').default(4096),
  GPUNET_JOB_MAX_MEMORY_BYTES: positiveInt('most memory one job may use or ask for (resources.memory); default the machine\'s memory').optional(),
  GPUNET_JOB_MEMORY_PER_GPU_BYTES: positiveInt('default memory cap of a job per GPU it holds (cgroup memory limit); default the machine\'s memory divided by its GPUs').optional(),
  GPUNET_JOB_MAX_DISK_BYTES: positiveInt('most disk one job may fill or ask for (resources.disk); default the size of the work dir\'s file system').optional(),
  GPUNET_JOB_DISK_PER_GPU_BYTES: positiveInt('default disk cap of a job per GPU it holds; default the work dir\'s file system size divided by the GPUs').optional(),
  GPUNET_DISK_CHECK_MS: positiveInt('milliseconds between measurements of a running job\'s disk use').default(2_000),
  GPUNET_CONFINE_HELPER: z
    .string()
    .regex(/^(auto|off|\/.+)$/, { error: 'GPUNET_CONFINE_HELPER must be auto, off, or the absolute path of a gpunet-confine binary' })
    .default('auto')
    .describe('auto: confine each run with the gpunet-confine binary built beside the agent when it works here; off: with the util-linux chain (unshare, sh, ip, mount, prlimit, setpriv); or the path of a gpunet-confine binary, which must work'),
  GPUNET_MOUNT_ISOLATION: z.enum(['auto', 'off']).default('auto').describe('auto: each job gets its own mount and IPC namespaces with a private /tmp, /var/tmp, /dev/shm, /run/lock and /dev/mqueue where the agent can make them'),
  GPUNET_CHECKPOINT_INTERVAL_MS: positiveInt('milliseconds between saves of a running job\'s checkpoint directory, unless its spec says otherwise').default(600_000),
  GPUNET_CONTAINER_RUNTIME: z.enum(['auto', 'docker', 'podman', 'off']).default('auto').describe('container runtime for `kind: container` work; auto: docker, else podman, when its daemon answers'),
  GPUNET_OCI_RUNTIME: z
    .string()
    .regex(/^(auto|[A-Za-z0-9_./-]{1,256})$/, { error: 'GPUNET_OCI_RUNTIME must be auto or an OCI runtime name or path, e.g. runc or /usr/sbin/runc' })
    .default('auto')
    .describe('OCI runtime podman runs containers with; auto: runc on cgroup v1 / hybrid hosts (where crun refuses), else podman\'s default'),
  GPUNET_JOB_OPEN_FILES: positiveInt('open files one container job may have (RLIMIT_NOFILE), at most the agent\'s own hard limit').default(65_536),
});

/** The whole typed configuration an execution agent reads once at start. */
export type ExecutionConfig = BaseConfig & z.output<typeof ExecutionConfig>;

/** The work directory: the configured one, else `.gpunet/nodes/<nodeId>` (the layout of `gpunet up`). */
export function workDirOf(config: Pick<ExecutionConfig, 'GPUNET_WORK_DIR' | 'GPUNET_NODE_ID'>): string {
  return config.GPUNET_WORK_DIR ?? `.gpunet/nodes/${config.GPUNET_NODE_ID}`;
}
