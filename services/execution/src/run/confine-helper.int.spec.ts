import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readdirSync } from 'node:fs';
import { compileConfineHelper } from '../../test-fixtures/confine-helper.js';
import { runProcess } from './run-process.js';
import { prepareRunDirs, removeRunDirs } from './dirs.js';

// gpunet-confine's own contract (decision 0049), on a copy compiled from the source as the build does: what it does
// when asked, and that it refuses, before anything of the job starts, whatever it cannot do
// exactly as asked. The attacks of a job on its confinement are in isolation.int.spec.ts, run
// once through the util-linux chain and once through this helper.

let root: string;
let BUILT_CONFINE_HELPER: string;
let compiled: Awaited<ReturnType<typeof compileConfineHelper>> | undefined;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'gpunet-helper-'));
  await chmod(root, 0o711);
  compiled = await compileConfineHelper();
  BUILT_CONFINE_HELPER = compiled.path;
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await compiled?.remove();
});

function helper(args: readonly string[], cwd = '/'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(BUILT_CONFINE_HELPER, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

it('runs as root here (the agent’s case)', () => {
  expect(process.getuid?.()).toBe(0);
});

it('gives the command the job user, no groups, no capabilities, no_new_privs, the limits, loopback only, and a private /tmp', async () => {
  const keep = join(root, 'runs', 'kept');
  await mkdir(keep, { recursive: true, mode: 0o777 });
  const r = await helper(
    ['ns=mount', 'ns=ipc', 'ns=net', 'lo', `keep=${keep}`, 'tmpfs=65536:/tmp', 'mqueue=/dev/mqueue', 'rlimit=nofile:64', 'rlimit=core:0', 'user=61995:61995', '--', 'sh', '-c',
      'id -u; id -g; grep -E "^(Groups|CapEff|CapPrm|NoNewPrivs):" /proc/self/status; ulimit -n; ulimit -Hn; ulimit -c; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d " "; pwd; ls -A /tmp; echo end'],
    keep,
  );
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(readdirSync('/tmp').length).toBeGreaterThan(1);
  const lines = r.stdout.trim().split('\n');
  expect(lines.slice(0, 2)).toEqual(['61995', '61995']);
  expect(r.stdout).toMatch(/^Groups:\s*$/m);
  expect(r.stdout).toMatch(/^CapEff:\s*0+$/m);
  expect(r.stdout).toMatch(/^CapPrm:\s*0+$/m);
  expect(r.stdout).toMatch(/^NoNewPrivs:\s*1$/m);
  const rest = lines.slice(6);
  expect(rest.slice(0, 3)).toEqual(['64', '64', '0']);
  expect(rest[3]).toBe('lo');
  expect(rest[4]).toBe(keep); // the working directory, under the private /tmp, is bound back in
  // The private /tmp holds only the way to it; the host's /tmp (this test's own directories, …) is hidden.
  expect(rest.slice(5)).toEqual([root.split('/').pop(), 'end']);
});

it('refuses what it cannot do exactly as asked (exit 125, a message naming the option), and starts nothing', async () => {
  const marker = join(root, 'started');
  const job = ['--', 'sh', '-c', `touch ${marker}`];
  const cases: [string[], RegExp][] = [
    [['user=0:0', ...job], /user=0:0: uid and gid must be positive and never root/],
    [['user=61000:0', ...job], /never root/],
    [['user=61000', ...job], /expected user=<uid>:<gid>/],
    [['user=-1:5', ...job], /not a number/],
    [['user=4294967296:5', ...job], /never root|not a number/],
    [['rlimit=stack:5', ...job], /unknown limit/],
    [['rlimit=nofile:x', ...job], /not a number/],
    [['tmpfs=65536:/tmp', ...job], /need ns=mount/],
    [['lo', ...job], /lo needs ns=net/],
    [['ns=pid', ...job], /unknown namespace/],
    [['keep=relative', 'ns=mount', ...job], /not an absolute path/],
    [['cgroup=/nonexistent/cgroup.procs', ...job], /could not join cgroup \/nonexistent\/cgroup.procs/],
    [['--frobnicate', ...job], /unknown option --frobnicate/],
    [['user=61000:61000'], /no command after --/],
  ];
  for (const [args, message] of cases) {
    const r = await helper(args);
    expect({ args, code: r.code }).toEqual({ args, code: 125 });
    expect(r.stderr).toMatch(/^\[gpunet\] /);
    expect(r.stderr).toMatch(message);
  }
  await expect(readFile(marker)).rejects.toThrow(/ENOENT/);
});

it('exits 127 for a command that does not exist and 126 for one that cannot be executed, like a shell', async () => {
  const notExecutable = join(root, 'not-executable');
  await writeFile(notExecutable, 'true\n', { mode: 0o644 });
  expect((await helper(['--', join(root, 'missing')])).code).toBe(127);
  expect((await helper(['--', notExecutable])).code).toBe(126);
});

it('is what runProcess starts when the agent names it: the spawned pid is the job', async () => {
  // A wrapper in the helper's place shows runProcess spawned it (and passed the confinement on).
  const wrapper = join(root, 'wrapper.sh');
  const seen = join(root, 'seen-args');
  await writeFile(wrapper, `#!/bin/sh\necho "$@" > ${seen}\nexec ${BUILT_CONFINE_HELPER} "$@"\n`, { mode: 0o755 });
  const dirs = await prepareRunDirs(root, 'job-h', 'attempt-h');
  try {
    const out: string[] = [];
    let spawned = 0;
    const result = await runProcess(
      { jobId: 'job-h', attemptId: 'attempt-h', dirs, command: 'sh', args: ['-c', 'echo pid $$'], timeLimitMs: 20_000, confinement: { isolateNetwork: true }, limits: { maxOpenFiles: 32 } },
      { confineHelperPath: wrapper, onLog: (line) => out.push(line), onSpawn: (pid) => (spawned = pid) },
    );
    expect(result.outcome).toBe('completed');
    expect(await readFile(seen, 'utf8')).toBe('ns=net lo rlimit=nofile:32 -- sh -c echo pid $$\n');
    expect(out).toContain(`pid ${spawned}`);
  } finally {
    await removeRunDirs(dirs);
  }
});
