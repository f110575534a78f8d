import { spawn } from 'node:child_process';
import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FieldIssue } from '#errors';
import type { CgroupLimits } from './cgroups.js';
import { setLimits, type ResourceLimits } from './limits.js';
import { isProcessAlive } from './process-group.js';

/** The unprivileged identity a run's processes get when the agent is root. */
export interface JobUser {
  readonly uid: number;
  readonly gid: number;
}

/**
 * How a run is confined beyond its own process group and scrubbed environment. Every part is
 * applied by a wrapper that then `exec`s the next one, so the job keeps the spawned pid.
 */
export interface Confinement {
  /** Run as this user and group (no supplementary groups, `no_new_privs`), via util-linux `setpriv`. */
  readonly user?: JobUser;
  /** Give the run its own network namespace (`unshare --net`): only a loopback interface, no way out. */
  readonly isolateNetwork?: boolean;
  /** Per-run cgroup v1 limits, where the agent can create groups (see {@link detectCgroups}). */
  readonly cgroup?: CgroupLimits;
  /**
   * Give the run its own mount and IPC namespaces (`unshare --mount --propagation private --ipc`)
   * with a fresh tmpfs of `sizeBytes` on each of {@link PRIVATE_TMP_PATHS} that exists (and a
   * fresh mqueue on `/dev/mqueue`): what the job writes there is its own and vanishes with its
   * last process. The run's own directory stays visible when it lies under one of them.
   */
  readonly privateTmp?: { readonly sizeBytes: number; readonly keep: string };
}

/** The world-writable places a job could otherwise leave files in for the next job: private per run. */
export const PRIVATE_TMP_PATHS = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock'] as const;
/** World-writable places a job user's leftovers are looked for before its uid is handed out again. */
export const WORLD_WRITABLE_PLACES = [...PRIVATE_TMP_PATHS, '/dev/mqueue'] as const;

/** Absolute paths of the wrappers {@link confineArgv} uses; only those a confinement needs are required. */
export interface ConfineTools {
  readonly setprivPath?: string;
  readonly unsharePath?: string;
  readonly shPath?: string;
  /** Brings the namespace's loopback up, so jobs can still talk to themselves on 127.0.0.1. */
  readonly ipPath?: string;
  /** `cgroup.procs` files the run joins before anything of the job starts. */
  readonly cgroupProcs?: readonly string[];
  /** util-linux `mount`, for the private tmpfs of a mount namespace. */
  readonly mountPath?: string;
  /**
   * `gpunet-confine` (services/execution/native): when set, the whole confinement is this one
   * process, and none of the tools above is used (see {@link helperArgv}).
   */
  readonly helperPath?: string;
}

/**
 * Runs as root inside the new namespaces, before the user switch: joins the run's cgroups (so no
 * process of the job is ever outside them), brings loopback up, mounts the private tmpfs and
 * mqueue, then execs the rest. Arguments: `<procs file>… [lo=<ip>] [mount=<mount>] [keep=<dir>]
 * [tmpfs=<bytes>:<path>]… [mqueue=<path>] -- <argv>`. A tmpfs over a path the run's own
 * directory (`keep`) lies under gets that directory bound back in (through the cwd, which still
 * names the hidden original; hence `--no-canonicalize`). Exit 125 when the confinement cannot be
 * set up.
 */
export const CONFINE_SCRIPT = [
  'wd=$(pwd); M=mount; K=',
  'fail() { echo "[gpunet] $1" >&2; exit 125; }',
  'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do',
  ' case "$1" in',
  '  lo=*) "${1#lo=}" link set lo up || fail "could not bring loopback up" ;;',
  '  mount=*) M="${1#mount=}" ;;',
  '  keep=*) K="${1#keep=}" ;;',
  '  tmpfs=*) v="${1#tmpfs=}"; p="${v#*:}"',
  '   if [ -d "$p" ]; then',
  '    case "$K" in "$p"/*) cd "$K" || fail "cannot enter $K" ;; *) cd / ;; esac',
  '    "$M" -t tmpfs -o "size=${v%%:*},mode=1777,nosuid,nodev" gpunet-tmp "$p" || fail "could not mount a private $p"',
  '    case "$K" in "$p"/*) (umask 066 && mkdir -p "$K") && "$M" --no-canonicalize --bind . "$K" || fail "could not keep $K under the private $p" ;; esac',
  '   fi ;;',
  '  mqueue=*) p="${1#mqueue=}"; if [ -d "$p" ]; then "$M" -t mqueue -o nosuid,nodev,noexec gpunet-mqueue "$p" || fail "could not mount a private $p"; fi ;;',
  '  *) echo $$ > "$1" || fail "could not join cgroup $1" ;;',
  ' esac; shift',
  'done; shift',
  'cd "$wd" || fail "cannot enter $wd"',
  'exec "$@"',
].join('\n');

