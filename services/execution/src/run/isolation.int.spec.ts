import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { detectCgroups, type CgroupBases } from './cgroups.js';
import { compileConfineHelper } from '../../test-fixtures/confine-helper.js';
import { canIsolateMounts, canIsolateNetwork, helperProblem, processesOfUid, type Confinement } from './confine.js';
import { grantRunDirs, prepareRunDirs, removeRunDirs, sealInputs, type RunDirs } from './dirs.js';
import { findExecutable } from './limits.js';
import { runProcess, type RunOptions, type RunSpec } from './run-process.js';
import { until as waitFor } from '../../../../test/support/poll.js';

// Each test runs a real job that tries to break out of its confinement and checks it cannot.
// The agent side (this process) runs as root, as a node agent does; jobs run as uids 61901+.
// Machine facts these tests rely on (checked, not assumed): root, util-linux setpriv/unshare,
// cgroup v1 memory + pids controllers the agent can create groups in, and a C compiler for
// gpunet-confine (compiled here from its source, as the build does). Every attack runs twice: confined by the util-linux chain, and by
// gpunet-confine, the one process that does the same (decision 0049).

const isRoot = process.getuid?.() === 0;
let root: string;
let bases: CgroupBases;
let netns: boolean;
let mountns: boolean;
let seq = 0;
/** The launcher of the tests running now: gpunet-confine, or (undefined) the util-linux chain. */
let helper: string | undefined;
let compiled: Awaited<ReturnType<typeof compileConfineHelper>> | undefined;
const made: RunDirs[] = [];

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gpunet-iso-'));
  await chmod(root, 0o711); // the agent's work dir: passable by job users, not listable
  bases = await detectCgroups();
  netns = await canIsolateNetwork((await findExecutable('unshare', process.env.PATH)) ?? 'unshare');
  mountns = await canIsolateMounts((await findExecutable('unshare', process.env.PATH)) ?? 'unshare', (await findExecutable('mount', process.env.PATH)) ?? 'mount');
  process.env.GPUNET_TEST_AGENT_SECRET = 'hunter2-agent-secret';
  compiled = await compileConfineHelper();
});
afterAll(async () => {
  delete process.env.GPUNET_TEST_AGENT_SECRET;
  for (const d of made) await removeRunDirs(d).catch(() => undefined);
  await rm(root, { recursive: true, force: true });
  await compiled?.remove();
});

it('runs on a machine that offers what these tests need', () => {
  // Stated as a test so that a machine without them fails loudly instead of skipping.
  expect(isRoot).toBe(true);
  expect(netns).toBe(true);
  expect(mountns).toBe(true);
  expect(bases.memory).toBeDefined();
  expect(bases.pids).toBeDefined();
});

