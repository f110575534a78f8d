/**
 * `signalContainer` against a real podman: a signal sent while the container is still being made
 * is not lost, as it is when it reaches the runtime's attached client first.
 */
import { execFile } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { busyboxImage } from '../../../../test/support/container-image.js';
import { podmanGlobalArgs } from '../domain/index.js';
import { findExecutable } from '../run/index.js';
import { containerName, signalContainer } from './container-work.js';

const run = promisify(execFile);
const CGROUP2_MAGIC = 0x63677270;

let globalArgs: string[];
let image: string;
const made: string[] = [];

beforeAll(async () => {
  image = (await busyboxImage()).id;
  const cgroupV2 = (await statfs('/sys/fs/cgroup').catch(() => undefined))?.type === CGROUP2_MAGIC;
  globalArgs = podmanGlobalArgs({ cgroupV2, systemd: existsSync('/run/systemd/system'), runc: await findExecutable('runc', `${process.env.PATH ?? ''}:/usr/sbin:/sbin`), ociRuntime: 'auto' });
}, 120_000);

afterAll(async () => {
  for (const name of made) await run('podman', [...globalArgs, 'rm', '--force', '--time', '0', name]).catch(() => undefined);
});

/** A container of `attemptId` made but not started, whose script says `warned` on SIGUSR1 and exits. */
async function create(attemptId: string): Promise<string> {
  const name = containerName(attemptId);
  made.push(name);
  const script = 'trap "echo warned; exit 0" USR1; echo started; while true; do sleep 0.05; done';
  await run('podman', [...globalArgs, 'create', '--init', '--ulimit', 'nofile=1024:1024', '--ulimit', 'nproc=1024:1024', '--name', name, image, 'sh', '-c', script]);
  return name;
}

async function logsOf(name: string): Promise<string[]> {
  const { stdout } = await run('podman', [...globalArgs, 'logs', name]);
  return stdout.split('\n').filter((l) => l !== '');
}

describe('signalContainer', () => {
  it('waits while the container is made but not running, and delivers the signal once it runs', async () => {
    const attemptId = `sig-${process.pid}-a`;
    const name = await create(attemptId);
    const done = new AbortController();
    let delivered = false;
    const sending = signalContainer('podman', attemptId, 'SIGUSR1', done.signal, { globalArgs, retryMs: 20 }).then(() => {
      delivered = true;
    });
    // podman refuses while the container is only created: still waiting, nothing delivered.
    await run('podman', [...globalArgs, 'kill', '--signal', 'SIGUSR1', name]).then(
      () => {
        throw new Error('podman signalled a container that does not run');
      },
      (err: { stderr?: string }) => expect(err.stderr).toMatch(/state improper|state created/),
    );
    expect(delivered).toBe(false);
    // The signal is sent once podman reports the container running: start it, wait for the
    // delivery, then for the container to end, and read what the script said.
    await run('podman', [...globalArgs, 'start', name]);
    await sending;
    expect(delivered).toBe(true);
    const { stdout } = await run('podman', [...globalArgs, 'wait', name]);
    const ended = { exit: stdout.trim(), lines: await logsOf(name) };
    // It reached the script, which ended by it: a lost signal leaves the loop running for ever.
    // Running is reported from the container's init, so on a loaded machine the signal may reach
    // sh before its first command sets the trap: then it ends sh (128 + SIGUSR1's 10) and nothing
    // is said. Otherwise the trap says `warned` and exits 0.
    expect([{ exit: '0', lines: ['started', 'warned'] }, { exit: '138', lines: [] }]).toContainEqual(ended);
  }, 120_000);

  it('stops asking when the run ends before the container runs', async () => {
    const attemptId = `sig-${process.pid}-b`;
    await create(attemptId);
    const done = new AbortController();
    const sending = signalContainer('podman', attemptId, 'SIGUSR1', done.signal, { globalArgs, retryMs: 20 });
    done.abort();
    await expect(sending).rejects.toThrow(/abort/i);
  }, 60_000);

  it('throws the runtime’s own refusal for anything but a container not yet running', async () => {
    const done = new AbortController();
    await expect(signalContainer('podman', `sig-${process.pid}-c`, 'SIGNOPE' as NodeJS.Signals, done.signal, { globalArgs })).rejects.toThrow(/podman kill --signal SIGNOPE: .*/);
  }, 60_000);
});