/** A confinement was asked for that this machine cannot give; raised before anything starts. */
export class ConfinementUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfinementUnavailableError';
  }
}

/**
 * Wraps `argv` so it starts confined: `unshare --net` (root) → the confine script (root: cgroups,
 * loopback) → `rest` (e.g. `prlimit`, still root so it can lower hard limits) → `setpriv` (drops
 * to the job user) → the job. Pure.
 *
 * @param rest wrappers that must run as root after the namespace and cgroups, e.g. `prlimit … --`.
 * @throws ConfinementUnavailableError when a needed tool path is missing.
 */
export function confineArgv(argv: readonly string[], confinement: Confinement | undefined, tools: ConfineTools, rest: readonly string[] = []): string[] {
  const need = (path: string | undefined, what: string): string => {
    if (path === undefined) throw new ConfinementUnavailableError(`${what} was asked for but its tool was not found on this node`);
    return path;
  };
  let out = [...argv];
  const user = confinement?.user;
  if (user !== undefined) {
    out = [need(tools.setprivPath, 'running the job as an unprivileged user (setpriv)'), `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', '--no-new-privs', '--', ...out];
  }
  out = [...rest, ...out];
  const pre = [...(tools.cgroupProcs ?? [])];
  if (confinement?.isolateNetwork && tools.ipPath !== undefined) pre.push(`lo=${tools.ipPath}`);
  const tmp = confinement?.privateTmp;
  if (tmp !== undefined) {
    pre.push(`mount=${need(tools.mountPath, 'a private /tmp (mount)')}`, `keep=${tmp.keep}`);
    for (const path of PRIVATE_TMP_PATHS) pre.push(`tmpfs=${tmp.sizeBytes}:${path}`);
    pre.push('mqueue=/dev/mqueue');
  }
  if (pre.length > 0) out = [need(tools.shPath, 'joining cgroups (sh)'), '-c', CONFINE_SCRIPT, 'gpunet-confine', ...pre, '--', ...out];
  const namespaces = [...(tmp !== undefined ? ['--mount', '--propagation', 'private', '--ipc'] : []), ...(confinement?.isolateNetwork ? ['--net'] : [])];
  if (namespaces.length > 0) out = [need(tools.unsharePath, tmp !== undefined ? 'a mount namespace (unshare)' : 'a network namespace (unshare)'), ...namespaces, '--', ...out];
  return out;
}

/**
 * Wraps `argv` so it starts confined by the one `gpunet-confine` process (decision 0049): it
 * joins the cgroups, makes the namespaces, brings loopback up, mounts the private tmpfs and
 * mqueue, sets the limits (soft = hard) and becomes the job user (no supplementary groups,
 * `no_new_privs`), in the same order and with the same effect as {@link confineArgv}'s chain of
 * util-linux wrappers, then execs the job. Pure.
 */
export function helperArgv(argv: readonly string[], confinement: Confinement | undefined, limits: ResourceLimits | undefined, helperPath: string, cgroupProcs: readonly string[] = []): string[] {
  const opts: string[] = cgroupProcs.map((file) => `cgroup=${file}`);
  const tmp = confinement?.privateTmp;
  if (tmp !== undefined) opts.push('ns=mount', 'ns=ipc');
  if (confinement?.isolateNetwork) opts.push('ns=net', 'lo');
  if (tmp !== undefined) {
    opts.push(`keep=${tmp.keep}`);
    for (const path of PRIVATE_TMP_PATHS) opts.push(`tmpfs=${tmp.sizeBytes}:${path}`);
    opts.push('mqueue=/dev/mqueue');
  }
  for (const [resource, value] of setLimits(limits)) opts.push(`rlimit=${resource}:${value}`);
  if (confinement?.user !== undefined) opts.push(`user=${confinement.user.uid}:${confinement.user.gid}`);
  return [helperPath, ...opts, '--', ...argv];
}

/**
 * Whether `gpunet-confine` at `helperPath` works here: starts `true` with the parts that depend on
 * the machine (mount, IPC and network namespaces, loopback, a private tmpfs on `/tmp`, an rlimit).
 * Not the user switch: that needs only root, and a probe under a job uid could meet another
 * agent's job on this machine (whose end would take it for a stray). `undefined` when it works,
 * else why not (the agent then uses the util-linux chain).
 */
export async function helperProblem(helperPath: string): Promise<string | undefined> {
  const args = ['ns=mount', 'ns=ipc', 'ns=net', 'lo', 'tmpfs=65536:/tmp', 'rlimit=core:0', '--', 'true'];
  return new Promise((res) => {
    let stderr = '';
    const child = spawn(helperPath, args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: '/' });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (err) => res(`${helperPath} cannot be started: ${err.message}`));
    child.once('close', (code) => res(code === 0 ? undefined : `${helperPath} ${args.join(' ')} exited ${code}: ${stderr.trim().slice(0, 300)}`));
  });
}

/** Problems with a confinement; empty when usable. */
export function confinementIssues(c: Confinement | undefined, field = 'confinement'): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const id = (v: unknown) => Number.isSafeInteger(v) && (v as number) > 0 && (v as number) < 2 ** 32 - 1;
  if (c?.user !== undefined && (!id(c.user.uid) || !id(c.user.gid))) {
    issues.push({ path: `${field}.user`, message: 'uid and gid must be positive integers (never 0: root)', fix: 'pick ids from an unused range, e.g. 61000' });
  }
  const positive = (v: unknown) => v === undefined || (Number.isSafeInteger(v) && (v as number) >= 1);
  if (!positive(c?.cgroup?.memoryBytes)) issues.push({ path: `${field}.cgroup.memoryBytes`, message: 'must be a positive integer' });
  if (!positive(c?.cgroup?.maxProcesses)) issues.push({ path: `${field}.cgroup.maxProcesses`, message: 'must be a positive integer' });
  if (c?.privateTmp !== undefined) {
    if (!(Number.isSafeInteger(c.privateTmp.sizeBytes) && c.privateTmp.sizeBytes >= 4096)) issues.push({ path: `${field}.privateTmp.sizeBytes`, message: 'must be an integer of at least 4096 bytes' });
    if (!c.privateTmp.keep.startsWith('/') || /[\n\0]/.test(c.privateTmp.keep)) issues.push({ path: `${field}.privateTmp.keep`, message: 'must be an absolute path' });
  }
  return issues;
}

/** Whether this agent can give a job its own network namespace: runs `unshare --net -- true`. */
export async function canIsolateNetwork(unsharePath: string): Promise<boolean> {
  return new Promise((res) => {
    const child = spawn(unsharePath, ['--net', '--', 'true'], { stdio: 'ignore' });
    child.once('error', () => res(false));
    child.once('exit', (code) => res(code === 0));
  });
}

/**
 * Whether this agent can give a job a mount namespace with a private tmpfs on `/tmp`: mounts one
 * inside `unshare --mount --propagation private --ipc` and checks that the host's `/tmp` never saw
 * the file written there.
 */
export async function canIsolateMounts(unsharePath: string, mountPath: string): Promise<boolean> {
  const marker = `.gpunet-mount-probe-${process.pid}-${Date.now()}`;
  const wrote = await new Promise<boolean>((res) => {
    const child = spawn(unsharePath, ['--mount', '--propagation', 'private', '--ipc', '--', 'sh', '-c', '"$0" -t tmpfs -o size=65536 gpunet-probe /tmp && touch "/tmp/$1"', mountPath, marker], { stdio: 'ignore' });
    child.once('error', () => res(false));
    child.once('exit', (code) => res(code === 0));
  });
  const leaked = await readFile(join('/tmp', marker)).then(
    () => true,
    () => false,
  );
  if (leaked) rmSync(join('/tmp', marker), { force: true });
  return wrote && !leaked;
}

/** Entries of /proc read between two turns of the event loop in {@link processesOfUid}. */
const PROC_SLICE = 64;
/** Bytes of `/proc/<pid>/status` read at first: `State:` and `Uid:` are among its first ten lines. */
const STATUS_HEAD = 512;

/**
 * Pids of live processes whose real uid is `uid`, from `/proc/<pid>/status`.
 *
 * Every process of the machine is looked at, after every run: each read is synchronous and of
 * the file's head only, in slices of {@link PROC_SLICE} with a turn of the event loop between
 * them. Reading each file with `readFile` went through the thread pool (open, fstat, reads, close
 * for every process) and cost the agent about 15 ms of CPU per scan with 130 processes on the
 * machine, twice per job, more the busier the machine; this costs about a quarter of that.
 */
export async function processesOfUid(uid: number): Promise<number[]> {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  const head = Buffer.allocUnsafe(STATUS_HEAD);
  for (let i = 0; i < entries.length; i++) {
    if (i > 0 && i % PROC_SLICE === 0) await new Promise((r) => setImmediate(r));
    const name = entries[i]!;
    if (!/^\d+$/.test(name)) continue;
    const status = statusHead(name, head);
    if (status === undefined) continue; // exited meanwhile
    const uidLine = /^Uid:\s+(\d+)/m.exec(status);
    const state = /^State:\s+(\S)/m.exec(status);
    if (uidLine && Number(uidLine[1]) === uid && state && state[1] !== 'Z' && state[1] !== 'X') found.push(Number(name));
  }
  return found.sort((a, b) => a - b);
}

/** The head of `/proc/<pid>/status` (the whole file should its `Uid:` line lie beyond it); undefined once the process is gone. */
function statusHead(pid: string, buffer: Buffer): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(`/proc/${pid}/status`, 'r');
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    const text = buffer.toString('latin1', 0, n);
    return n < buffer.length || /^Uid:.*\n/m.test(text) ? text : readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Job users for concurrent attempts: a distinct uid (= gid) per attempt from a configured range,
 * so two jobs never share an identity (their directories are closed to each other, and a
 * per-user limit is a per-job limit). A uid is claimed machine-wide by creating
 * `<claims>/<uid>` (atomic `mkdir`) holding the claiming agent's pid, so several agents on one
 * machine never hand out the same uid; a claim whose agent is dead is taken over. A uid is handed
 * out again only after its attempt gave it back (and the agent killed whatever still ran under
 * it), and only while no process runs under it and no file it owns is left in the world-writable
 * places (`places`, default {@link WORLD_WRITABLE_PLACES}): otherwise the next job would own
 * what the last one left. Such a uid stays quarantined (reported once through `onQuarantine`)
 * until it is clean, and the next uid is used.
 */
export class JobUserPool {
  private readonly taken = new Map<string, number>();
  private readonly quarantined = new Set<number>();

  constructor(
    private readonly first: number,
    private readonly count: number,
    /** Directory of machine-wide claims, e.g. `/run/gpunet/job-uids`. */
    private readonly claims: string,
    private readonly opts: { readonly places?: readonly string[]; readonly onQuarantine?: (uid: number, reason: string) => void } = {},
  ) {
    if (!Number.isSafeInteger(first) || first < 1 || !Number.isSafeInteger(count) || count < 1) throw new RangeError(`invalid uid range ${first}+${count}`);
    mkdirSync(claims, { recursive: true, mode: 0o700 });
  }

  /** The user of attempt `key` (the same on a second call), or `undefined` when every uid is in use or quarantined. */
  take(key: string): JobUser | undefined {
    const had = this.taken.get(key);
    if (had !== undefined) return { uid: had, gid: had };
    for (let uid = this.first; uid < this.first + this.count; uid++) {
      if (this.claim(uid)) {
        const dirty = this.leftover(uid);
        if (dirty !== undefined) {
          rmSync(join(this.claims, String(uid)), { recursive: true, force: true });
          if (!this.quarantined.has(uid)) this.opts.onQuarantine?.(uid, dirty);
          this.quarantined.add(uid);
          continue;
        }
        this.quarantined.delete(uid);
        this.taken.set(key, uid);
        return { uid, gid: uid };
      }
    }
    return undefined;
  }

  /** Uids held back because something of an earlier job is left under them. */
  get quarantinedUids(): number[] {
    return [...this.quarantined].sort((a, b) => a - b);
  }

  give(key: string): void {
    const uid = this.taken.get(key);
    if (uid === undefined) return;
    this.taken.delete(key);
    rmSync(join(this.claims, String(uid)), { recursive: true, force: true });
  }

  /** Why `uid` may not be handed out yet (a process or a file of it is left), or `undefined`. */
  private leftover(uid: number): string | undefined {
    if (anyProcessOfUid(uid)) return 'a process still runs under it';
    const file = fileOwnedBy(uid, this.opts.places ?? WORLD_WRITABLE_PLACES);
    return file === undefined ? undefined : `it still owns ${file}`;
  }

  private claim(uid: number): boolean {
    const dir = join(this.claims, String(uid));
    try {
      mkdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSafe(join(dir, 'pid')));
      // Claimed by a live agent (this one included): not free. A dead agent's claim is taken over,
      // unless something of its job still runs under the uid (its recovery kills that first).
      if (!Number.isSafeInteger(owner) || owner <= 0) return false; // being written right now
      if (isProcessAlive(owner) || anyProcessOfUid(uid)) return false;
      // Several agents may find the same dead claim at once: only the one whose mkdir of the
      // marker succeeds takes it over, and only while the claim still names the dead agent (it may
      // have been given back and claimed afresh meanwhile). Two agents on one uid would each kill
      // the other's job as a stray.
      const marker = join(dir, `takeover-${owner}`);
      try {
        mkdirSync(marker);
      } catch {
        return false;
      }
      if (Number(readFileSafe(join(dir, 'pid'))) !== owner) {
        rmSync(marker, { recursive: true, force: true });
        return false;
      }
    }
    writeFileSync(join(dir, 'pid'), String(process.pid));
    return true;
  }
}

/**
 * The first file or directory owned by `uid` in `places`, descending only into directories anyone
 * may write to (a job can only have written into those, or into directories of its own, which are
 * found themselves). Symlinks are not followed. Synchronous: a bounded scan for the claim.
 */
export function fileOwnedBy(uid: number, places: readonly string[], maxEntries = 100_000): string | undefined {
  let seen = 0;
  const walk = (dir: string): string | undefined => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return undefined;
    }
    for (const name of names) {
      if (++seen > maxEntries) return undefined;
      const path = join(dir, name);
      let st;
      try {
        st = lstatSync(path);
      } catch {
        continue;
      }
      if (st.uid === uid) return path;
      if (st.isDirectory() && (st.mode & 0o002) !== 0) {
        const found = walk(path);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  };
  for (const place of places) {
    const found = walk(place);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** Whether any live process runs as `uid` (a synchronous `/proc` scan of status heads, as {@link processesOfUid}, for the claim). */
function anyProcessOfUid(uid: number): boolean {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return false;
  }
  const head = Buffer.allocUnsafe(STATUS_HEAD);
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const status = statusHead(name, head);
    if (status === undefined) continue; // exited meanwhile
    const m = /^Uid:\s+(\d+)/m.exec(status);
    if (m && Number(m[1]) === uid && !/^State:\s+[ZX]/m.test(status)) return true;
  }
  return false;
}

function readFileSafe(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/** Parses a uid range `61000-61255` into first and count. Pure. */
export function parseUidRange(text: string): { first: number; count: number } | undefined {
  const m = /^(\d{1,10})-(\d{1,10})$/.exec(text.trim());
  if (!m) return undefined;
  const first = Number(m[1]);
  const last = Number(m[2]);
  if (first < 1 || last < first || last >= 2 ** 32 - 1) return undefined;
  return { first, count: last - first + 1 };
}
