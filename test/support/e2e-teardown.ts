/**
 * globalTeardown of the e2e project. First stops every network a worker started and did not stop
 * (`network.ts` leaves a marker naming its data directory until `stop()` has brought it down): a
 * hook that times out while `TestNetwork.start` still runs leaves no handle to stop, and its
 * detached processes would outlive the run. Then checks the recorded bus (`bus-contract.ts`).
 *
 * Jest loads this file without the project's module mapping: it imports nothing of ours, and
 * loads `bus-contract.ts` (which imports nothing of ours either) by its file name.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type * as BusContractModule from './bus/bus-contract.js';

/**
 * The bus check, loaded by its file name: Jest resolves a global hook's imports the way Node
 * does, without the project's mapping of `.js` to `.ts`, and transpiles what it loads.
 */
function busContract(): typeof BusContractModule {
  return createRequire(__filename)('./bus/bus-contract.ts') as typeof BusContractModule;
}

/** Directory (inside the run's tap directory) of the markers of networks started and not yet stopped. */
export const NETWORK_MARKERS = 'networks';

interface RecordedProcess {
  readonly name: string;
  readonly pid: number;
  readonly command: readonly string[];
}

/** True when `pid` still runs `command` (its pid was not reused by something else since). */
function runs(pid: number, command: readonly string[]): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return command.every((word, i) => argv[i] === word);
  } catch {
    return false;
  }
}

/** SIGKILLs what is left of each network whose marker remains; returns one line per network that still ran something. */
export function stopLeftoverNetworks(tapDir: string): string[] {
  const markers = join(tapDir, NETWORK_MARKERS);
  if (!existsSync(markers)) return [];
  const stopped: string[] = [];
  for (const marker of readdirSync(markers)) {
    const dataDir = readFileSync(join(markers, marker), 'utf8').trim();
    let processes: RecordedProcess[];
    try {
      processes = (JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8')) as { processes: RecordedProcess[] }).processes;
    } catch {
      continue; // `up` never got as far as recording a process, and stops what it started itself
    }
    const killed = processes.filter((p) => runs(p.pid, p.command));
    for (const p of killed) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (killed.length > 0) stopped.push(`${dataDir}: ${killed.map((p) => p.name).join(', ')}`);
  }
  return stopped;
}

export default function e2eTeardown(global: unknown, project: { rootDir: string }): void {
  const { BUS_TAP_DIR_ENV, default: checkRecordedBus } = busContract();
  const dir = process.env[BUS_TAP_DIR_ENV];
  if (dir) {
    const stopped = stopLeftoverNetworks(dir);
    if (stopped.length > 0) process.stderr.write(`\ngpunet e2e: stopped ${stopped.length} network(s) a test left running (SIGKILL; data kept):\n${stopped.map((s) => `- ${s}`).join('\n')}\n`);
  }
  checkRecordedBus(global, project);
}
