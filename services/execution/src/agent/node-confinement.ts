import type { ContainerRuntime, JobSpec } from '#contracts';
import { spawn } from 'node:child_process';
import { chmod, chown, mkdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { ExecutionConfig } from '../execution.config.js';
import {
  canIsolateNetwork,
  detectCgroups,
  findExecutable,
  grantRunDirs,
  JobUserPool,
  parseUidRange,
  processesOfUid,
  removeStaleCgroups,
  type CgroupBases,
  type Confinement,
  type JobUser,
  type ResourceLimits,
  type RunDirs,
} from '../run/index.js';

/** How one attempt is confined on this node. */
export interface AttemptConfinement {
  readonly confinement: Confinement;
  readonly limits?: ResourceLimits;
  readonly user?: JobUser;
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
  ) {}

  static async detect(config: ExecutionConfig, workDir: string, log: Logger): Promise<NodeConfinement> {
    const pathVar = process.env.PATH;
    const unshare = await findExecutable('unshare', pathVar);
    const networkIsolation = config.GPUNET_NETWORK_ISOLATION === 'auto' && unshare !== null && (await canIsolateNetwork(unshare));
    const cgroupBases = await detectCgroups();
    // Groups of runs a killed predecessor of this agent left: their processes die with them (recovery
    // reports those attempts node_lost anyway).
    const stale = await removeStaleCgroups(cgroupBases, `${config.GPUNET_NODE_ID}-`);
    if (stale > 0) log.warn({ groups: stale }, 'removed the cgroups of runs the previous agent left');
    const containerRuntimes = await detectContainerRuntimes(config.GPUNET_CONTAINER_RUNTIME, pathVar);

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
      else users = new JobUserPool(range.first, range.count, await claimsDir());
    }
    if (users) {
      // Jobs pass through the work dir and runs/ to their own run, never list them; the cache is the agent's.
      await mkdir(join(workDir, 'runs'), { recursive: true });
      await mkdir(join(workDir, 'cache'), { recursive: true });
      await chmod(workDir, 0o711);
      await chmod(join(workDir, 'runs'), 0o711);
      await chmod(join(workDir, 'cache'), 0o700);
    } else {
      log.error({ reason: noJobUsers }, 'jobs run as the agent\'s own user: their directories are not closed to each other');
    }
    const node = new NodeConfinement(config, networkIsolation, cgroupBases, containerRuntimes, users, noJobUsers);
    log.info(
      { jobUsers: users ? config.GPUNET_JOB_UIDS : false, networkIsolation, cgroups: Object.keys(cgroupBases), containerRuntimes },
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
  forAttempt(attemptId: string, spec: JobSpec, gang = false): AttemptConfinement {
    let user: JobUser | undefined;
    if (this.users) {
      user = this.users.take(attemptId);
      if (user === undefined) throw new Error(`every job uid of GPUNET_JOB_UIDS=${this.config.GPUNET_JOB_UIDS} is in use; widen the range`);
    }
    const maxProcesses = this.config.GPUNET_JOB_MAX_PROCESSES;
    const memoryBytes = this.config.GPUNET_JOB_MAX_MEMORY_BYTES;
    const cgroup = {
      ...(this.cgroupBases.pids && { maxProcesses }),
      ...(this.cgroupBases.memory && memoryBytes !== undefined && { memoryBytes }),
    };
    // Without a pids cgroup, RLIMIT_NPROC of the job's own user is the process cap (not enforced for root).
    const limits: ResourceLimits | undefined = !this.cgroupBases.pids && user ? { maxProcesses } : undefined;
    const confinement: Confinement = {
      ...(user && { user }),
      ...(this.networkIsolation && !spec.request.network && !gang && { isolateNetwork: true }),
      ...(Object.keys(cgroup).length > 0 && { cgroup }),
    };
    return { confinement, ...(limits && { limits }), ...(user && { user }) };
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

  /** Gives the attempt's job user back once nothing runs under it any more (what does is killed first). */
  async release(attemptId: string, user: JobUser | undefined): Promise<void> {
    if (!user || !this.users) return;
    for (let i = 0; i < 50; i++) {
      const left = await processesOfUid(user.uid);
      if (left.length === 0) break;
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await new Promise((res) => setTimeout(res, 20));
    }
    this.users.give(attemptId);
  }
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

/** Runtimes whose daemon answers (`<runtime> info`), in preference order. */
export async function detectContainerRuntimes(setting: ExecutionConfig['GPUNET_CONTAINER_RUNTIME'], pathVar: string | undefined): Promise<ContainerRuntime[]> {
  if (setting === 'off') return [];
  const candidates: ContainerRuntime[] = setting === 'auto' ? ['docker', 'podman'] : [setting];
  const found: ContainerRuntime[] = [];
  for (const runtime of candidates) {
    const bin = await findExecutable(runtime, pathVar);
    if (bin !== null && (await answers(bin))) found.push(runtime);
  }
  return found;
}

function answers(bin: string): Promise<boolean> {
  return new Promise((res) => {
    const child = spawn(bin, ['info', '--format', '{{.ServerVersion}}'], { stdio: 'ignore', timeout: 5_000 });
    child.once('error', () => res(false));
    child.once('exit', (code) => res(code === 0));
  });
}
