import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { lstat, readdir, statfs } from 'node:fs/promises';
import { once } from 'node:events';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { constants as osConstants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { ValidationError, type FieldIssue } from '#errors';
import { systemClock, type Clock } from './clock.js';
import type { RunDirs } from './dirs.js';
import { buildRunEnv, jobEnvIssues } from './env.js';
import { ResourceLimitsUnavailableError } from './errors.js';
import { findExecutable, hasLimits, limitIssues, prlimitArgs, type ResourceLimits } from './limits.js';
import { LogCapture, type LogListener } from './log-capture.js';
import { classifyOutcome, type RunOutcome, type TerminationReason } from './outcome.js';
import { RunCgroups, type CgroupBases } from './cgroups.js';
import { confineArgv, confinementIssues, helperArgv, ConfinementUnavailableError, PRIVATE_TMP_PATHS, processesOfUid, type Confinement, type ConfineTools } from './confine.js';
import { liveGroupMembers, signalGroup } from './process-group.js';

/** What to run for one attempt, and the limits the job asked for. */
export interface RunSpec {
  readonly jobId: string;
  readonly attemptId: string;
  /** From {@link prepareRunDirs}; the process runs in `dirs.work`. */
  readonly dirs: RunDirs;
  /**
   * A bare name looked up on the run's `PATH`, or a path (relative to the work directory, or
   * absolute) that must lie inside the attempt's directory, e.g. a staged or written script.
   */
  readonly command: string;
  readonly args?: readonly string[];
  /** The job's own variables (see {@link jobEnvIssues} for what is refused). */
  readonly env?: Readonly<Record<string, string>>;
  /** GPU indices held for this attempt; exported as `CUDA_VISIBLE_DEVICES`. Default none. */
  readonly gpus?: readonly number[];
  /** A multi-node gang: this part's rank and every node in rank order (see `buildRunEnv`). */
  readonly gang?: { readonly rank: number; readonly nodes: readonly string[] };
  /** Wall time from start after which the process group gets SIGTERM. Positive integer ms. */
  readonly timeLimitMs: number;
  /** Time between SIGTERM and SIGKILL, for the job to checkpoint and exit. Default 10 000 ms. */
  readonly graceMs?: number;
  /** Signal sent to the group `warnBeforeMs` before the time limit, e.g. `SIGUSR1`. Default none. */
  readonly warnSignal?: NodeJS.Signals;
  readonly warnBeforeMs?: number;
  /** POSIX limits, applied through `prlimit` (see {@link ResourceLimits}). Default none. */
  readonly limits?: ResourceLimits;
  /** Job user, network namespace and cgroup limits (see {@link Confinement}). Default none. */
  readonly confinement?: Confinement;
  /**
   * Most bytes the run may fill in `work/`, `outputs/`, `checkpoints/` and its private tmpfs
   * mounts together, measured every `diskCheckMs`: beyond it the group is SIGKILLed and the run
   * is `failed` with `limit: 'disk_limit'`. Default none.
   */
  readonly diskLimitBytes?: number;
}

/** How the agent observes and records a run. */
export interface RunOptions {
  /** Stamps `startedAt` / `endedAt`. Default the system clock. Durations use a monotonic timer. */
  readonly clock?: Clock;
  /** Aborting cancels the run: SIGTERM to the group, then SIGKILL after the grace. */
  readonly signal?: AbortSignal;
  /** Receives each log line live. Should not throw; if it does it is detached and the run goes on. */
  readonly onLog?: LogListener;
  /**
   * Called once the process has started, with its pid (= process group id) and the clock ms it
   * started at, before any of its output is read: the agent records the start and the group id
   * (so a restarted agent can find and kill a group its predecessor left behind). Not called when
   * the process could not be started. Should not throw; an error is logged and the run goes on.
   */
  readonly onSpawn?: (pid: number, startedAt: number) => void;
  /** Default `<dirs.logs>/run.log`; appended to, so a restarted agent does not erase a log. */
  readonly logFile?: string;
  /** Cap on kept job output. Default 64 MiB. */
  readonly maxLogBytes?: number;
  /** Longer lines are cut into pieces of this size. Default 64 KiB. */
  readonly maxLineBytes?: number;
  /** Source of the passed-through host variables. Default `process.env`. */
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  /** Host variable names passed to the job. Default `PATH`, `LANG`. */
  readonly passEnv?: readonly string[];
  /** `prlimit` binary used when `spec.limits` is set. Default: looked up on the host `PATH`. */
  readonly prlimitPath?: string;
  /**
   * `gpunet-confine`, which confines the run in one process instead of the util-linux chain
   * (`unshare`, `sh`, `ip`, `mount`, `prlimit`, `setpriv`; decision 0049). Default none: the chain.
   */
  readonly confineHelperPath?: string;
  /**
   * Where per-run cgroups may be created (from {@link detectCgroups}, once per agent). Without a
   * base for a controller, `spec.confinement.cgroup` limits of that controller cannot be applied
   * and the run is refused with {@link ConfinementUnavailableError}. Default none.
   */
  readonly cgroupBases?: CgroupBases;
  /**
   * Name of the run's cgroups, unique on the machine. Default `gpunet.<attemptId>`; an agent
   * passes {@link runCgroupName}`(nodeId, attemptId)` = `gpunet.<nodeId>.<attemptId>`, since the
   * parts of a gang share the attempt id and several agents may share a machine.
   */
  readonly cgroupName?: string;
  /** How often the disk use is measured when `spec.diskLimitBytes` is set. Default 2 000 ms. */
  readonly diskCheckMs?: number;
  /**
   * How the time-limit warning reaches the job when signalling the process group would not: a
   * container's client drops a signal that arrives before its container runs, so a container
   * attempt signals the container itself, retrying until it runs. Resolves once delivered; `done`
   * aborts when the main process has exited or termination began. Default: the group is signalled.
   */
  readonly deliverWarning?: (signal: NodeJS.Signals, done: AbortSignal) => Promise<void>;
  /** How often the group is checked while waiting for it to empty. Default 25 ms. */
  readonly pollMs?: number;
  /** After SIGKILL, how long to wait for the group to vanish before reporting survivors. Default 2 000 ms. */
  readonly reapWaitMs?: number;
  /** After the group is gone, how long to wait for its output pipes to close. Default 1 000 ms. */
  readonly drainMs?: number;
}

/** How a run ended. */
export interface RunResult {
  readonly outcome: RunOutcome;
  /** Exit code of the main process; `null` when a signal ended it or it never started. */
  readonly exitCode: number | null;
  /** Signal that ended the main process, e.g. `SIGKILL`. */
  readonly signal: NodeJS.Signals | null;
  /** Set when the agent stopped the run (time limit or cancellation). */
  readonly terminatedBy: TerminationReason | null;
  /** Clock ms when the process had started (or when it was found unable to start). */
  readonly startedAt: number;
  /** Clock ms when the last process of the group was gone. */
  readonly endedAt: number;
  /** Pid (and process group id) of the main process; `null` when it never started. */
  readonly pid: number | null;
  /** Whether SIGKILL had to be sent. */
  readonly killed: boolean;
  /** Pids of the group still alive after SIGKILL and `reapWaitMs` (e.g. stuck in the kernel). */
  readonly survivors: readonly number[];
  readonly logFile: string;
  /** Bytes written to the log file. */
  readonly logBytes: number;
  /** Bytes the job wrote to stdout and stderr, kept or not. */
  readonly outputBytes: number;
  /** Whether output was discarded because of the log cap. */
  readonly truncated: boolean;
  /** Set when writing the log file failed mid-run (e.g. disk full); the run itself went on. */
  readonly logError?: string;
  /** Why the process could not be started, if it could not. */
  readonly error?: string;
  /** The kernel OOM-killed a process of the run at its cgroup memory limit. */
  readonly oomKilled?: boolean;
  /** Processes that outlived the group (they left it with `setsid`) and were killed through the run's cgroup or job user. */
  readonly strays?: number;
  /**
   * No process of the run's job user was left once the run was over (its cgroups were empty, or
   * where it had none, a scan of `/proc` for its uid found none): none can appear under that uid
   * afterwards, so the agent need not look again before handing the uid back.
   */
  readonly noneLeftOfJobUser?: true;
  /** The cap the run was stopped at: its disk limit, or its memory limit (an OOM kill). */
  readonly limit?: 'disk_limit' | 'memory_limit';
  /** Most bytes of disk the run was measured to use (when it had a disk limit). */
  readonly diskBytes?: number;
}

const DEFAULTS = {
  graceMs: 10_000,
  maxLogBytes: 64 * 1024 * 1024,
  maxLineBytes: 64 * 1024,
  pollMs: 25,
  diskCheckMs: 2_000,
  reapWaitMs: 2_000,
  drainMs: 1_000,
} as const;

/** setTimeout fires at once for delays above 2^31-1 ms (~24.8 days); longer limits are re-armed in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const isNonNegativeInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** Problems with a run spec; empty when it can be run. Pure apart from path arithmetic. */
export function runSpecIssues(spec: RunSpec): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (typeof spec.command !== 'string' || spec.command.length === 0 || spec.command.includes('\0')) {
    issues.push({ path: 'command', message: 'must be a non-empty string without NUL characters' });
  } else if (spec.command.includes('/')) {
    const rel = relative(spec.dirs.root, resolve(spec.dirs.work, spec.command));
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      issues.push({
        path: 'command',
        message: `${spec.command} is outside the run's directories`,
        fix: 'name an executable on PATH (e.g. "python3") or a script inside the run (e.g. "./train.sh")',
      });
    }
  }
  (spec.args ?? []).forEach((arg, i) => {
    if (typeof arg !== 'string' || arg.includes('\0')) issues.push({ path: `args.${i}`, message: 'must be a string without NUL characters' });
  });
  issues.push(...jobEnvIssues(spec.env));
  const gpus = spec.gpus ?? [];
  if (!gpus.every(isNonNegativeInt) || new Set(gpus).size !== gpus.length) {
    issues.push({ path: 'gpus', message: 'must be distinct non-negative integer indices' });
  }
  if (!isNonNegativeInt(spec.timeLimitMs) || spec.timeLimitMs === 0) {
    issues.push({ path: 'timeLimitMs', message: 'must be a positive integer number of milliseconds' });
  }
  if (spec.graceMs !== undefined && (!isNonNegativeInt(spec.graceMs) || spec.graceMs > MAX_TIMER_MS)) {
    issues.push({ path: 'graceMs', message: `must be an integer number of milliseconds from 0 to ${MAX_TIMER_MS}` });
  }
  if ((spec.warnSignal === undefined) !== (spec.warnBeforeMs === undefined)) {
    issues.push({ path: 'warnBeforeMs', message: 'warnSignal and warnBeforeMs go together', fix: 'set both or neither' });
  } else if (spec.warnSignal !== undefined) {
    if (!(spec.warnSignal in osConstants.signals) || spec.warnSignal === 'SIGKILL' || spec.warnSignal === 'SIGSTOP') {
      issues.push({ path: 'warnSignal', message: `${spec.warnSignal} cannot be used as a warning`, fix: 'use e.g. SIGUSR1' });
    }
    if (!isNonNegativeInt(spec.warnBeforeMs) || spec.warnBeforeMs === 0 || spec.warnBeforeMs >= spec.timeLimitMs) {
      issues.push({ path: 'warnBeforeMs', message: 'must be a positive integer below timeLimitMs' });
    }
  }
  if (spec.diskLimitBytes !== undefined && !(Number.isSafeInteger(spec.diskLimitBytes) && spec.diskLimitBytes >= 1)) {
    issues.push({ path: 'diskLimitBytes', message: 'must be a positive integer number of bytes' });
  }
  issues.push(...limitIssues(spec.limits));
  issues.push(...confinementIssues(spec.confinement));
  return issues;
}

