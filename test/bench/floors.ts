/**
 * The floors `bench:e2e` prints beside each process's CPU per job: what the unavoidable parts of
 * a job cost on this machine with nothing else running, measured in the same run.
 *
 * - the confinement chain: the argv an agent builds for a script job (`sh job-script`, the script
 *   `true`), with the same confinement its agents detected (job user, network and mount
 *   namespaces, per-run cgroups), spawned K times and waited for;
 * - the agent's run engine: the same, through `runProcess` as the agent calls it, with the run
 *   directory made and removed and the job user taken and given back per run (no bus, no store);
 * - a raw store append: the run's own events appended again to a fresh store of the same kind,
 *   one event per append and in the batches the services used.
 *
 * The execution agent's code is used, not copied, so the floors follow it when it changes.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { rmdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pino } from 'pino';
import { parseJobSpec } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { NodeConfinement } from '../../services/execution/src/agent/node-confinement.js';
import { ExecutionConfig } from '../../services/execution/src/execution.config.js';
import { planLaunch } from '../../services/execution/src/domain/launch.js';
import {
  buildRunEnv,
  findExecutable,
  launchArgv,
  prepareRunDirs,
  removeRunDirs,
  runCgroupName,
  RunCgroups,
  runProcess,
  type LaunchTools,
  type RunDirs,
  type RunSpec,
} from '../../services/execution/src/run/index.js';
import { measureCpu } from './cpu.js';

/** CPU and rate of K repetitions of one thing. */
export interface Floor {
  readonly count: number;
  /** This process's own CPU per repetition, ms. */
  readonly ownMs: number;
  /** CPU of the children it waited for, per repetition, ms. */
  readonly childrenMs: number;
  /** Repetitions per second of wall time, one after another. */
  readonly perSecond: number;
}

export const floorTotalMs = (f: Floor): number => f.ownMs + f.childrenMs;

function floorOf(count: number, m: { ownMs: number; childrenMs: number; wallMs: number }): Floor {
  return { count, ownMs: m.ownMs / count, childrenMs: m.childrenMs / count, perSecond: count / (m.wallMs / 1000) };
}

/** The job the bench submits, as the agent sees it. */
const TRUE_JOB = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } } as const;
/** The agent's name for an inline script in the run directory (attempt-runner's INLINE_SCRIPT). */
const INLINE_SCRIPT = 'job-script';

export interface SpawnFloors {
  /** How the chain's argv reads, with the job user and paths shortened. */
  readonly chain: string;
  /** What confinement the floor ran with (as the agents detected it). */
  readonly confinement: string;
  readonly spawn: Floor;
  readonly runEngine: Floor;
}

/**
 * Detects the confinement the way an agent with `agentEnv` does (on a work directory of its
 * own, `workDir`), then measures `count` bare spawns of the chain and `count` runs through the
 * run engine. Root-only parts (job users, mount namespaces) follow from who runs the bench,
 * exactly as for the agents it started.
 */
