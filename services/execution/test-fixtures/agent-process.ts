import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

/** A private compiled copy of the agent and what it imports, so tests never race the shared `dist/`. */
export interface AgentBuild {
  readonly root: string;
  readonly main: string;
  remove(): Promise<void>;
}

/** Compiles `contracts/`, `libs/` and `services/execution/` with the project's SWC config (about a second). */
export async function buildAgent(): Promise<AgentBuild> {
  const root = await mkdtemp(join(tmpdir(), 'gpunet-agent-build-'));
  const swc = join(repoRoot, 'node_modules', '.bin', 'swc');
  await run(swc, ['contracts', 'libs', 'services/execution', '-d', join(root, 'dist'), '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '-q'], { cwd: repoRoot });
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { imports: unknown };
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'gpunet-agent-build', private: true, type: 'module', imports: pkg.imports }));
  await symlink(join(repoRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  return { root, main: join(root, 'dist/services/execution/src/main.js'), remove: () => rm(root, { recursive: true, force: true }) };
}

/** A running agent process. */
export interface AgentProcess {
  readonly child: ChildProcess;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  readonly exited: Promise<number | string>;
  /** Its JSON log lines so far. */
  logText(): Promise<string>;
  kill(signal: NodeJS.Signals): void;
}

/** Starts `node main.js <args>` with the repository's topology file and the given environment; logs go to `logFile`. */
export function startAgent(build: AgentBuild, args: readonly string[], env: Record<string, string>, logFile: string): AgentProcess {
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(process.execPath, [build.main, ...args], {
    cwd: build.root,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GPUNET_TOPOLOGY_FILE: join(repoRoot, 'deploy/topology.yaml'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(out, { end: false });
  child.stderr!.pipe(out, { end: false });
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  return {
    child,
    exited,
    logText: () => readFile(logFile, 'utf8').catch(() => ''),
    kill: (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