/** Helper binaries {@link launchArgv} may wrap the job with, as absolute paths. */
export interface LaunchTools extends ConfineTools {
  /** Required when the spec has limits. */
  readonly prlimitPath?: string;
}

/**
 * The argv that starts a run: the job's command, wrapped by helpers that set up its
 * confinement and then `exec` it, so the job keeps the pid (and process group) that was
 * spawned: `unshare --net` → cgroups and loopback → `prlimit` → `setpriv` (the job user) → the
 * job (see {@link confineArgv}). Pure.
 */
export function launchArgv(spec: Pick<RunSpec, 'command' | 'args' | 'limits' | 'confinement'>, tools: LaunchTools): string[] {
  if (tools.helperPath !== undefined) return helperArgv([spec.command, ...(spec.args ?? [])], spec.confinement, hasLimits(spec.limits) ? spec.limits : undefined, tools.helperPath, tools.cgroupProcs);
  let prlimit: string[] = [];
  if (hasLimits(spec.limits)) {
    if (tools.prlimitPath === undefined) throw new ResourceLimitsUnavailableError('resource limits were asked for without a prlimit binary');
    prlimit = [tools.prlimitPath, ...prlimitArgs(spec.limits), '--'];
  }
  return confineArgv([spec.command, ...(spec.args ?? [])], spec.confinement, tools, prlimit);
}

