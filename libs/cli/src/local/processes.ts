/**
 * Detached processes of a local network: started in their own process group with output to a
 * log file (so they outlive `gpunet up`), checked by pid, stopped with SIGTERM then SIGKILL.
 */
import { spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { LocalProcess } from './state.js';

/**
 * Starts `command` detached, stdout and stderr appended to `log` (0600 in a 0700 directory: a
 * service's log may hold what it was told); returns its pid.
 */
export function spawnDetached(command: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv; log: string }): number {
  mkdirSync(dirname(options.log), { recursive: true, mode: 0o700 });
  chmodSync(dirname(options.log), 0o700);
  const fd = openSync(options.log, 'a', 0o600);
  chmodSync(options.log, 0o600);
  try {
    const child = spawn(command[0]!, command.slice(1), { cwd: options.cwd, env: options.env, detached: true, stdio: ['ignore', fd, fd] });
    if (child.pid === undefined) throw new Error(`cannot start ${command[0]}`);
    // A spawn failure (ENOENT) arrives as an event; the pid check above already caught it.
    child.on('error', () => undefined);
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/**
 * True while `pid` runs. A zombie (exited, not yet reaped: common where PID 1 does not reap
 * orphans) counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 3, after the parenthesised name (which may itself hold spaces or parentheses).
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: kill(0) said it exists
  }
}

/**
 * True when `pid` still runs the recorded command (its program or script path appears in
 * /proc/<pid>/cmdline), false when the pid now belongs to something else; undefined without /proc.
 * Keeps `down` from signalling an unrelated process that reused a pid after a reboot.
 */
export function runsCommand(pid: number, command: readonly string[]): boolean | undefined {
  let cmdline: string[];
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
  const marker = command.find((part) => part.endsWith('.js')) ?? command[0]!;
  return cmdline.some((part) => part === marker || part.endsWith(`/${marker.split('/').pop()}`));
}

/** How one process ended under {@link stopProcesses}. */
export interface StopResult {
  name: string;
  pid: number;
  /** `stopped`: exited after SIGTERM; `killed`: needed SIGKILL; `not-running`: was already gone (or the pid is another program's now). */
  result: 'stopped' | 'killed' | 'not-running';
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone in between: nothing to signal
  }
}

/**
 * SIGTERM to every process, waits up to `graceMs` for all of them to exit, then SIGKILL to
 * the stragglers (and waits for those too).
 */
export async function stopProcesses(list: readonly LocalProcess[], options: { graceMs: number; pollMs?: number }): Promise<StopResult[]> {
  const started = Date.now();
  const results = new Map<number, StopResult>();
  const running: LocalProcess[] = [];
  for (const p of list) {
    if (!isAlive(p.pid) || runsCommand(p.pid, p.command) === false) results.set(p.pid, { name: p.name, pid: p.pid, result: 'not-running', ms: 0 });
    else running.push(p);
  }
  for (const p of running) signal(p.pid, 'SIGTERM');
  const pollMs = options.pollMs ?? 100;
  let pending = running;
  while (pending.length > 0 && Date.now() - started < options.graceMs) {
    await sleep(pollMs);
    pending = pending.filter((p) => {
      if (isAlive(p.pid)) return true;
      results.set(p.pid, { name: p.name, pid: p.pid, result: 'stopped', ms: Date.now() - started });
      return false;
    });
  }
  for (const p of pending) signal(p.pid, 'SIGKILL');
  const killDeadline = Date.now() + 5_000;
  while (pending.some((p) => isAlive(p.pid)) && Date.now() < killDeadline) await sleep(pollMs);
  for (const p of pending) results.set(p.pid, { name: p.name, pid: p.pid, result: 'killed', ms: Date.now() - started });
  return list.map((p) => results.get(p.pid)!);
}

/** The last `lines` lines of a log file, for an error message; empty when unreadable. */
export function tailOf(path: string, lines = 15): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}
