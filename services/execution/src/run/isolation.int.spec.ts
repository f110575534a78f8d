import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { detectCgroups, type CgroupBases } from './cgroups.js';
import { canIsolateNetwork, processesOfUid, type Confinement } from './confine.js';
import { grantRunDirs, prepareRunDirs, removeRunDirs, sealInputs, type RunDirs } from './dirs.js';
import { findExecutable } from './limits.js';
import { runProcess, type RunOptions, type RunSpec } from './run-process.js';

// Each test runs a real job that tries to break out of its confinement and checks it cannot.
// The agent side (this process) runs as root, as a node agent does; jobs run as uids 61901+.
// Machine facts these tests rely on (checked, not assumed): root, util-linux setpriv/unshare,
// and cgroup v1 memory + pids controllers the agent can create groups in.

const isRoot = process.getuid?.() === 0;
let root: string;
let bases: CgroupBases;
let netns: boolean;
let seq = 0;
const made: RunDirs[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gpunet-iso-'));
  await chmod(root, 0o711); // the agent's work dir: passable by job users, not listable
  bases = await detectCgroups();
  netns = await canIsolateNetwork((await findExecutable('unshare', process.env.PATH)) ?? 'unshare');
  process.env.GPUNET_TEST_AGENT_SECRET = 'hunter2-agent-secret';
});
afterAll(async () => {
  delete process.env.GPUNET_TEST_AGENT_SECRET;
  for (const d of made) await removeRunDirs(d).catch(() => undefined);
  await rm(root, { recursive: true, force: true });
});

it('runs on a machine that offers what these tests need', () => {
  // Stated as a test so that a machine without them fails loudly instead of skipping.
  expect(isRoot).toBe(true);
  expect(netns).toBe(true);
  expect(bases.memory).toBeDefined();
  expect(bases.pids).toBeDefined();
});

