import { readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveGroupMembers, signalGroup } from '../run/index.js';

/** Written into the run directory when the job's process starts. */
interface ProcessMarker {
  pgid: number;
  attemptId: string;
  /** Kernel boot id: after a reboot the recorded group cannot be ours any more. */
  bootId?: string;
  startedAt: string;
}

const MARKER = 'process.json';

let cachedBootId: string | undefined | null = null;
function bootId(): string | undefined {
  if (cachedBootId === null) {
    try {
      cachedBootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      cachedBootId = undefined;
    }
  }
  return cachedBootId;
}

/**
 * Records the job's process group in `<run root>/process.json`, synchronously, so the record
 * exists before anything of the job is read: a restarted agent finds and kills what its
 * predecessor left running.
 */
export function writeProcessMarker(runRoot: string, pgid: number, attemptId: string, startedAt: string): void {
  const marker: ProcessMarker = { pgid, attemptId, ...(bootId() !== undefined && { bootId: bootId() }), startedAt };
  writeFileSync(join(runRoot, MARKER), JSON.stringify(marker), { mode: 0o600 });
}

/** What {@link killLeftoverGroup} found. */
export type LeftoverResult =
  | { kind: 'none'; detail: string }
  | { kind: 'killed'; pgid: number; members: number[]; survivors: number[] }
  | { kind: 'not_ours'; pgid: number; detail: string };

/**
 * Kills (SIGKILL) the process group a previous agent recorded for this attempt, if it still
 * runs, and waits up to `waitMs` for it to be gone. A group is only killed when it is
 * provably the attempt's: same boot, and a member's environment carries
 * `GPUNET_ATTEMPT_ID=<attemptId>` (which the run engine sets and the job cannot override), so
 * a recycled process id never gets another program killed.
 */
export async function killLeftoverGroup(runRoot: string, attemptId: string, waitMs = 5_000): Promise<LeftoverResult> {
  let marker: ProcessMarker;
  try {
    marker = JSON.parse(await readFile(join(runRoot, MARKER), 'utf8')) as ProcessMarker;
  } catch {
    return { kind: 'none', detail: 'no process was recorded for the attempt' };
  }
  if (marker.attemptId !== attemptId || !Number.isSafeInteger(marker.pgid) || marker.pgid <= 1) {
    return { kind: 'none', detail: 'the process record belongs to another attempt' };
  }
  if (marker.bootId !== undefined && bootId() !== undefined && marker.bootId !== bootId()) {
    return { kind: 'none', detail: 'the machine rebooted since the process started' };
  }
  const members = await liveGroupMembers(marker.pgid);
  if (members.length === 0) return { kind: 'none', detail: `process group ${marker.pgid} is gone` };
  if (!(await anyCarries(members, `GPUNET_ATTEMPT_ID=${attemptId}`))) {
    return { kind: 'not_ours', pgid: marker.pgid, detail: `process group ${marker.pgid} runs something else now (its id was reused)` };
  }
  signalGroup(marker.pgid, 'SIGKILL');
  const deadline = performance.now() + waitMs;
  let survivors = await liveGroupMembers(marker.pgid);
  while (survivors.length > 0 && performance.now() < deadline) {
    await sleep(25);
    survivors = await liveGroupMembers(marker.pgid);
  }
  return { kind: 'killed', pgid: marker.pgid, members, survivors };
}

async function anyCarries(pids: readonly number[], entry: string): Promise<boolean> {
  for (const pid of pids) {
    try {
      const env = await readFile(`/proc/${pid}/environ`, 'utf8');
      if (env.split('\0').includes(entry)) return true;
    } catch {
      // gone, or not readable by this user: not proof
    }
  }
  return false;
}
