/**
 * CPU time of processes, from /proc, for the benchmarks' "where the time goes" figures.
 *
 * `own` is utime + stime of the process itself; `children` is cutime + cstime: the CPU of every
 * child it has waited for (reaped), each with the children that child waited for in turn. An
 * agent reaps each job's process, so a job's whole confinement chain (unshare, the confine
 * script and the `mount`/`ip` it forks, setpriv, the job) lands in the agent's `children` once
 * the job has exited. Kernel work done outside any process (a network namespace is torn down
 * by a kernel worker) is in neither.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: /proc counts CPU time in these ticks (100 on every Linux architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** CPU of one process, in ms. */
export interface ProcessCpu {
  /** utime + stime. */
  readonly ownMs: number;
  /** cutime + cstime: children it waited for. */
  readonly childrenMs: number;
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU of a process so far (undefined once it is gone). */
export function processCpu(pid: number | 'self'): ProcessCpu | undefined {
  const f = statFields(pid);
  if (f === undefined) return undefined;
  // Fields 14–17 of stat (1-based) are utime, stime, cutime, cstime; after the name, 0-based 11–14.
  const ms = (i: number) => (Number(f[i]) * 1000) / TICKS_PER_SECOND;
  return { ownMs: ms(11) + ms(12), childrenMs: ms(13) + ms(14) };
}

/** The difference of two readings (a process gone at the end counts as having used nothing). */
export function cpuDelta(before: ProcessCpu | undefined, after: ProcessCpu | undefined): ProcessCpu {
  if (before === undefined || after === undefined) return { ownMs: 0, childrenMs: 0 };
  return { ownMs: after.ownMs - before.ownMs, childrenMs: after.childrenMs - before.childrenMs };
}

/**
 * Own + children CPU of every process whose command name is `comm` (e.g. `postgres`: the
 * postmaster's `children` holds the backends that have exited). Machine-wide: every database's
 * work on that server is in it, not only ours.
 */
export function cpuOfCommand(comm: string): ProcessCpu {
  let ownMs = 0;
  let childrenMs = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, 'utf8').trim() !== comm) continue;
    } catch {
      continue;
    }
    const cpu = processCpu(Number(name));
    ownMs += cpu?.ownMs ?? 0;
    childrenMs += cpu?.childrenMs ?? 0;
  }
  return { ownMs, childrenMs };
}

/**
 * Runs `fn` and measures this process's CPU meanwhile (own from `process.cpuUsage`, in µs;
 * children it waited for from /proc, in ticks of 10 ms) and the wall time.
 */
export async function measureCpu<T>(fn: () => Promise<T>): Promise<{ result: T; ownMs: number; childrenMs: number; wallMs: number }> {
  const own = process.cpuUsage();
  const children = processCpu('self')?.childrenMs ?? 0;
  const started = performance.now();
  const result = await fn();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(own);
  return { result, ownMs: (used.user + used.system) / 1000, childrenMs: (processCpu('self')?.childrenMs ?? 0) - children, wallMs };
}
