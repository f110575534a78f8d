import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cgroupV1Dirs } from './cgroups.js';
import { CONFINE_SCRIPT, confineArgv, confinementIssues, helperArgv, ConfinementUnavailableError, JobUserPool, parseUidRange } from './confine.js';
import { launchArgv } from './run-process.js';

const tools = { setprivPath: '/usr/bin/setpriv', unsharePath: '/usr/bin/unshare', shPath: '/bin/sh', ipPath: '/sbin/ip' };

describe('helperArgv (gpunet-confine)', () => {
  it('is one process for every part: cgroups, namespaces, loopback, tmpfs, limits, the job user', () => {
    const argv = launchArgv(
      {
        command: 'python3',
        args: ['t.py'],
        limits: { maxOpenFiles: 64, maxProcesses: 10 },
        confinement: { user: { uid: 61001, gid: 61001 }, isolateNetwork: true, privateTmp: { sizeBytes: 4096, keep: '/tmp/w/runs/j/a' } },
      },
      { ...tools, helperPath: '/opt/gpunet-confine', prlimitPath: '/usr/bin/prlimit', cgroupProcs: ['/cg/pids/g/cgroup.procs'] },
    );
    expect(argv).toEqual([
      '/opt/gpunet-confine',
      'cgroup=/cg/pids/g/cgroup.procs',
      'ns=mount', 'ns=ipc', 'ns=net', 'lo',
      'keep=/tmp/w/runs/j/a', 'tmpfs=4096:/tmp', 'tmpfs=4096:/var/tmp', 'tmpfs=4096:/dev/shm', 'tmpfs=4096:/run/lock', 'mqueue=/dev/mqueue',
      'rlimit=nproc:10', 'rlimit=nofile:64',
      'user=61001:61001',
      '--', 'python3', 't.py',
    ]);
  });

  it('asks for nothing the confinement does not name', () => {
    expect(helperArgv(['true'], undefined, undefined, '/h')).toEqual(['/h', '--', 'true']);
    expect(helperArgv(['true'], { isolateNetwork: true }, {}, '/h')).toEqual(['/h', 'ns=net', 'lo', '--', 'true']);
  });
});

describe('confineArgv', () => {
  it('leaves the command alone without a confinement', () => {
    expect(confineArgv(['python3', 'train.py'], undefined, {})).toEqual(['python3', 'train.py']);
  });

  it('drops to the job user last, so every root-only step happens before', () => {
    expect(confineArgv(['python3'], { user: { uid: 61000, gid: 61000 } }, tools)).toEqual([
      '/usr/bin/setpriv', '--reuid=61000', '--regid=61000', '--clear-groups', '--no-new-privs', '--', 'python3',
    ]);
  });

  it('wraps namespace → cgroups and loopback → prlimit → setpriv → job, in that order', () => {
    const argv = launchArgv(
      { command: 'python3', args: ['t.py'], limits: { maxOpenFiles: 64 }, confinement: { user: { uid: 61001, gid: 61001 }, isolateNetwork: true } },
      { ...tools, prlimitPath: '/usr/bin/prlimit', cgroupProcs: ['/cg/memory/gpunet-a1/cgroup.procs'] },
    );
    expect(argv).toEqual([
      '/usr/bin/unshare', '--net', '--',
      '/bin/sh', '-c', CONFINE_SCRIPT, 'gpunet-confine', '/cg/memory/gpunet-a1/cgroup.procs', 'lo=/sbin/ip', '--',
      '/usr/bin/prlimit', '--nofile=64:64', '--',
      '/usr/bin/setpriv', '--reuid=61001', '--regid=61001', '--clear-groups', '--no-new-privs', '--',
      'python3', 't.py',
    ]);
  });

  it('names the missing tool instead of running the job unconfined', () => {
    expect(() => confineArgv(['x'], { isolateNetwork: true }, {})).toThrow(ConfinementUnavailableError);
    expect(() => confineArgv(['x'], { user: { uid: 5, gid: 5 } }, {})).toThrow(/setpriv/);
  });

  it('refuses root or nonsense as the job user, and non-positive limits', () => {
    expect(confinementIssues({ user: { uid: 0, gid: 0 } }).map((i) => i.path)).toEqual(['confinement.user']);
    expect(confinementIssues({ cgroup: { memoryBytes: 0, maxProcesses: 1.5 } }).map((i) => i.path)).toEqual(['confinement.cgroup.memoryBytes', 'confinement.cgroup.maxProcesses']);
    expect(confinementIssues({ user: { uid: 61000, gid: 61000 }, cgroup: { memoryBytes: 1 << 20 } })).toEqual([]);
  });
});