export async function spawnFloors(agentEnv: Readonly<Record<string, string | undefined>>, workDir: string, count: number): Promise<SpawnFloors> {
  const nodeId = 'floor';
  // Container runtimes play no part in a script job's confinement; not probing them saves seconds.
  const config = ExecutionConfig.parse({ ...agentEnv, GPUNET_NODE_ID: nodeId, GPUNET_WORK_DIR: workDir, GPUNET_CONTAINER_RUNTIME: 'off' }) as ExecutionConfig;
  const node = await NodeConfinement.detect(config, workDir, pino({ level: 'silent' }), config.GPUNET_GPUS);
  const parsed = parseJobSpec(TRUE_JOB);
  if (!parsed.ok) throw new Error(`the bench's job does not parse: ${JSON.stringify(parsed.issues)}`);
  const spec = parsed.spec;
  const jobId = `job_${randomUUID().replaceAll('-', '')}`;

  const pathVar = process.env.PATH;
  const tool = async (name: string) => (await findExecutable(name, pathVar)) ?? undefined;
  const tools: LaunchTools = {
    setprivPath: await tool('setpriv'),
    unsharePath: await tool('unshare'),
    ipPath: await tool('ip'),
    mountPath: await tool('mount'),
    shPath: await tool('sh'),
    prlimitPath: await tool('prlimit'),
    // As the agent does: one gpunet-confine process where it works here (decision 0049).
    ...(node.confineHelper !== undefined && { helperPath: node.confineHelper }),
  };

  /** One attempt's directory, script and confinement, as the agent prepares them before holding compute. */
  const prepare = async (attemptId: string) => {
    const dirs = await prepareRunDirs(workDir, jobId, attemptId);
    const confined = node.forAttempt(attemptId, spec, false, dirs.root);
    const file = join(dirs.root, INLINE_SCRIPT);
    await writeFile(file, 'true', { mode: 0o500 });
    await node.grant(dirs, confined.user, [file]);
    const launch = planLaunch(spec.work, { file, firstLine: 'true' });
    const runSpec: RunSpec = {
      jobId,
      attemptId,
      dirs,
      command: launch.command,
      args: launch.args,
      env: launch.env,
      gpus: [0],
      timeLimitMs: spec.request.timeLimitMs,
      graceMs: config.GPUNET_KILL_GRACE_MS,
      confinement: confined.confinement,
      ...(confined.limits && { limits: confined.limits }),
      diskLimitBytes: confined.diskBytes,
    };
    return { dirs, confined, runSpec };
  };
  // As the agent does: the uid goes back without another look when the run's end found none of it left.
  const discard = async (dirs: RunDirs, attemptId: string, user: { uid: number; gid: number } | undefined, noneLeft = false) => {
    await removeRunDirs({ root: dirs.root });
    await rmdir(dirname(dirs.root)).catch(() => undefined);
    await node.release(attemptId, user, noneLeft);
  };

  // The bare chain: one prepared attempt, its cgroups made per spawn (the chain joins them).
  const first = await prepare(`${jobId}-a0`);
  const env = buildRunEnv({ jobId, attemptId: first.runSpec.attemptId, dirs: first.dirs, gpus: [0], jobEnv: first.runSpec.env, hostEnv: process.env });
  const cgroupLimits = first.runSpec.confinement?.cgroup ?? {};
  const hasCgroups = node.cgroupBases.memory !== undefined || node.cgroupBases.pids !== undefined;
  const spawnOnce = async (i: number) => {
    const cgroups = hasCgroups ? await RunCgroups.create(node.cgroupBases, runCgroupName(nodeId, `${jobId}-s${i}`), cgroupLimits) : undefined;
    try {
      const argv = launchArgv(first.runSpec, { ...tools, cgroupProcs: cgroups?.procsFiles ?? [] });
      const code = await new Promise<number | null>((res, rej) => {
        const child = spawn(argv[0]!, argv.slice(1), { cwd: first.dirs.work, env, detached: true, stdio: 'ignore' });
        child.once('error', rej);
        child.once('exit', (c) => res(c));
      });
      if (code !== 0) throw new Error(`the confinement chain exited ${code}: ${argv.join(' ')}`);
    } finally {
      await cgroups?.remove();
    }
  };
  await spawnOnce(-1); // warm-up: the binaries in the page cache
  const spawned = await measureCpu(async () => {
    for (let i = 0; i < count; i++) await spawnOnce(i);
  });
  const argv = launchArgv(first.runSpec, { ...tools, cgroupProcs: hasCgroups ? ['<procs>'] : [] });
  const chain = describeChain(argv);
  const c = first.runSpec.confinement;
  const confinement = [
    c?.user ? 'job user' : 'agent\'s user',
    c?.isolateNetwork ? 'network namespace' : undefined,
    c?.privateTmp ? 'mount+IPC namespace with private tmpfs' : undefined,
    c?.cgroup ? `cgroups (${Object.keys(node.cgroupBases).join(', ')})` : undefined,
    first.runSpec.limits ? 'prlimit' : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  await discard(first.dirs, first.runSpec.attemptId, first.confined.user);

  // The run engine: what the agent does per attempt around the process, without bus or store.
  const runOnce = async (i: number) => {
    const attemptId = `${jobId}-a${i + 1}`;
    const { dirs, confined, runSpec } = await prepare(attemptId);
    let noneLeft = false;
    try {
      const result = await runProcess(runSpec, {
        maxLogBytes: config.GPUNET_MAX_LOG_BYTES,
        cgroupBases: node.cgroupBases,
        ...(node.confineHelper !== undefined && { confineHelperPath: node.confineHelper }),
        cgroupName: runCgroupName(nodeId, attemptId),
        diskCheckMs: config.GPUNET_DISK_CHECK_MS,
      });
      if (result.outcome !== 'completed') throw new Error(`the run engine's \`true\` ended ${result.outcome}: ${result.error ?? ''}`);
      noneLeft = result.noneLeftOfJobUser === true;
    } finally {
      await discard(dirs, attemptId, confined.user, noneLeft);
    }
  };
  const ran = await measureCpu(async () => {
    for (let i = 0; i < count; i++) await runOnce(i);
  });
  await rmdir(join(workDir, 'runs', jobId)).catch(() => undefined);
  return { chain, confinement, spawn: floorOf(count, spawned), runEngine: floorOf(count, ran) };
}

/** `unshare --mount … -- sh -c <script> gpunet-confine … -- setpriv … -- sh job-script`, shortened to the programs and their flags. */
function describeChain(argv: readonly string[]): string {
  const parts: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('/')) parts.push(a.endsWith(INLINE_SCRIPT) ? INLINE_SCRIPT : a.slice(a.lastIndexOf('/') + 1));
    else if (a === '-c' && argv[i - 1]?.endsWith('sh')) {
      parts.push('-c <confine script>');
      i++;
    } else if (a !== '--' && !/^(tmpfs|mqueue|keep|mount|lo|cgroup)=/.test(a) && a !== '<procs>') parts.push(a);
  }
  return parts.join(' ').replace(/ gpunet-confine/, ' gpunet-confine …');
}

