import { access, constants, mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * cgroup v1 `memory` and `pids` controllers, where the agent may create child groups: one group
 * per run caps its memory and its number of processes exactly (not per user like RLIMIT_NPROC),
 * and lists every process of the run, including those that left its process group (`setsid`).
 *
 * Groups are created below the agent's own group of each controller (read from
 * `/proc/self/cgroup`), so a job can never get more than the agent was given.
 * Where a controller is absent or not writable, that limit falls back to rlimits.
 */
export interface CgroupBases {
  /** Directory under which per-run memory groups are created, when usable. */
  readonly memory?: string;
  /** Directory under which per-run pids groups are created, when usable. */
  readonly pids?: string;
}

/** The v1 hierarchies of `/proc/self/mountinfo` and `/proc/self/cgroup`, joined: controller → directory of this process's group. Pure. */
export function cgroupV1Dirs(mountinfo: string, selfCgroup: string): Record<string, string> {
  const mounts = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const sep = line.indexOf(' - ');
    if (sep < 0) continue;
    const [fstype, , superOptions] = line.slice(sep + 3).split(' ');
    if (fstype !== 'cgroup') continue;
    const mountPoint = line.slice(0, sep).split(' ')[4];
    if (mountPoint === undefined) continue;
    for (const opt of (superOptions ?? '').split(',')) mounts.set(opt, mountPoint.replace(/\\040/g, ' '));
  }
  const dirs: Record<string, string> = {};
  for (const line of selfCgroup.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    for (const controller of m[1]!.split(',')) {
      const mount = mounts.get(controller);
      if (mount !== undefined && controller !== '') dirs[controller] = join(mount, m[2]!).replace(/(.)\/+$/, '$1');
    }
  }
  return dirs;
}

/**
 * Finds the memory and pids controllers this agent can create child groups in (by creating and
 * removing a probe group). Returns `{}` on cgroup v2-only machines or without permission.
 */
export async function detectCgroups(probeName = `gpunet-probe-${process.pid}`): Promise<CgroupBases> {
  let dirs: Record<string, string>;
  try {
    dirs = cgroupV1Dirs(await readFile('/proc/self/mountinfo', 'utf8'), await readFile('/proc/self/cgroup', 'utf8'));
  } catch {
    return {};
  }
  const usable = async (dir: string | undefined): Promise<string | undefined> => {
    if (dir === undefined) return undefined;
    const probe = join(dir, probeName);
    try {
      await mkdir(probe);
      await rmdir(probe);
      return dir;
    } catch {
      return undefined;
    }
  };
  const [memory, pids] = await Promise.all([usable(dirs.memory), usable(dirs.pids)]);
  return { ...(memory && { memory }), ...(pids && { pids }) };
}

/** Limits a run's cgroups enforce. */
export interface CgroupLimits {
  /** `memory.limit_in_bytes` (and the memory+swap limit where it exists): beyond it the kernel OOM-kills inside the group. */
  readonly memoryBytes?: number;
  /** `pids.max`: forks beyond it fail with EAGAIN. */
  readonly maxProcesses?: number;
}

/**
 * Name of a run's groups: `gpunet.<nodeId>.<attemptId>`. Ids never contain a dot, so the name
 * parses back into exactly one node id and attempt id, and an agent can tell its own groups from
 * those of an agent whose id merely starts with its own (`a` and `a-b`). Pure.
 */
export function runCgroupName(nodeId: string, attemptId: string): string {
  if (nodeId.includes('.') || attemptId.includes('.') || nodeId.includes('/') || attemptId.includes('/')) throw new RangeError(`ids in a cgroup name cannot contain '.' or '/': ${nodeId}, ${attemptId}`);
  return `gpunet.${nodeId}.${attemptId}`;
}

/** The node and attempt of a run group's name, or `undefined` when it is not one. Pure. */
export function parseRunCgroupName(name: string): { nodeId: string; attemptId: string } | undefined {
  const parts = name.split('.');
  if (parts.length !== 3 || parts[0] !== 'gpunet' || parts[1] === '' || parts[2] === '') return undefined;
  return { nodeId: parts[1]!, attemptId: parts[2]! };
}

/**
 * Removes the run groups of node `nodeId` (killing what is left in them): the groups of runs an
 * agent of this node did not finish because it was killed. Only names that parse to exactly this
 * node id are touched, never another agent's; given `attemptIds` (the runs the agent's own journal
 * says it started), only those, so an agent never touches a run it did not start, even one of an
 * agent with the same node id elsewhere on the machine. Returns how many.
 */