describe('JobUserPool', () => {
  let claims: string;
  // A range no agent of this machine hands out (agents use 61000-61999): the pool also checks the
  // machine for processes and files of a uid, and a network running beside the tests must not
  // make these uids look taken.
  const B = 3_900_000_000;
  beforeEach(() => {
    claims = mkdtempSync(join(tmpdir(), 'gpunet-uids-'));
  });
  afterEach(() => rmSync(claims, { recursive: true, force: true }));

  it('gives concurrent attempts distinct uids and reuses a uid only once given back', () => {
    const pool = new JobUserPool(B, 2, claims);
    expect(pool.take('a1')).toEqual({ uid: B, gid: B });
    expect(pool.take('a1')).toEqual({ uid: B, gid: B });
    expect(pool.take('a2')).toEqual({ uid: B + 1, gid: B + 1 });
    expect(pool.take('a3')).toBeUndefined();
    pool.give('a1');
    expect(pool.take('a3')).toEqual({ uid: B, gid: B });
  });

  it('never hands one uid to two agents of the same machine; a dead agent\'s claim is taken over', () => {
    const one = new JobUserPool(B + 100, 3, claims);
    const other = new JobUserPool(B + 100, 3, claims);
    expect(one.take('x')).toEqual({ uid: B + 100, gid: B + 100 });
    expect(other.take('x')).toEqual({ uid: B + 101, gid: B + 101 }); // same attempt id on two nodes (a gang)
    writeFileSync(join(claims, String(B + 101), 'pid'), '999999999'); // as if that agent had died
    expect(one.take('y')).toEqual({ uid: B + 101, gid: B + 101 });
  });

  it("takes a dead agent's claim over once: an agent that finds another already taking it over moves on to the next uid", () => {
    const pool = new JobUserPool(B + 200, 2, claims);
    mkdirSync(join(claims, String(B + 200)));
    writeFileSync(join(claims, String(B + 200), 'pid'), '999999998'); // a dead agent's claim…
    mkdirSync(join(claims, String(B + 200), 'takeover-999999998')); // …that another agent is taking over right now
    expect(pool.take('z')).toEqual({ uid: B + 201, gid: B + 201 });
    expect(readFileSync(join(claims, String(B + 200), 'pid'), 'utf8')).toBe('999999998'); // left to the other agent
  });

  it('parses uid ranges', () => {
    expect(parseUidRange('61000-61255')).toEqual({ first: 61000, count: 256 });
    expect(parseUidRange('0-10')).toBeUndefined();
    expect(parseUidRange('10-5')).toBeUndefined();
    expect(parseUidRange('nope')).toBeUndefined();
  });
});

describe('cgroupV1Dirs', () => {
  it('joins the v1 mounts with this process’s groups, ignoring v2 and other file systems', () => {
    const mountinfo = [
      '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
      '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
      '37 30 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids',
      '31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    ].join('\n');
    const self = ['8:pids:/', '4:memory:/process_api/abc', '2:cpu,cpuacct:/x', '0::/'].join('\n');
    expect(cgroupV1Dirs(mountinfo, self)).toEqual({
      memory: '/sys/fs/cgroup/memory/process_api/abc',
      pids: '/sys/fs/cgroup/pids',
      cpu: '/sys/fs/cgroup/cpu,cpuacct/x',
      cpuacct: '/sys/fs/cgroup/cpu,cpuacct/x',
    });
  });
});

describe('confineArgv: a private /tmp', () => {
  it('runs the job in its own mount and IPC namespaces with a tmpfs of its size on each world-writable place', () => {
    const argv = confineArgv(['python3'], { user: { uid: 61002, gid: 61002 }, privateTmp: { sizeBytes: 1 << 20, keep: '/w/runs/j/a' } }, { ...tools, mountPath: '/bin/mount' });
    expect(argv.slice(0, 5)).toEqual(['/usr/bin/unshare', '--mount', '--propagation', 'private', '--ipc']);
    expect(argv).toEqual(expect.arrayContaining(['mount=/bin/mount', 'keep=/w/runs/j/a', 'tmpfs=1048576:/tmp', 'tmpfs=1048576:/var/tmp', 'tmpfs=1048576:/dev/shm', 'tmpfs=1048576:/run/lock', 'mqueue=/dev/mqueue']));
    expect(argv.indexOf('mqueue=/dev/mqueue')).toBeLessThan(argv.indexOf('/usr/bin/setpriv'));
  });
  it('refuses without mount', () => {
    expect(() => confineArgv(['x'], { privateTmp: { sizeBytes: 1 << 20, keep: '/w' } }, tools)).toThrow(/mount/);
  });
});

describe('cgroup names', () => {
  it('parse back to exactly one node, so `a` never takes `a-b`’s groups', async () => {
    const { parseRunCgroupName, runCgroupName } = await import('./cgroups.js');
    expect(runCgroupName('a-b', 'job-1-a1')).toBe('gpunet.a-b.job-1-a1');
    expect(parseRunCgroupName('gpunet.a-b.job-1-a1')).toEqual({ nodeId: 'a-b', attemptId: 'job-1-a1' });
    expect(parseRunCgroupName('gpunet-a-b-job-1-a1')).toBeUndefined();
    expect(parseRunCgroupName('gpunet.a')).toBeUndefined();
    expect(() => runCgroupName('a.b', 'x')).toThrow(RangeError);
  });
});