/** Bytes allocated to the files under `roots` (st_blocks, each inode once, symlinks not followed). */
export async function diskUsage(roots: readonly string[]): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const walk = async (path: string): Promise<void> => {
    const st = await lstat(path, { bigint: false }).catch(() => undefined);
    if (!st) return;
    const key = `${st.dev}:${st.ino}`;
    if (seen.has(key)) return;
    seen.add(key);
    total += st.blocks * 512;
    if (!st.isDirectory()) return;
    const names = await readdir(path).catch(() => [] as string[]);
    for (const name of names) await walk(join(path, name));
  };
  for (const root of roots) await walk(root);
  return total;
}

/** Bytes used on the private tmpfs mounts of the process `pid`'s mount namespace (0 where there are none). */
async function privateTmpUsage(pid: number): Promise<number> {
  let total = 0;
  for (const path of PRIVATE_TMP_PATHS) {
    const st = await statfs(`/proc/${pid}/root${path}`).catch(() => undefined);
    // Only the run's own tmpfs (0x01021994), never the host file system behind a path it lacks.
    if (st && st.type === TMPFS_MAGIC) total += (st.blocks - st.bfree) * st.bsize;
  }
  return total;
}

const TMPFS_MAGIC = 0x01021994;

/** Looks up the wrappers a confinement needs on the host PATH; a missing one is an error naming it. */
async function confineTools(c: Confinement | undefined, pathVar: string | undefined, cgroupProcs: readonly string[]): Promise<ConfineTools> {
  const find = async (name: string, why: string): Promise<string> => {
    const found = await findExecutable(name, pathVar);
    if (found === null) throw new ConfinementUnavailableError(`${why} needs ${name} (util-linux / iproute2), which was not found on this node`);
    return found;
  };
  return {
    ...(c?.user && { setprivPath: await find('setpriv', 'running the job as an unprivileged user') }),
    ...(c?.isolateNetwork && { unsharePath: await find('unshare', 'a network namespace') }),
    ...(c?.isolateNetwork && { ipPath: (await findExecutable('ip', pathVar)) ?? undefined }),
    ...(c?.privateTmp && { unsharePath: await find('unshare', 'a mount namespace'), mountPath: await find('mount', 'a private /tmp') }),
    ...((cgroupProcs.length > 0 || c?.isolateNetwork || c?.privateTmp) && { shPath: await find('sh', 'joining the run\'s cgroups') }),
    cgroupProcs,
  };
}

