import type { ContainerRuntime, JobSpec } from '#contracts';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, readFile, stat, statfs } from 'node:fs/promises';
import { podmanGlobalArgs, type GpuHost } from '../domain/index.js';
import { tmpdir, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { ExecutionConfig } from '../execution.config.js';
import { fileURLToPath } from 'node:url';
import {
  canIsolateMounts,
  canIsolateNetwork,
  helperProblem,
  detectCgroups,
  findExecutable,
  grantRunDirs,
  JobUserPool,
  parseUidRange,
  processesOfUid,
  type CgroupBases,
  type Confinement,
  type JobUser,
  type ResourceLimits,
  type RunDirs,
} from '../run/index.js';

/** Where `npm run build` puts `gpunet-confine` (services/execution/native), from this module in dist/ or in the sources. */
export const BUILT_CONFINE_HELPER = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../native/gpunet-confine' : '../../../../dist/services/execution/native/gpunet-confine', import.meta.url));

/**
 * The `gpunet-confine` this agent confines runs with, or why none (then the util-linux chain).
 * `auto`: the built one, when the agent is root and it works here; a path: that one, which must
 * work (the agent refuses to start otherwise: an operator who named it expects it); `off`: none.
 */
export async function detectConfineHelper(setting: string): Promise<{ path?: string; why?: string }> {
  if (setting === 'off') return { why: 'GPUNET_CONFINE_HELPER=off' };
  if (process.getuid?.() !== 0) return { why: 'the agent is not root' };
  const path = setting === 'auto' ? BUILT_CONFINE_HELPER : setting;
  if (setting === 'auto' && !existsSync(path)) return { why: `${path} is not built (npm run build compiles it with cc)` };
  const problem = await helperProblem(path);
  if (problem === undefined) return { path };
  if (setting !== 'auto') throw new Error(`GPUNET_CONFINE_HELPER=${setting} does not work here: ${problem}`);
  return { why: problem };
}

/** How one attempt is confined on this node. */
export interface AttemptConfinement {
  readonly confinement: Confinement;
  readonly limits?: ResourceLimits;
  readonly user?: JobUser;
  /** The job's memory cap (its spec's `resources.memory`, else the node's default for its GPUs). */
  readonly memoryBytes: number;
  /** The job's disk cap (its spec's `resources.disk`, else the node's default for its GPUs). */
  readonly diskBytes: number;
}

/** A job asked for more than this node allows; refused before compute is held. */
export class ResourceRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResourceRequestError';
  }
}

/** Memory and disk: most a job may ask for, and the default cap per GPU it holds. */
export interface NodeCaps {
  readonly maxMemoryBytes: number;
  readonly memoryPerGpuBytes: number;
  readonly maxDiskBytes: number;
  readonly diskPerGpuBytes: number;
}

/**
 * The caps of a job on a node: what its spec asks for, else the node's share per GPU times its
 * GPUs (never above the node's maximum). Pure.
 *
 * @throws ResourceRequestError when the spec asks for more than the node's maximum.
 */
export function jobCaps(spec: Pick<JobSpec, 'request' | 'resources'>, caps: NodeCaps, nodeId: string): { memoryBytes: number; diskBytes: number } {
  const gpus = Math.max(1, spec.request.gpus);
  const pick = (asked: number | undefined, max: number, perGpu: number, field: string, variable: string): number => {
    if (asked === undefined) return Math.min(max, perGpu * gpus);
    if (asked > max) {
      throw new ResourceRequestError(
        `${field} asks for ${asked} bytes, more than node ${nodeId} allows one job (${max} bytes, ${variable}); ask for at most ${max} bytes, or leave it out for the default of ${Math.min(max, perGpu * gpus)} bytes`,
      );
    }
    return asked;
  };
  return {
    memoryBytes: pick(spec.resources?.memoryBytes, caps.maxMemoryBytes, caps.memoryPerGpuBytes, 'resources.memory', 'GPUNET_JOB_MAX_MEMORY_BYTES'),
    diskBytes: pick(spec.resources?.diskBytes, caps.maxDiskBytes, caps.diskPerGpuBytes, 'resources.disk', 'GPUNET_JOB_MAX_DISK_BYTES'),
  };
}

/**
 * What this node can do to confine jobs, found once at start, and the job users handed to the
 * attempts. See the README's "Isolation": a job user per concurrent attempt when the agent is
 * root, a network namespace for jobs that do not ask for the network, per-run cgroups (v1
 * memory and pids) where the agent may create them, else RLIMIT_NPROC for the process cap.
 */