/** One append as a service made it: events of one stream committed together. */
export interface ObservedAppend {
  readonly streamId: string;
  readonly events: readonly RecordedEvent[];
}

/**
 * The appends behind `events` (in position order): consecutive revisions of one stream with the
 * same `recordedAt` were one append (one transaction takes one clock reading).
 */
export function observedAppends(events: readonly RecordedEvent[]): ObservedAppend[] {
  const sorted = [...events].sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0));
  const open = new Map<string, { streamId: string; events: RecordedEvent[] }>();
  const appends: { streamId: string; events: RecordedEvent[] }[] = [];
  for (const e of sorted) {
    const last = open.get(e.streamId);
    const prev = last?.events.at(-1);
    if (last && prev && prev.recordedAt === e.recordedAt && prev.revision + 1n === e.revision) {
      last.events.push(e);
      continue;
    }
    const next = { streamId: e.streamId, events: [e] };
    open.set(e.streamId, next);
    appends.push(next);
  }
  return appends;
}

export interface StoreFloor {
  readonly events: number;
  readonly appends: number;
  /** CPU per event, ms: this process's, and the server's when `serverCpuMs` was given. */
  readonly cpuMsPerEvent: number;
  readonly eventsPerSecond: number;
}

/**
 * Appends the events of `appends` again (fresh event ids, the same streams, types, data and
 * metadata), one append after another, to the store `open()` gives: as they were batched, or
 * with `batch1` one event per append.
 */
export async function storeAppendFloor(
  open: () => Promise<EventStore>,
  appends: readonly ObservedAppend[],
  batch1: boolean,
  /** CPU ms used so far by processes outside this one that the appends make work (a database server), if counted. */
  serverCpuMs?: () => number,
): Promise<StoreFloor> {
  const store = await open();
  try {
    const plan = batch1 ? appends.flatMap((a) => a.events.map((e) => ({ streamId: a.streamId, events: [e] }))) : appends;
    const input = plan.map((a) => ({ streamId: a.streamId, events: a.events.map((e) => ({ eventId: randomUUID(), type: e.type, data: e.data, metadata: e.metadata })) }));
    const events = input.reduce((n, a) => n + a.events.length, 0);
    const server = serverCpuMs?.() ?? 0;
    const m = await measureCpu(async () => {
      for (const a of input) await store.appendToStream(a.streamId, a.events);
    });
    const serverMs = (serverCpuMs?.() ?? 0) - server;
    return { events, appends: input.length, cpuMsPerEvent: (m.ownMs + m.childrenMs + serverMs) / events, eventsPerSecond: events / (m.wallMs / 1000) };
  } finally {
    await store.close();
  }
}