/**
 * Runs one attempt of a job as a real process and resolves when it and every process of its
 * group are gone.
 *
 * The process gets its own process group (`detached`), the work directory as cwd, no stdin and
 * an environment built only from an allow-list ({@link buildRunEnv}). Stdout and stderr become a
 * capped line-wise log file and live {@link LogListener} calls. At the time limit, or on abort,
 * the whole group gets SIGTERM and, after the grace, SIGKILL. When the main process exits on its
 * own while others of its group linger, those get the same TERM → grace → KILL treatment: the
 * run is over when the group is empty.
 *
 * A job that cannot be started (missing command) resolves as `failed` with `error`; problems of
 * the agent's own (unwritable log file, limits it cannot apply) reject.
 *
 * Known bound: a process that leaves the group (`setsid`) escapes this; PID namespaces or cgroups
 * close that gap where the agent can use them.
 *
 * @throws ValidationError for an invalid spec, before anything starts.
 * @throws ResourceLimitsUnavailableError when `spec.limits` is set and no `prlimit` is available.
 */
export async function runProcess(spec: RunSpec, opts: RunOptions = {}): Promise<RunResult> {
  const issues = runSpecIssues(spec);
  if (issues.length > 0) throw new ValidationError('invalid run spec', issues);
  const hostEnv = opts.hostEnv ?? process.env;
  const env = buildRunEnv({
    jobId: spec.jobId,
    attemptId: spec.attemptId,
    dirs: spec.dirs,
    gpus: spec.gpus ?? [],
    ...(spec.gang !== undefined && { gang: spec.gang }),
    jobEnv: spec.env,
    hostEnv,
    passEnv: opts.passEnv,
  });

  let prlimitPath: string | undefined;
  if (hasLimits(spec.limits) && opts.confineHelperPath === undefined) {
    const found = await findExecutable(opts.prlimitPath ?? 'prlimit', hostEnv.PATH);
    if (found === null) {
      throw new ResourceLimitsUnavailableError(`resource limits were asked for but ${opts.prlimitPath ?? 'prlimit'} (util-linux) was not found`);
    }
    prlimitPath = found;
  }
  const cgroupLimits = spec.confinement?.cgroup;
  const bases = opts.cgroupBases ?? {};
  if (cgroupLimits?.memoryBytes !== undefined && !bases.memory) throw new ConfinementUnavailableError('a memory limit was asked for but this node has no writable cgroup memory controller');
  if (cgroupLimits?.maxProcesses !== undefined && !bases.pids) throw new ConfinementUnavailableError('a process limit was asked for but this node has no writable cgroup pids controller');
  const cgroups = bases.memory || bases.pids ? await RunCgroups.create(bases, opts.cgroupName ?? `gpunet.${spec.attemptId}`, cgroupLimits ?? {}) : undefined;
  try {
    const procs = cgroups?.procsFiles ?? [];
    const tools = opts.confineHelperPath !== undefined ? { helperPath: opts.confineHelperPath, cgroupProcs: procs } : await confineTools(spec.confinement, hostEnv.PATH, procs);
    const argv = launchArgv(spec, { prlimitPath, ...tools });
    return await runLaunched(spec, opts, argv, env, cgroups);
  } finally {
    await cgroups?.remove();
  }
}