it('has gpunet-confine compiled, and it works here', async () => {
  expect(await helperProblem(compiled!.path)).toBeUndefined();
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
  const result = await runProcess(spec, { onLog: (line) => out.push(line), cgroupBases: bases, ...(helper !== undefined && { confineHelperPath: helper }), ...opts });
  return { result, out, text: out.join('\n') };
}

describe.each([
  ['the util-linux chain', undefined],
  ['gpunet-confine', 'compiled'],
])('confined by %s', (_name, launcher) => {
  beforeAll(() => {
    helper = launcher === 'compiled' ? compiled!.path : undefined;
  });

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

  // The job's own shell goes on past the bomb and ends by itself; the bombs it left are what the run's
  // end must kill. No time limit is raced: under load bash's fork retries alone can take seconds.
  const FORK_BOMB = 'bomb() { bomb | bomb & }; bomb; sleep 1; echo "still-here"';

  describe('isolation: process and memory limits', () => {
    it('contains a fork bomb with the run’s pids cgroup, and nothing of it survives the run', async () => {
      const { dirs, user } = await prepare('job-bomb', FORK_BOMB, 61907);
      const running = run(dirs, { user, cgroup: { maxProcesses: 40 } }, { timeLimitMs: 120_000 });
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
      const running = run(dirs, { user }, { timeLimitMs: 120_000, limits: { maxProcesses: 40 } }, { cgroupBases: {} });
      const peak = await peakOf(user.uid, running);
      const { text } = await running;
      expect(text).toContain('still-here');
      expect(peak).toBeLessThanOrEqual(40);
      expect(text).toMatch(/fork: (retry: )?Resource temporarily unavailable/);
      expect(await processesOfUid(user.uid)).toEqual([]);
    });

    it('stops a memory hog at the run’s memory limit (OOM-killed, recorded as such, limit memory_limit)', async () => {
      // `tail -n 1` keeps a whole newline-free "line" in memory: 512 MiB against a 64 MiB cap.
      const { dirs, user } = await prepare('job-hog', 'head -c 536870912 /dev/zero | tail -n 1 > /dev/null; echo "exit of tail: ${PIPESTATUS[1]}"; exit 3', 61909);
      const { result, text } = await run(dirs, { user, cgroup: { memoryBytes: 64 * 1024 * 1024 } });
      expect(result.oomKilled).toBe(true);
      expect(text).toMatch(/exit of tail: 137/); // SIGKILL by the OOM killer
      expect(text).toMatch(/\[gpunet\] out of memory/);
      expect(result.outcome).toBe('failed');
      expect(result.limit).toBe('memory_limit');
    });

    it('kills processes that left the process group (setsid) when the run ends', async () => {
      // The job exits only once its child has left the group (its own pgrp in /proc): on a loaded
      // machine the shell could otherwise exit first, and the child be stopped as a group member.
      const escape = [
        'setsid sleep 300 > /dev/null 2>&1 < /dev/null &',
        'pid=$!',
        'pgrp() { cut -d" " -f5 "/proc/$1/stat"; }',
        'until [ "$(pgrp $pid)" != "$(pgrp $$)" ]; do sleep 0.01; done',
        'echo escaped-pid $pid',
      ].join('\n');
      const { dirs, user } = await prepare('job-escape', escape, 61910);
      const { result, text } = await run(dirs, { user }, {}, { drainMs: 200 });
      expect(result.outcome).toBe('completed');
      expect(text).toMatch(/escaped-pid \d+/);
      expect(result.strays).toBeGreaterThanOrEqual(1);
      // The run says none is left (the agent then hands the uid back without looking again), and it is so.
      expect(result.noneLeftOfJobUser).toBe(true);
      expect(await processesOfUid(user.uid)).toEqual([]);
    });

    it('attack: a job cannot leave the run’s cgroups (the run’s end counts on them to hold every process of its job user)', async () => {
      // Into the base group of each controller (where the agent's groups live) and into the root
      // group: both must be refused, and the job's shell must still be in the run's groups after.
      const targets = [bases.memory!, bases.pids!, '/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids'].map((d) => join(d, 'cgroup.procs'));
      const body = [
        `for f in ${targets.join(' ')}; do`,
        '  if [ -e "$f" ]; then (echo $$ > "$f") 2>/dev/null && echo "LEFT into $f" || echo "refused $f"; fi',
        'done',
        'grep -E "memory|pids" /proc/self/cgroup',
      ].join('\n');
      const { dirs, user } = await prepare('job-leave-cgroup', body, 61922);
      const attemptId = dirs.root.split('/').pop()!;
      const { result, out } = await run(dirs, { user }, {}, { cgroupName: `gpunet.iso-${attemptId}` });
      expect(result.outcome).toBe('completed');
      expect(out.filter((l) => l.startsWith('LEFT'))).toEqual([]);
      expect(out.filter((l) => l.startsWith('refused')).length).toBeGreaterThanOrEqual(2);
      // Still in the run's group of each controller.
      const groups = out.filter((l) => /^\d+:/.test(l));
      expect(groups.length).toBeGreaterThanOrEqual(2);
      for (const line of groups) expect(line).toContain(`gpunet.iso-${attemptId}`);
      expect(result.noneLeftOfJobUser).toBe(true);
    });

    it('a process of the job user outside the run’s groups (none of a run can be: planted here by root) is not the run’s to kill, and its uid is not handed out again while it lives', async () => {
      const { JobUserPool } = await import('./confine.js');
      const { spawn } = await import('node:child_process');
      const { mkdtemp: mkd } = await import('node:fs/promises');
      const uid = 61923;
      const planted = spawn('sleep', ['300'], { uid, gid: uid, stdio: 'ignore' });
      const gone = new Promise((res) => planted.once('exit', res));
      const claims = await mkd(join(tmpdir(), 'gpunet-claims-'));
      try {
        await waitFor('the planted process to run as the job user', async () => (await processesOfUid(uid)).includes(planted.pid!));
        const { dirs, user } = await prepare('job-beside-planted', 'echo ran', uid);
        const { result } = await run(dirs, { user });
        expect(result.outcome).toBe('completed');
        // The run's groups held all of the run, and were empty at its end.
        expect(result.noneLeftOfJobUser).toBe(true);
        expect(await processesOfUid(uid)).toEqual([planted.pid]);
        // The claim of the uid for a next attempt looks at every process of the machine.
        const quarantined: [number, string][] = [];
        const pool = new JobUserPool(uid, 2, claims, { places: [], onQuarantine: (u, why) => quarantined.push([u, why]) });
        expect(pool.take('next-attempt')).toEqual({ uid: uid + 1, gid: uid + 1 });
        expect(quarantined).toEqual([[uid, 'a process still runs under it']]);
      } finally {
        planted.kill('SIGKILL');
        await gone;
        await rm(claims, { recursive: true, force: true });
      }
    });
  });

  describe('isolation: cgroups left by a killed agent', () => {
    it('removes the groups of one node’s runs (and kills what runs in them), and no other node’s', async () => {
      const { RunCgroups, removeStaleCgroups, runCgroupName } = await import('./cgroups.js');
      const mine = await RunCgroups.create(bases, runCgroupName('node-x', 'job-1-a1'), { maxProcesses: 10 });
      const other = await RunCgroups.create(bases, runCgroupName('node-y', 'job-1-a1'), {});
      const { spawn } = await import('node:child_process');
      const child = spawn('sh', ['-c', `echo $$ > ${mine.procsFiles[0]}; exec sleep 300`], { stdio: 'ignore' });
      const exited = new Promise((res) => child.once('exit', res));
      await until(async () => (await mine.members()).length === 1);
      expect(await removeStaleCgroups(bases, 'node-x')).toBe(1);
      await exited;
      expect(child.signalCode).toBe('SIGKILL');
      expect(await mine.members()).toEqual([]);
      expect(await other.members()).toEqual([]);
      const { existsSync } = await import('node:fs');
      expect(Object.values(mine.dirs).some((d) => existsSync(d))).toBe(false);
      expect(Object.values(other.dirs).every((d) => existsSync(d))).toBe(true);
      await other.remove();
    });

    it('attack: the start-up of agent `a` leaves the running job of agent `a-b` alive (exact node match, not a prefix)', async () => {
      // Before exact matching, `a` removed every `gpunet-a-*` group, `gpunet-a-b-<attempt>` included.
      const { RunCgroups, removeStaleCgroups, runCgroupName } = await import('./cgroups.js');
      const { spawn } = await import('node:child_process');
      const ofA = await RunCgroups.create(bases, runCgroupName('a', 'job-1-a1'), {});
      const ofAB = await RunCgroups.create(bases, runCgroupName('a-b', 'job-2-a1'), { maxProcesses: 10 });
      const start = (group: Awaited<ReturnType<typeof RunCgroups.create>>) => {
        const child = spawn('sh', ['-c', `for f in ${group.procsFiles.join(' ')}; do echo $$ > $f; done; exec sleep 300`], { stdio: 'ignore' });
        return { child, exited: new Promise((res) => child.once('exit', res)) };
      };
      const a = start(ofA);
      const ab = start(ofAB);
      await until(async () => (await ofA.members()).length === 1 && (await ofAB.members()).length === 1);
      expect(await removeStaleCgroups(bases, 'a')).toBe(1);
      await a.exited;
      expect(a.child.signalCode).toBe('SIGKILL');
      expect(ab.child.exitCode).toBeNull();
      expect(ab.child.signalCode).toBeNull();
      expect(await ofAB.members()).toEqual([ab.child.pid]);
      await ofAB.remove();
      await ab.exited;
    });
  });

  describe('isolation: cgroups of another agent with the same node id', () => {
    it('attack: the restart of one agent leaves alive the run of another agent that claims the same node id on this machine', async () => {
      // Before, the restarting agent removed every `gpunet.<its node id>.*` group it found, so a second
      // network on the machine (or a second test run) with a `node-1` lost its running jobs.
      const { RunCgroups, removeStaleCgroups, runCgroupName } = await import('./cgroups.js');
      const { spawn } = await import('node:child_process');
      const left = await RunCgroups.create(bases, runCgroupName('node-z', 'job-left-a1'), {});
      const others = await RunCgroups.create(bases, runCgroupName('node-z', 'job-other-a1'), { maxProcesses: 10 });
      const start = (group: Awaited<ReturnType<typeof RunCgroups.create>>) => {
        const child = spawn('sh', ['-c', `for f in ${group.procsFiles.join(' ')}; do echo $$ > $f; done; exec sleep 300`], { stdio: 'ignore' });
        return { child, exited: new Promise((res) => child.once('exit', res)) };
      };
      const mine = start(left);
      const theirs = start(others);
      await until(async () => (await left.members()).length === 1 && (await others.members()).length === 1);
      // The restarted agent's journal names only `job-left-a1` as a run it started.
      expect(await removeStaleCgroups(bases, 'node-z', new Set(['job-left-a1']))).toBe(1);
      await mine.exited;
      expect(mine.child.signalCode).toBe('SIGKILL');
      expect(theirs.child.exitCode).toBeNull();
      expect(theirs.child.signalCode).toBeNull();
      expect(await others.members()).toEqual([theirs.child.pid]);
      await others.remove();
      await theirs.exited;
    });
  });

  async function until(check: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 200 && !(await check()); i++) await sleep(10);
  }

  describe('isolation: private /tmp, /var/tmp, /dev/shm (mount namespace)', () => {
    const tag = `gpunet-iso-${process.pid}-${Date.now()}`;
    const leave = [
      `echo secret-of-a > /tmp/${tag}-x && echo wrote-tmp`,
      `echo secret-of-a > /dev/shm/${tag}-y && echo wrote-shm`,
      `echo secret-of-a > /var/tmp/${tag}-z && echo wrote-var-tmp`,
      `echo secret-of-a > /run/lock/${tag}-l && echo wrote-run-lock`,
      `chmod 666 /tmp/${tag}-x /dev/shm/${tag}-y /var/tmp/${tag}-z /run/lock/${tag}-l`,
    ].join('\n');
    const look = [`/tmp/${tag}-x`, `/dev/shm/${tag}-y`, `/var/tmp/${tag}-z`, `/run/lock/${tag}-l`]
      .map((f, i) => `if cat ${f} 2>/dev/null; then echo "SAW ${i}"; fi; if echo overwritten 2>/dev/null > ${f}; then echo "WROTE ${i}"; fi`)
      .join('\n');
    const hostFiles = () => [`/tmp/${tag}-x`, `/dev/shm/${tag}-y`, `/var/tmp/${tag}-z`, `/run/lock/${tag}-l`];
    afterAll(async () => {
      for (const f of hostFiles()) await rm(f, { force: true });
    });

    it('attack (without the mount namespace, as before): job B of the same uid reads and overwrites what job A left in /tmp and /dev/shm', async () => {
      const a = await prepare('job-leave-open', leave, 61911);
      expect((await run(a.dirs, { user: a.user })).result.outcome).toBe('completed');
      const b = await prepare('job-look-open', look, 61911);
      const { out } = await run(b.dirs, { user: b.user });
      expect(out).toEqual(expect.arrayContaining(['secret-of-a', 'SAW 0', 'SAW 1', 'WROTE 0', 'WROTE 1']));
      for (const f of hostFiles()) await rm(f, { force: true });
    });

    it('job A’s files in /tmp, /var/tmp, /dev/shm and /run/lock vanish with it; job B (same uid) finds nothing; the run’s own dirs stay usable', async () => {
      const a = await prepare('job-leave', `${leave}\ncat "$GPUNET_INPUT_DIR/data.txt"; echo own > "$GPUNET_OUTPUT_DIR/own" && echo own-output-ok; df -k /tmp | tail -1`, 61912);
      const ra = await run(a.dirs, { user: a.user, privateTmp: { sizeBytes: 16 * 2 ** 20, keep: a.dirs.root } });
      expect(ra.result.outcome).toBe('completed');
      expect(ra.out).toEqual(expect.arrayContaining(['wrote-tmp', 'wrote-shm', 'wrote-var-tmp', 'wrote-run-lock', 'input of job-leave', 'own-output-ok']));
      expect(ra.text).toMatch(/gpunet-tmp\s+16384\s/); // a tmpfs of the run's size, not the host's /tmp
      expect(await readFile(join(a.dirs.outputs, 'own'), 'utf8')).toBe('own\n');
      for (const f of hostFiles()) await expect(readFile(f)).rejects.toThrow(/ENOENT/);

      const b = await prepare('job-look', look, 61912);
      const rb = await run(b.dirs, { user: b.user, privateTmp: { sizeBytes: 16 * 2 ** 20, keep: b.dirs.root } });
      expect(rb.result.outcome).toBe('completed');
      expect(rb.out.filter((l) => /^(SAW|WROTE) /.test(l) && !l.startsWith('WROTE'))).toEqual([]);
      expect(rb.text).not.toContain('secret-of-a');
      // B may write its own files there, which vanish with it too.
      for (const f of hostFiles()) await expect(readFile(f)).rejects.toThrow(/ENOENT/);
    });

    it('a job cannot fill more than its size in /tmp (ENOSPC)', async () => {
      const { dirs, user } = await prepare('job-fill-tmp', 'head -c 8388608 /dev/zero > /tmp/big 2>/dev/null || echo no-space; ls -l /tmp/big | cut -d" " -f5', 61913);
      const { result, out } = await run(dirs, { user, privateTmp: { sizeBytes: 2 ** 20, keep: dirs.root } });
      expect(result.outcome).toBe('completed');
      expect(out).toContain('no-space');
      expect(Number(out[out.length - 1])).toBeLessThanOrEqual(2 ** 20);
    });
  });

  describe('isolation: a uid is not handed out again while a file of it is left', () => {
    it('quarantines the uid of a job that left a file in a world-writable place, and hands it out again once it is gone', async () => {
      const { JobUserPool } = await import('./confine.js');
      const { mkdtemp: mkd } = await import('node:fs/promises');
      const left = `/tmp/gpunet-left-${process.pid}-${Date.now()}`;
      // Without a mount namespace the job's file outlives it in the host's /tmp.
      const { dirs, user } = await prepare('job-leftover', `echo planted > ${left}; chmod 644 ${left}`, 61920);
      expect((await run(dirs, { user })).result.outcome).toBe('completed');
      const claims = await mkd(join(tmpdir(), 'gpunet-claims-'));
      const quarantined: [number, string][] = [];
      try {
        const pool = new JobUserPool(61920, 2, claims, { places: ['/tmp'], onQuarantine: (uid, why) => quarantined.push([uid, why]) });
        expect(pool.take('next-attempt')).toEqual({ uid: 61921, gid: 61921 });
        expect(quarantined).toEqual([[61920, `it still owns ${left}`]]);
        expect(pool.quarantinedUids).toEqual([61920]);
        pool.give('next-attempt');
        await rm(left);
        expect(pool.take('later-attempt')).toEqual({ uid: 61920, gid: 61920 });
        expect(pool.quarantinedUids).toEqual([]);
      } finally {
        await rm(left, { force: true });
        await rm(claims, { recursive: true, force: true });
      }
    });
  });

  describe('isolation: disk cap', () => {
    it('stops a job that fills its work dir beyond its disk limit, and says why', async () => {
      const { dirs, user } = await prepare('job-disk', 'for i in $(seq 1 60); do head -c 1048576 /dev/urandom > "$GPUNET_WORK_DIR/f$i"; sleep 0.05; done; echo never-stopped', 61914);
      const { result, text } = await run(dirs, { user }, { diskLimitBytes: 8 * 2 ** 20 }, { diskCheckMs: 100 });
      expect(result.outcome).toBe('failed');
      expect(result.limit).toBe('disk_limit');
      expect(result.diskBytes).toBeGreaterThan(8 * 2 ** 20);
      expect(text).toMatch(/\[gpunet\] disk limit of 8388608 bytes reached/);
      expect(text).not.toContain('never-stopped');
    });

    it('counts what the job keeps in its private /tmp towards the cap', async () => {
      const body = 'head -c 5242880 /dev/urandom > "$GPUNET_WORK_DIR/half"; head -c 5242880 /dev/urandom > /tmp/other-half; sleep 10; echo never-stopped';
      const { dirs, user } = await prepare('job-disk-tmp', body, 61915);
      const { result, text } = await run(dirs, { user, privateTmp: { sizeBytes: 8 * 2 ** 20, keep: dirs.root } }, { diskLimitBytes: 8 * 2 ** 20 }, { diskCheckMs: 100 });
      expect(result.limit).toBe('disk_limit');
      expect(result.outcome).toBe('failed');
      expect(text).not.toContain('never-stopped');
    });
  });
});