export async function removeStaleCgroups(bases: CgroupBases, nodeId: string, attemptIds?: ReadonlySet<string>): Promise<number> {
  const names = new Set<string>();
  for (const base of [bases.memory, bases.pids]) {
    if (base === undefined) continue;
    for (const name of await readdir(base).catch(() => [] as string[])) {
      const run = parseRunCgroupName(name);
      if (run?.nodeId === nodeId && (attemptIds === undefined || attemptIds.has(run.attemptId))) names.add(name);
    }
  }
  for (const name of names) await (await RunCgroups.create(bases, name, {})).remove();
  return names.size;
}

/** The cgroups of one run: created before the process starts, removed after it is gone. */
export class RunCgroups {
  private constructor(
    /** Group directories, one per controller used. */
    readonly dirs: { readonly memory?: string; readonly pids?: string },
  ) {}

  /**
   * Creates (or takes over, after an agent crash) the group `name` (see {@link runCgroupName})
   * under each usable base and writes the limits. A group without a limit is still created: it lists the run's processes.
   */
  static async create(bases: CgroupBases, name: string, limits: CgroupLimits): Promise<RunCgroups> {
    const dirs: { memory?: string; pids?: string } = {};
    if (name === '' || name.includes('/') || name === '.' || name === '..') throw new RangeError(`not a cgroup name: ${name}`);
    if (bases.memory) dirs.memory = join(bases.memory, name);
    if (bases.pids) dirs.pids = join(bases.pids, name);
    const groups = new RunCgroups(dirs);
    for (const dir of Object.values(dirs)) await mkdir(dir).catch((err: NodeJS.ErrnoException) => (err.code === 'EEXIST' ? undefined : Promise.reject(err)));
    await groups.killAll(); // a leftover of a crashed agent under the same name
    if (dirs.memory && limits.memoryBytes !== undefined) {
      await writeFile(join(dirs.memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
      // No swap escape: memory+swap gets the same cap where the kernel accounts swap.
      const memsw = join(dirs.memory, 'memory.memsw.limit_in_bytes');
      if (await exists(memsw)) await writeFile(memsw, String(limits.memoryBytes)).catch(() => undefined);
    }
    if (dirs.pids && limits.maxProcesses !== undefined) await writeFile(join(dirs.pids, 'pids.max'), String(limits.maxProcesses));
    return groups;
  }

  /** The `cgroup.procs` files a process writes its pid to, to join every group of the run. */
  get procsFiles(): string[] {
    return Object.values(this.dirs).map((d) => join(d, 'cgroup.procs'));
  }

  /**
   * Every live process in any of the run's groups. A group that cannot be read counts as empty,
   * unless `strict`: then the read's error is thrown, for a caller that would take "empty" as a
   * proof that nothing of the run is left.
   */
  async members(options: { strict?: boolean } = {}): Promise<number[]> {
    const pids = new Set<number>();
    for (const dir of Object.values(this.dirs)) {
      const read = readFile(join(dir, 'cgroup.procs'), 'utf8');
      const text = options.strict ? await read : await read.catch(() => '');
      for (const line of text.split('\n')) if (/^\d+$/.test(line)) pids.add(Number(line));
    }
    return [...pids].sort((a, b) => a - b);
  }

  /** SIGKILLs every member until the groups are empty (bounded); returns how many were killed. */
  async killAll(waitMs = 2_000): Promise<number> {
    const killed = new Set<number>();
    const until = performance.now() + waitMs;
    for (;;) {
      const members = await this.members();
      if (members.length === 0 || performance.now() > until) return killed.size;
      for (const pid of members) {
        try {
          process.kill(pid, 'SIGKILL');
          killed.add(pid);
        } catch {
          // gone already
        }
      }
      await sleep(20);
    }
  }

  /** Whether the kernel OOM-killed a process of the run (memory limit reached). */
  async oomKilled(): Promise<boolean> {
    if (!this.dirs.memory) return false;
    const control = await readFile(join(this.dirs.memory, 'memory.oom_control'), 'utf8').catch(() => '');
    const kills = /oom_kill (\d+)/.exec(control);
    if (kills) return Number(kills[1]) > 0;
    const failcnt = await readFile(join(this.dirs.memory, 'memory.failcnt'), 'utf8').catch(() => '0');
    return Number(failcnt.trim()) > 0;
  }

  /** Highest number of processes the run had at once, where the kernel reports it (`pids.peak`). */
  async peakProcesses(): Promise<number | undefined> {
    if (!this.dirs.pids) return undefined;
    const text = await readFile(join(this.dirs.pids, 'pids.peak'), 'utf8').catch(() => undefined);
    return text === undefined ? undefined : Number(text.trim());
  }

  /** Kills what is left and removes the groups. */
  async remove(): Promise<void> {
    await this.killAll();
    for (const dir of Object.values(this.dirs)) {
      for (let i = 0; i < 20; i++) {
        try {
          await rmdir(dir);
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
          await sleep(25); // EBUSY while the last member is being torn down
        }
      }
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