async function runLaunched(spec: RunSpec, opts: RunOptions, argv: string[], env: Record<string, string>, cgroups: RunCgroups | undefined): Promise<RunResult> {
  const logFile = opts.logFile ?? join(spec.dirs.logs, 'run.log');
  const file = new LogFile(createWriteStream(logFile, { flags: 'a', mode: 0o600 }));
  await file.opened();
  const capture = new LogCapture({
    maxBytes: opts.maxLogBytes ?? DEFAULTS.maxLogBytes,
    maxLineBytes: opts.maxLineBytes ?? DEFAULTS.maxLineBytes,
    write: (data) => file.write(data),
    onLog: opts.onLog,
  });
  try {
    const outcome = await new Execution(spec, opts, argv, env, capture, file, cgroups).run();
    const logError = file.error?.message;
    return {
      ...outcome,
      logFile,
      logBytes: capture.logBytes,
      outputBytes: capture.outputBytes,
      truncated: capture.truncated,
      ...(logError !== undefined && { logError }),
    };
  } finally {
    await file.close();
  }
}

/**
 * The log file, kept from ever stopping the run: a write error (disk full) is recorded, later
 * writes are dropped, and anyone paused waiting for `drain` is released.
 */
class LogFile {
  error: Error | undefined;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly stream: WriteStream) {
    stream.on('error', (err) => {
      this.error ??= err;
      this.release();
    });
    stream.on('drain', () => this.release());
  }

  /** Resolves once the file is open; rejects if it cannot be (the agent's problem, not the job's). */
  async opened(): Promise<void> {
    await once(this.stream, 'open');
  }

  /** Returns `false` when the caller should pause until {@link whenWritable} resolves. */
  write(data: Buffer): boolean {
    if (this.error !== undefined) return true;
    return this.stream.write(data);
  }

  whenWritable(fn: () => void): void {
    if (this.error !== undefined) fn();
    else this.waiting.push(fn);
  }

  async close(): Promise<void> {
    if (this.stream.closed) return;
    const closed = once(this.stream, 'close').catch(() => undefined);
    this.stream.end();
    await closed;
  }

  private release(): void {
    for (const fn of this.waiting.splice(0)) fn();
  }
}

type ExecutionResult = Omit<RunResult, 'logFile' | 'logBytes' | 'outputBytes' | 'truncated' | 'logError'>;

/** One run's state machine: started → (terminating) → leader exited → group empty → drained. */
class Execution {
  private readonly clock: Clock;
  private readonly graceMs: number;
  private child: ChildProcess | undefined;
  private pgid = 0;
  private leaderExited = false;
  private terminatedBy: TerminationReason | null = null;
  private terminating = false;
  private killed = false;
  private killSentAt: number | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private killTimer: NodeJS.Timeout | undefined;
  private diskTimer: NodeJS.Timeout | undefined;
  private diskPeak = 0;
  /** Aborted when the main process exits or termination begins: a warning still on its way is dropped. */
  private readonly warningDone = new AbortController();

