import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/**
 * Sends `signal` to every process in the group `pgid`. Returns `false` when the group no longer
 * exists. Other errors (EPERM) are thrown: they mean the agent lost control of the run.
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** State, parent and group of a process from `/proc/<pid>/stat`, or `null` when it is gone. */
export function parseProcStat(text: string): { state: string; ppid: number; pgrp: number } | null {
  // The command name is in parentheses and may itself contain spaces and parentheses.
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const [state, ppid, pgrp] = text.slice(close + 2).split(' ');
  if (state === undefined || ppid === undefined || pgrp === undefined) return null;
  return { state, ppid: Number(ppid), pgrp: Number(pgrp) };
}

/** Zombie (`Z`) or dead (`X`): it holds no resources and runs no code, only a process-table slot. */
const isDeadState = (state: string) => state === 'Z' || state === 'X';

/**
 * Whether `pid` is a live process. Unlike a bare `process.kill(pid, 0)`, a zombie counts as gone:
 * orphans are reparented to PID 1, and where PID 1 does not reap (some container and VM inits)
 * a killed process stays a zombie forever.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
  try {
    const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return stat !== null && !isDeadState(stat.state);
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

/**
 * Live (non-zombie) members of process group `pgid`. Uses `kill(-pgid, 0)` first, which answers
 * the common case without reading `/proc`; then scans `/proc` to tell zombies from live members.
 * Without `/proc` it answers from `kill` alone (zombies then count as live).
 */
export async function liveGroupMembers(pgid: number): Promise<number[]> {
  if (!signalGroup(pgid, 0)) return [];
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [pgid];
  }
  const members: number[] = [];
  await Promise.all(
    entries.map(async (name) => {
      if (!/^\d+$/.test(name)) return;
      try {
        const stat = parseProcStat(await readFile(`/proc/${name}/stat`, 'utf8'));
        if (stat && stat.pgrp === pgid && !isDeadState(stat.state)) members.push(Number(name));
      } catch {
        // exited between readdir and read
      }
    }),
  );
  return members.sort((a, b) => a - b);
}