/** Prepares a run whose work dir holds `job.sh`, with an input file, handed to `uid`. */
async function prepare(jobId: string, body: string, uid: number): Promise<{ dirs: RunDirs; user: { uid: number; gid: number } }> {
  const dirs = await prepareRunDirs(root, jobId, `attempt-${++seq}`);
  made.push(dirs);
  await writeFile(join(dirs.work, 'job.sh'), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  await writeFile(join(dirs.inputs, 'data.txt'), `input of ${jobId}\n`, { mode: 0o444 });
  await sealInputs(dirs.inputs);
  const user = { uid, gid: uid };
  await grantRunDirs(dirs, user);
  return { dirs, user };
}

async function run(dirs: RunDirs, confinement: Confinement, more: Partial<RunSpec> = {}, opts: RunOptions = {}) {
  const out: string[] = [];
  const spec: RunSpec = { jobId: 'j', attemptId: dirs.root.split('/').pop()!, dirs, command: './job.sh', timeLimitMs: 20_000, graceMs: 300, confinement, ...more };
  const result = await runProcess(spec, { onLog: (line) => out.push(line), cgroupBases: bases, ...opts });
  return { result, out, text: out.join('\n') };
}

describe('isolation: the job user', () => {
  it('runs the job as an unprivileged user without extra groups or a way back to root', async () => {
    const { dirs, user } = await prepare('job-user', 'id -u; id -G; grep NoNewPrivs /proc/self/status; su -c id root </dev/null 2>&1 || echo su-refused; cat /etc/shadow 2>&1 | head -1', 61901);
    const { result, out } = await run(dirs, { user });
    expect(result.outcome).toBe('completed');
    expect(out[0]).toBe('61901');
    expect(out[1]).toBe('61901');
    expect(out[2]).toMatch(/NoNewPrivs:\s+1/);
    expect(out).toContain('su-refused');
    expect(out.join('\n')).toMatch(/shadow: Permission denied/);
  });

  it('keeps the agent’s environment and secrets out of reach, also through /proc', async () => {
    const { dirs, user } = await prepare(
      'job-env',
      `env; cat /proc/${process.pid}/environ 2>&1 | tr '\\0' '\\n'; cat /proc/1/environ 2>&1 | head -c 200; echo; echo done`,
      61902,
    );
    const { result, text, out } = await run(dirs, { user });
    expect(result.outcome).toBe('completed');
    expect(text).not.toContain('hunter2-agent-secret');
    expect(text).not.toMatch(/GPUNET_TEST_AGENT_SECRET|GPUNET_NATS_URL|GPUNET_STORE_URL/);
    expect(text).toMatch(new RegExp(`/proc/${process.pid}/environ: Permission denied`));
    expect(out).toContain('done');
  });
});

describe('isolation: directories', () => {
  it('a job cannot list, read or write another job’s directories, nor write its own inputs or logs', async () => {
    const a = await prepare('job-a', 'echo secret-of-a > "$GPUNET_WORK_DIR/secret"; echo model-of-a > "$GPUNET_OUTPUT_DIR/model"; echo ck > "$GPUNET_CHECKPOINT_DIR/ck"', 61903);
    expect((await run(a.dirs, { user: a.user })).result.outcome).toBe('completed');

    const other = a.dirs.root;
    const tries = [
      `ls ${root}/runs`,
      `ls ${join(root, 'runs', 'job-a')}`,
      `ls ${other}`,
      `cat ${other}/work/secret`,
      `cat ${other}/outputs/model`,
      `cat ${other}/checkpoints/ck`,
      `cat ${other}/inputs/data.txt`,
      `cat ${other}/logs/run.log`,
      `touch ${other}/outputs/planted`,
      `rm -f ${other}/work/secret`,
      'touch "$GPUNET_INPUT_DIR/planted"',
      'echo x >> "$GPUNET_INPUT_DIR/data.txt"',
      `touch ${join('$GPUNET_WORK_DIR', '..', 'logs', 'planted')}`,
      `ls ${root}/cache`,
    ];
    const body = [
      ...tries.map((t, i) => `if ${t} >/dev/null 2>&1; then echo "BROKE-OUT ${i}"; else echo "refused ${i}"; fi`),
      'cat "$GPUNET_INPUT_DIR/data.txt"', // its own input stays readable
      'echo mine > "$GPUNET_OUTPUT_DIR/ok" && echo own-output-ok',
    ].join('\n');
    const b = await prepare('job-b', body, 61904);
    const { result, out } = await run(b.dirs, { user: b.user });
    expect(result.outcome).toBe('completed');
    expect(out.filter((l) => l.startsWith('BROKE-OUT'))).toEqual([]);
    expect(out.filter((l) => l.startsWith('refused'))).toHaveLength(tries.length);
    expect(out).toContain('input of job-b');
    expect(out).toContain('own-output-ok');
    expect(await readFile(join(a.dirs.work, 'secret'), 'utf8')).toBe('secret-of-a\n');
  });
});

describe('isolation: network', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  beforeAll(async () => {
    server = createServer((s) => {
      connections += 1;
      s.end('hello from the host\n');
    });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((res) => server.close(res));
  });

  const probe = () =>
    [
      `if timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/${String(port)}; cat <&3' 2>/dev/null; then echo reached-host; else echo no-host; fi`,
      // Interfaces of the job's own namespace (/proc/net is per namespace; /sys/class/net is not remounted).
      "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ' '; echo",
      // The namespace keeps a working loopback of its own.
      "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); c=socket.create_connection(s.getsockname()); print(\"own-loopback-ok\")'",
    ].join('\n');

  it('has no network when the spec does not ask for it: the host is out of reach, only loopback exists', async () => {
    const { dirs, user } = await prepare('job-nonet', probe(), 61905);
    const before = connections;
    const { result, out } = await run(dirs, { user, isolateNetwork: true });
    expect(result.outcome).toBe('completed');
    expect(out).toContain('no-host');
    expect(out[1]!.trim()).toBe('lo');
    expect(out).toContain('own-loopback-ok');
    expect(connections).toBe(before);
  });

  it('reaches the network when the spec asks for it', async () => {
    const { dirs, user } = await prepare('job-net', probe(), 61906);
    const before = connections;
    const { result, out } = await run(dirs, { user, isolateNetwork: false });
    expect(result.outcome).toBe('completed');
    expect(out).toContain('hello from the host');
    expect(out).toContain('reached-host');
    expect(connections).toBe(before + 1);
  });
});