  constructor(
    private readonly spec: RunSpec,
    private readonly opts: RunOptions,
    private readonly argv: string[],
    private readonly env: Record<string, string>,
    private readonly capture: LogCapture,
    private readonly file: LogFile,
    private readonly cgroups?: RunCgroups,
  ) {
    this.clock = opts.clock ?? systemClock;
    this.graceMs = spec.graceMs ?? DEFAULTS.graceMs;
  }

  async run(): Promise<ExecutionResult> {
    const base = { pid: null, killed: false, survivors: [], signal: null, exitCode: null };
    if (this.opts.signal?.aborted) {
      this.capture.system('[gpunet] cancelled before the process started');
      const now = this.clock.now();
      return { ...base, outcome: 'cancelled', terminatedBy: 'cancel', startedAt: now, endedAt: now };
    }

    const child = spawn(this.argv[0], this.argv.slice(1), {
      cwd: this.spec.dirs.work,
      env: this.env,
      detached: true, // setsid(): own session and process group, so the whole group can be signalled
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
      child.once('exit', (code, signal) => res({ code, signal })),
    );
    const spawnError = await new Promise<Error | null>((res) => {
      child.once('spawn', () => res(null));
      child.once('error', res);
    });
    const startedAt = this.clock.now();
    if (spawnError !== null || child.pid === undefined) {
      const error = `could not start ${this.spec.command}: ${spawnError?.message ?? 'no pid'}`;
      this.capture.system(`[gpunet] ${error}`);
      return { ...base, outcome: 'failed', terminatedBy: null, startedAt, endedAt: this.clock.now(), error };
    }
    this.pgid = child.pid;
    try {
      this.opts.onSpawn?.(child.pid, startedAt);
    } catch (err) {
      this.capture.system(`[gpunet] start listener failed: ${(err as Error)?.message ?? String(err)}`);
    }
    const outputClosed = this.captureOutput(child);
    this.armTimers();
    this.watchDisk(child.pid);
    const onAbort = () => this.terminate('cancel');
    this.opts.signal?.addEventListener('abort', onAbort, { once: true });
    if (this.opts.signal?.aborted) onAbort(); // aborted while the process was starting

    let exit: { code: number | null; signal: NodeJS.Signals | null };
    try {
      exit = await exited;
    } finally {
      this.leaderExited = true;
      this.opts.signal?.removeEventListener('abort', onAbort);
      for (const t of this.timers) clearTimeout(t);
      this.warningDone.abort();
    }
    if (this.diskTimer) clearTimeout(this.diskTimer);

    const survivors = await this.waitForEmptyGroup();
    const { found: strays, noneLeft } = await this.killStrays();
    const endedAt = this.clock.now();
    if (this.killTimer) clearTimeout(this.killTimer);
    await this.drain(outputClosed);
    const oomKilled = (await this.cgroups?.oomKilled()) ?? false;
    if (oomKilled) this.capture.system(`[gpunet] out of memory: the run reached its memory limit of ${this.spec.confinement?.cgroup?.memoryBytes ?? '?'} bytes and the kernel killed a process`);
    this.capture.finish();

    return {
      outcome: classifyOutcome({ exitCode: exit.code, signal: exit.signal, terminatedBy: this.terminatedBy }),
      exitCode: exit.code,
      signal: exit.signal,
      terminatedBy: this.terminatedBy,
      startedAt,
      endedAt,
      pid: this.pgid,
      killed: this.killed,
      survivors,
      ...(oomKilled && { oomKilled }),
      ...(strays > 0 && { strays }),
      ...(noneLeft && this.spec.confinement?.user !== undefined && { noneLeftOfJobUser: true as const }),
      ...(this.terminatedBy === 'disk_limit' ? { limit: 'disk_limit' as const } : oomKilled ? { limit: 'memory_limit' as const } : {}),
      ...(this.spec.diskLimitBytes !== undefined && { diskBytes: this.diskPeak }),
    };
  }

  /**
   * Measures the run's disk use every `diskCheckMs` (one measurement at a time): blocks of
   * `work/`, `outputs/`, `checkpoints/` (hard links counted once) plus what is used on its private
   * tmpfs mounts, seen through `/proc/<pid>/root`. Past `diskLimitBytes` the group is SIGKILLed at
   * once (a grace would let it write on) and the run ends `failed` with limit `disk_limit`.
   */
  private watchDisk(pid: number): void {
    const limit = this.spec.diskLimitBytes;
    if (limit === undefined) return;
    const tick = async () => {
      if (this.terminating || this.leaderExited) return;
      const { dirs } = this.spec;
      let used = await diskUsage([dirs.work, dirs.outputs, dirs.checkpoints]);
      if (this.spec.confinement?.privateTmp) used += await privateTmpUsage(pid);
      this.diskPeak = Math.max(this.diskPeak, used);
      if (used > limit && !this.terminating && !this.leaderExited) {
        this.terminating = true;
        this.terminatedBy = 'disk_limit';
        this.capture.system(`[gpunet] disk limit of ${limit} bytes reached (${used} bytes in work, outputs, checkpoints and /tmp): the job is stopped (SIGKILL)`);
        this.killed = true;
        this.killSentAt = performance.now();
        this.signal('SIGKILL');
        return;
      }
      this.diskTimer = setTimeout(() => void tick(), this.opts.diskCheckMs ?? DEFAULTS.diskCheckMs);
    };
    this.diskTimer = setTimeout(() => void tick(), this.opts.diskCheckMs ?? DEFAULTS.diskCheckMs);
  }

  /**
   * Processes of the run that left its process group (`setsid`, a double fork) and are still
   * alive once the group is empty: found through the run's cgroups and its job user, and killed,
   * so nothing of a job outlives its attempt.
   */
  private async killStrays(): Promise<{ found: number; noneLeft: boolean }> {
    const found = new Set<number>(await this.leftOfRun());
    if (found.size === 0) return { found: 0, noneLeft: true };
    this.capture.system(`[gpunet] ${found.size} process(es) of the run left its process group; SIGKILL sent`);
    const until = performance.now() + (this.opts.reapWaitMs ?? DEFAULTS.reapWaitMs);
    while (performance.now() < until) {
      const left = await this.leftOfRun();
      if (left.length === 0) return { found: found.size, noneLeft: true };
      for (const pid of left) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      await sleep(this.opts.pollMs ?? DEFAULTS.pollMs);
    }
    return { found: found.size, noneLeft: false };
  }

  /**
   * The run's live processes: the members of its cgroups, and every process of its job user.
   *
   * Where the run has cgroups and they can be read, their members are all of it, and `/proc` is
   * not scanned for the uid (a scan reads the status of every process of the machine: about 1.4
   * CPU-ms with 90 processes here, once per job). A process of the job user outside the groups
   * cannot exist: both launchers join the groups while still root, before they become the job
   * user; a process cannot leave a group whose `cgroup.procs` files are root's; and the uid is
   * this attempt's alone from its claim to its release (`JobUserPool`), whose claim of the
   * uid for the next attempt scans `/proc` for it all the same.
   */
  private async leftOfRun(): Promise<number[]> {
    const uid = this.spec.confinement?.user?.uid;
    if (this.cgroups !== undefined && this.cgroups.procsFiles.length > 0) {
      const members = await this.cgroups.members({ strict: true }).catch(() => undefined);
      if (members !== undefined) return members;
    }
    return [...new Set([...((await this.cgroups?.members()) ?? []), ...(uid !== undefined ? await processesOfUid(uid) : [])])];
  }

  /** Pipes stdout/stderr into the capture with backpressure; resolves when both pipes are closed. */
  private captureOutput(child: ChildProcess): Promise<unknown> {
    const streams = [
      ['stdout', child.stdout!],
      ['stderr', child.stderr!],
    ] as const;
    const pauseAll = () => {
      for (const [, s] of streams) s.pause();
      this.file.whenWritable(() => {
        for (const [, s] of streams) s.resume();
      });
    };
    return Promise.all(
      streams.map(([name, stream]) => {
        stream.on('data', (chunk: Buffer) => {
          if (!this.capture.push(name, chunk)) pauseAll();
        });
        // On 'end' and on destroy alike the unterminated last line is kept.
        return once(stream, 'close').then(() => this.capture.end(name));
      }),
    );
  }

  /** Waits until no live process is left in the group, enforcing TERM → grace → KILL on stragglers. */
  private async waitForEmptyGroup(): Promise<number[]> {
    let members = await liveGroupMembers(this.pgid);
    if (members.length > 0 && !this.terminating) {
      this.capture.system(`[gpunet] main process exited; stopping ${members.length} remaining process(es) of its group`);
      this.terminate(null);
    }
    const reapWaitMs = this.opts.reapWaitMs ?? DEFAULTS.reapWaitMs;
    while (members.length > 0) {
      if (this.killSentAt !== undefined && performance.now() - this.killSentAt > reapWaitMs) {
        this.capture.system(`[gpunet] process(es) ${members.join(', ')} survived SIGKILL`);
        break;
      }
      await sleep(this.opts.pollMs ?? DEFAULTS.pollMs);
      members = await liveGroupMembers(this.pgid);
    }
    return members;
  }

  /** Waits for the output pipes; a process that left the group (setsid) may still hold them open. */
  private async drain(outputClosed: Promise<unknown>): Promise<void> {
    const ac = new AbortController();
    const timedOut = sleep(this.opts.drainMs ?? DEFAULTS.drainMs, true, { signal: ac.signal }).catch(() => false);
    const late = await Promise.race([outputClosed.then(() => false), timedOut]);
    ac.abort();
    if (late) {
      this.capture.system('[gpunet] output is still held open by a process outside the run; stopped reading it');
      this.child?.stdout?.destroy();
      this.child?.stderr?.destroy();
      await outputClosed;
    }
  }

  /** Signals the group; a failure (the job changed its credentials) is logged, never thrown from a timer. */
  private signal(sig: NodeJS.Signals): boolean {
    try {
      return signalGroup(this.pgid, sig);
    } catch (err) {
      this.capture.system(`[gpunet] could not send ${sig} to the process group: ${(err as Error).message}`);
      return false;
    }
  }

  private armTimers(): void {
    const { warnSignal, warnBeforeMs, timeLimitMs } = this.spec;
    if (warnSignal !== undefined && warnBeforeMs !== undefined) {
      this.after(timeLimitMs - warnBeforeMs, () => {
        if (this.terminating) return;
        const deliver = this.opts.deliverWarning;
        if (deliver === undefined) {
          this.capture.system(`[gpunet] ${warnSignal} sent: time limit in ${warnBeforeMs} ms`);
          this.signal(warnSignal);
          return;
        }
        const due = performance.now() + warnBeforeMs;
        deliver(warnSignal, this.warningDone.signal).then(
          () => {
            const left = Math.max(0, Math.round(due - performance.now()));
            this.capture.system(`[gpunet] ${warnSignal} sent: time limit in ${left} ms`);
          },
          (err: unknown) => {
            if (!this.warningDone.signal.aborted) this.capture.system(`[gpunet] could not send ${warnSignal}: ${(err as Error)?.message ?? String(err)}`);
          },
        );
      });
    }
    this.after(timeLimitMs, () => this.terminate('time_limit'));
  }

  /** Starts TERM → grace → KILL; `reason` is recorded only while the main process still runs. */
  private terminate(reason: TerminationReason | null): void {
    if (this.terminating || (reason !== null && this.leaderExited)) return;
    this.terminating = true;
    this.warningDone.abort();
    this.terminatedBy = reason;
    if (reason === 'time_limit') {
      this.capture.system(`[gpunet] time limit of ${this.spec.timeLimitMs} ms reached: SIGTERM sent, SIGKILL in ${this.graceMs} ms`);
    } else if (reason === 'cancel') {
      this.capture.system(`[gpunet] cancelled: SIGTERM sent, SIGKILL in ${this.graceMs} ms`);
    }
    this.signal('SIGTERM');
    this.killTimer = setTimeout(() => {
      this.killed = true;
      this.killSentAt = performance.now();
      if (this.signal('SIGKILL')) this.capture.system('[gpunet] grace period over: SIGKILL sent to the process group');
    }, this.graceMs);
  }

  /** A timer that also works beyond the ~24.8-day limit of setTimeout. */
  private after(ms: number, fn: () => void): void {
    const due = performance.now() + ms;
    const arm = (delay: number) => {
      const t = setTimeout(() => {
        const left = due - performance.now();
        if (left > 1) arm(left);
        else fn();
      }, Math.min(delay, MAX_TIMER_MS));
      this.timers.push(t);
    };
    arm(ms);
  }
}