export class NodeConfinement {
  private constructor(
    private readonly config: ExecutionConfig,
    readonly networkIsolation: boolean,
    readonly cgroupBases: CgroupBases,
    readonly containerRuntimes: readonly ContainerRuntime[],
    private readonly users: JobUserPool | undefined,
    /** Why jobs run as the agent's user, when they do. */
    readonly noJobUsers: string | undefined,
    /** Whether each job gets its own mount and IPC namespaces with a private /tmp, /var/tmp, /dev/shm, /run/lock. */
    readonly mountIsolation: boolean,
    readonly caps: NodeCaps,
    /** How containers are run here: podman's global arguments, the GPU hand-over, the open-file cap. */
    readonly containers: ContainerHost,
    /** `gpunet-confine`, when runs are confined by it rather than by the util-linux chain (decision 0049). */
    readonly confineHelper: string | undefined,
  ) {}

  static async detect(config: ExecutionConfig, workDir: string, log: Logger, gpuCount = 1): Promise<NodeConfinement> {
    const pathVar = process.env.PATH;
    const unshare = await findExecutable('unshare', pathVar);
    const networkIsolation = config.GPUNET_NETWORK_ISOLATION === 'auto' && unshare !== null && (await canIsolateNetwork(unshare));
    const mountBin = await findExecutable('mount', pathVar);
    let noMountIsolation: string | undefined;
    if (config.GPUNET_MOUNT_ISOLATION === 'off') noMountIsolation = 'GPUNET_MOUNT_ISOLATION=off';
    else if (process.getuid?.() !== 0) noMountIsolation = 'the agent is not root, so it cannot make mount namespaces';
    else if (unshare === null || mountBin === null) noMountIsolation = 'unshare or mount (util-linux) is not installed';
    else if (!(await canIsolateMounts(unshare, mountBin))) noMountIsolation = 'unshare --mount could not give a private tmpfs on /tmp here';
    const mountIsolation = noMountIsolation === undefined;
    // Groups of runs a killed predecessor of this agent left are removed by its recovery, which
    // knows from the journal exactly which runs those were.
    const cgroupBases = await detectCgroups();
    const containerRuntimes = await detectContainerRuntimes(config.GPUNET_CONTAINER_RUNTIME, pathVar);
    const containers = await detectContainerHost(config, pathVar);

    let users: JobUserPool | undefined;
    let noJobUsers: string | undefined;
    const range = parseUidRange(config.GPUNET_JOB_UIDS);
    if (config.GPUNET_JOB_UIDS === 'off') noJobUsers = 'GPUNET_JOB_UIDS=off';
    else if (process.getuid?.() !== 0) noJobUsers = 'the agent is not root, so it cannot switch users';
    else if (range === undefined) noJobUsers = `GPUNET_JOB_UIDS=${config.GPUNET_JOB_UIDS} is not a valid range`;
    else if ((await findExecutable('setpriv', pathVar)) === null) noJobUsers = 'setpriv (util-linux) is not installed';
    else {
      const closed = await closedAncestor(workDir);
      if (closed !== undefined) noJobUsers = `${closed} is not passable by other users (chmod o+x ${closed}, or put GPUNET_WORK_DIR elsewhere)`;
      else {
        users = new JobUserPool(range.first, range.count, await claimsDir(), {
          onQuarantine: (uid, why) => log.warn({ uid, reason: why }, 'job uid quarantined: not handed out while something of an earlier job is left under it'),
        });
      }
    }
    // Jobs pass through the work dir and runs/ to their own run, never list them; the cache and
    // anything else of the agent's own (state, reports) is 0700 / 0600. Without job users nobody
    // else needs to pass at all.
    await mkdir(join(workDir, 'runs'), { recursive: true, mode: 0o700 });
    await mkdir(join(workDir, 'cache'), { recursive: true, mode: 0o700 });
    await chmod(workDir, users ? 0o711 : 0o700);
    await chmod(join(workDir, 'runs'), users ? 0o711 : 0o700);
    await chmod(join(workDir, 'cache'), 0o700);
    if (!users) log.error({ reason: noJobUsers }, 'jobs run as the agent\'s own user: their directories are not closed to each other');
    const caps = await nodeCaps(config, workDir, gpuCount);
    const helper = await detectConfineHelper(config.GPUNET_CONFINE_HELPER);
    const node = new NodeConfinement(config, networkIsolation, cgroupBases, containerRuntimes, users, noJobUsers, mountIsolation, caps, containers, helper.path);
    log.info(
      {
        confinedBy: helper.path ?? 'util-linux chain',
        ...(helper.why !== undefined && { noConfineHelper: helper.why }),
        jobUsers: users ? config.GPUNET_JOB_UIDS : false,
        networkIsolation,
        mountIsolation,
        ...(noMountIsolation !== undefined && { noMountIsolation: `${noMountIsolation}: jobs share the host's /tmp, /var/tmp and /dev/shm; a job uid is handed out again only once nothing of it is left there` }),
        cgroups: Object.keys(cgroupBases),
        ...caps,
        containerRuntimes,
        ...(containerRuntimes.length > 0 && { podmanArgs: containers.podmanArgs, gpuHandOver: containers.gpus.cdi ? 'cdi' : containers.gpus.deviceNodes.length > 0 ? 'devices' : 'slots' }),
      },
      'job confinement',
    );
    return node;
  }

