/**
 * A built service run as a real process (`node dist/…/main.js`) whose JSON log lines the test
 * reads: what the fail-over tests use to tell which process leads, stands by or stepped down.
 *
 * A process's log line reaches the test on its own pipe, after whatever the process wrote to the
 * store or answered on the bus: a test that has seen the effect waits for the line
 * ({@link until}), never reads it once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { until } from './poll.js';

/** One parsed log line; stderr output is kept as `{ msg: 'stderr', text }`. */
export type LogLine = { msg?: string; [k: string]: unknown };

/** A spawned service and the log lines it has printed so far. */
export interface ServiceProcess {
  name: string;
  child: ChildProcess;
  logs: LogLine[];
}

/** The first line with this message, from line `from` on. */
export const logged = (p: ServiceProcess, msg: string, from = 0): LogLine | undefined => p.logs.slice(from).find((l) => l.msg === msg);

/** {@link until} with the fail-over tests' defaults: a check every 25 ms, 30 s unless told. */
export const waitFor = <T>(what: string, check: () => T | Promise<T>, timeoutMs = 30_000) => until(what, check, { timeoutMs, intervalMs: 25 });

/** The processes one test spawned from one entry point; `killAll` in `afterAll`. */
export class ServiceProcesses {
  private readonly all: ServiceProcess[] = [];

  constructor(
    private readonly main: string,
    private readonly cwd: string,
  ) {}

  /** Starts `node <main>` with the test's environment on top of this process's. */
  spawn(name: string, env: Record<string, string>): ServiceProcess {
    const child = spawn(process.execPath, [this.main], { cwd: this.cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const p: ServiceProcess = { name, child, logs: [] };
    let buffered = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) if (line.trim()) p.logs.push(JSON.parse(line) as LogLine);
    });
    child.stderr!.on('data', (chunk: Buffer) => p.logs.push({ msg: 'stderr', text: chunk.toString() }));
    this.all.push(p);
    return p;
  }

  /** SIGKILLs every process still running (a paused one is continued first, so it can die). */
  killAll(): void {
    for (const p of this.all) {
      if (p.child.exitCode !== null || p.child.signalCode !== null) continue;
      p.child.kill('SIGCONT');
      p.child.kill('SIGKILL');
    }
  }
}