/** Samples how many processes run as `uid` until `done` settles; returns the most seen at once. */
async function peakOf(uid: number, done: Promise<unknown>): Promise<number> {
  let peak = 0;
  let over = false;
  void done.finally(() => (over = true));
  while (!over) {
    peak = Math.max(peak, (await processesOfUid(uid)).length);
    await sleep(20);
  }
  return peak;
}

const FORK_BOMB = 'bomb() { bomb | bomb & }; bomb; sleep 1; echo "still-here"; sleep 5';

describe('isolation: process and memory limits', () => {
  it('contains a fork bomb with the run’s pids cgroup, and nothing of it survives the run', async () => {
    const { dirs, user } = await prepare('job-bomb', FORK_BOMB, 61907);
    const running = run(dirs, { user, cgroup: { maxProcesses: 40 } }, { timeLimitMs: 2_500 });
    const peak = await peakOf(user.uid, running);
    const { text } = await running;
    expect(text).toContain('still-here'); // the job itself goes on: forks beyond the cap fail
    expect(peak).toBeGreaterThan(5);
    expect(peak).toBeLessThanOrEqual(40);
    expect(text).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
    expect(await processesOfUid(user.uid)).toEqual([]);
  });

  it('contains a fork bomb with RLIMIT_NPROC where no cgroup is at hand', async () => {
    const { dirs, user } = await prepare('job-bomb-rlimit', FORK_BOMB, 61908);
    const running = run(dirs, { user }, { timeLimitMs: 2_500, limits: { maxProcesses: 40 } }, { cgroupBases: {} });
    const peak = await peakOf(user.uid, running);
    const { text } = await running;
    expect(text).toContain('still-here');
    expect(peak).toBeLessThanOrEqual(40);
    expect(text).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
    expect(await processesOfUid(user.uid)).toEqual([]);
  });

  it('stops a memory hog at the run’s memory limit (OOM-killed, recorded as such)', async () => {
    // `tail -n 1` keeps a whole newline-free "line" in memory: 512 MiB against a 64 MiB cap.
    const { dirs, user } = await prepare('job-hog', 'head -c 536870912 /dev/zero | tail -n 1 > /dev/null; echo "exit of tail: ${PIPESTATUS[1]}"; exit 3', 61909);
    const { result, text } = await run(dirs, { user, cgroup: { memoryBytes: 64 * 1024 * 1024 } });
    expect(result.oomKilled).toBe(true);
    expect(text).toMatch(/exit of tail: 137/); // SIGKILL by the OOM killer
    expect(text).toMatch(/\[gpunet\] out of memory/);
    expect(result.outcome).toBe('failed');
  });

  it('kills processes that left the process group (setsid) when the run ends', async () => {
    const { dirs, user } = await prepare('job-escape', 'setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo escaped-pid $!', 61910);
    const { result, text } = await run(dirs, { user }, {}, { drainMs: 200 });
    expect(result.outcome).toBe('completed');
    expect(text).toMatch(/escaped-pid \d+/);
    expect(result.strays).toBeGreaterThanOrEqual(1);
    expect(await processesOfUid(user.uid)).toEqual([]);
  });
});

describe('isolation: cgroups left by a killed agent', () => {
  it('removes the groups of one node’s runs (and kills what runs in them), and no other node’s', async () => {
    const { RunCgroups, removeStaleCgroups } = await import('./cgroups.js');
    const mine = await RunCgroups.create(bases, 'node-x-job-1-a1', { maxProcesses: 10 });
    const other = await RunCgroups.create(bases, 'node-y-job-1-a1', {});
    const { spawn } = await import('node:child_process');
    const child = spawn('sh', ['-c', `echo $$ > ${mine.procsFiles[0]}; exec sleep 300`], { stdio: 'ignore' });
    const exited = new Promise((res) => child.once('exit', res));
    await until(async () => (await mine.members()).length === 1);
    expect(await removeStaleCgroups(bases, 'node-x-')).toBe(1);
    await exited;
    expect(child.signalCode).toBe('SIGKILL');
    expect(await mine.members()).toEqual([]);
    expect(await other.members()).toEqual([]);
    const { existsSync } = await import('node:fs');
    expect(Object.values(mine.dirs).some((d) => existsSync(d))).toBe(false);
    expect(Object.values(other.dirs).every((d) => existsSync(d))).toBe(true);
    await other.remove();
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await sleep(10);
}