  /** Whether jobs run as their own unprivileged users. */
  get jobUsers(): boolean {
    return this.users !== undefined;
  }

  /**
   * The confinement of one attempt: a job user of its own (the same on a second call), its own
   * network namespace unless the spec asks for the network or the attempt is a part of a
   * multi-node gang (its parts must reach each other), and the node's caps.
   *
   * @throws Error when every job uid is in use (more concurrent attempts than the range holds).
   */
  forAttempt(attemptId: string, spec: JobSpec, gang = false, runRoot?: string): AttemptConfinement {
    const { memoryBytes, diskBytes } = jobCaps(spec, this.caps, this.config.GPUNET_NODE_ID);
    let user: JobUser | undefined;
    if (this.users) {
      user = this.users.take(attemptId);
      if (user === undefined) throw new Error(`every job uid of GPUNET_JOB_UIDS=${this.config.GPUNET_JOB_UIDS} is in use; widen the range`);
    }
    const maxProcesses = this.config.GPUNET_JOB_MAX_PROCESSES;
    const cgroup = {
      ...(this.cgroupBases.pids && { maxProcesses }),
      ...(this.cgroupBases.memory && { memoryBytes }),
    };
    // Without a pids cgroup, RLIMIT_NPROC of the job's own user is the process cap (not enforced for root).
    const limits: ResourceLimits | undefined = !this.cgroupBases.pids && user ? { maxProcesses } : undefined;
    const confinement: Confinement = {
      ...(user && { user }),
      ...(this.networkIsolation && !spec.request.network && !gang && { isolateNetwork: true }),
      ...(Object.keys(cgroup).length > 0 && { cgroup }),
      ...(this.mountIsolation && runRoot !== undefined && { privateTmp: { sizeBytes: diskBytes, keep: runRoot } }),
    };
    return { confinement, ...(limits && { limits }), ...(user && { user }), memoryBytes, diskBytes };
  }

  /** Hands the run's directories (and files the agent wrote for the job, e.g. an inline script) to the job user. */
  async grant(dirs: RunDirs, user: JobUser | undefined, readableFiles: readonly string[] = []): Promise<void> {
    if (!user) return;
    await grantRunDirs(dirs, user);
    for (const file of readableFiles) {
      await chown(file, 0, user.gid);
      await chmod(file, 0o440);
    }
  }

  /** SIGKILLs whatever still runs under the job user (bounded wait until none is left); true once none is. */
  async killLeft(user: JobUser | undefined): Promise<boolean> {
    if (!user || !this.users) return true;
    for (let i = 0; i < 50; i++) {
      const left = await processesOfUid(user.uid);
      if (left.length === 0) return true;
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await new Promise((res) => setTimeout(res, 20));
    }
    return false;
  }

  /**
   * Gives the attempt's job user back once nothing runs under it any more (what does is killed
   * first, unless the caller's {@link killLeft} just found none: no process of a uid can appear
   * once none is left). The pool hands it out again only while it owns nothing in the
   * world-writable places.
   */
  async release(attemptId: string, user: JobUser | undefined, noneLeft = false): Promise<void> {
    if (!user || !this.users) return;
    if (!noneLeft) await this.killLeft(user);
    this.users.give(attemptId);
  }
}

/** The node's memory and disk caps: configured, else the machine's memory and the work dir's file system, shared per GPU. */
async function nodeCaps(config: ExecutionConfig, workDir: string, gpuCount: number): Promise<NodeCaps> {
  const gpus = Math.max(1, gpuCount);
  const fs = await statfs(workDir).catch(() => undefined);
  const fsBytes = fs ? fs.blocks * fs.bsize : 100 * 2 ** 30;
  const maxMemoryBytes = config.GPUNET_JOB_MAX_MEMORY_BYTES ?? totalmem();
  const maxDiskBytes = config.GPUNET_JOB_MAX_DISK_BYTES ?? fsBytes;
  return {
    maxMemoryBytes,
    memoryPerGpuBytes: config.GPUNET_JOB_MEMORY_PER_GPU_BYTES ?? Math.floor(totalmem() / gpus),
    maxDiskBytes,
    diskPerGpuBytes: config.GPUNET_JOB_DISK_PER_GPU_BYTES ?? Math.floor(fsBytes / gpus),
  };
}

/** Where agents on this machine claim job uids: `/run/gpunet/job-uids`, else under the temp dir. */
async function claimsDir(): Promise<string> {
  const run = '/run/gpunet/job-uids';
  try {
    await mkdir(run, { recursive: true, mode: 0o700 });
    return run;
  } catch {
    return join(tmpdir(), 'gpunet-job-uids');
  }
}

/** The first ancestor of `dir` (itself excluded) that others cannot pass through, if any. */
async function closedAncestor(dir: string): Promise<string | undefined> {
  let current = dirname(resolve(dir));
  for (;;) {
    const st = await stat(current).catch(() => undefined);
    if (st && (st.mode & 0o001) === 0) return current;
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/** How this node runs containers, found once at start. */
export interface ContainerHost {
  /** podman's global arguments (OCI runtime, cgroup manager) for this host. */
  readonly podmanArgs: readonly string[];
  /** NVIDIA's CDI spec and device nodes, for handing GPUs over. */
  readonly gpus: GpuHost;
  /** The container's RLIMIT_NOFILE: at most the agent's own hard limit (podman's default of 1048576 fails above it). */
  readonly openFiles: number;
}

/** CDI specs NVIDIA's toolkit writes (`nvidia-ctk cdi generate`). */
const NVIDIA_CDI_SPECS = ['/etc/cdi/nvidia.yaml', '/etc/cdi/nvidia.json', '/var/run/cdi/nvidia.yaml', '/var/run/cdi/nvidia.json'] as const;

async function detectContainerHost(config: ExecutionConfig, pathVar: string | undefined): Promise<ContainerHost> {
  const cgroupV2 = (await statfs('/sys/fs/cgroup').catch(() => undefined))?.type === CGROUP2_MAGIC;
  const podmanArgs = podmanGlobalArgs({ cgroupV2, systemd: existsSync('/run/systemd/system'), runc: await findExecutable('runc', `${pathVar ?? ''}:/usr/sbin:/sbin`), ociRuntime: config.GPUNET_OCI_RUNTIME });
  let cdi = NVIDIA_CDI_SPECS.some((f) => existsSync(f));
  if (!cdi) {
    const ctk = await findExecutable('nvidia-ctk', pathVar);
    if (ctk !== null) cdi = await new Promise<boolean>((res) => execFile(ctk, ['cdi', 'list'], { timeout: 10_000 }, (err, out) => res(err === null && /nvidia\.com\/gpu=/.test(out))));
  }
  const deviceNodes = (await readdir('/dev').catch(() => [] as string[])).filter((n) => /^nvidia(\d+|ctl|-uvm|-uvm-tools|-modeset)$/.test(n)).map((n) => `/dev/${n}`);
  const hardNofile = /^Max open files\s+\S+\s+(\d+)/m.exec(await readFile('/proc/self/limits', 'utf8').catch(() => ''));
  const openFiles = Math.min(config.GPUNET_JOB_OPEN_FILES, hardNofile ? Number(hardNofile[1]) : config.GPUNET_JOB_OPEN_FILES);
  return { podmanArgs, gpus: { cdi, deviceNodes }, openFiles };
}

const CGROUP2_MAGIC = 0x63677270;

/** The format string that makes `<runtime> info` answer only when the runtime works. */
const INFO_FORMAT: Record<ContainerRuntime, string> = { docker: '{{.ServerVersion}}', podman: '{{.Version.Version}}' };

/** Runtimes whose daemon answers (`<runtime> info`), in preference order. */
export async function detectContainerRuntimes(setting: ExecutionConfig['GPUNET_CONTAINER_RUNTIME'], pathVar: string | undefined): Promise<ContainerRuntime[]> {
  if (setting === 'off') return [];
  const candidates: ContainerRuntime[] = setting === 'auto' ? ['docker', 'podman'] : [setting];
  const found: ContainerRuntime[] = [];
  for (const runtime of candidates) {
    const bin = await findExecutable(runtime, pathVar);
    if (bin !== null && (await answers(bin, INFO_FORMAT[runtime]))) found.push(runtime);
  }
  return found;
}

function answers(bin: string, format: string): Promise<boolean> {
  return new Promise((res) => {
    const child = spawn(bin, ['info', '--format', format], { stdio: 'ignore', timeout: 15_000 });
    child.once('error', () => res(false));
    child.once('exit', (code) => res(code === 0));
  });
}
