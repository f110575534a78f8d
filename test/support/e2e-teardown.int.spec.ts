import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NETWORK_MARKERS, stopLeftoverNetworks } from './e2e-teardown.js';
import { until } from './poll.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the e2e teardown stops networks a test left running', () => {
  let tap: string;
  const children: number[] = [];
  beforeEach(async () => {
    tap = await mkdtemp(join(tmpdir(), 'gpunet-teardown-'));
  });
  afterEach(async () => {
    for (const pid of children.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await rm(tap, { recursive: true, force: true });
  });

  /** A detached `sleep` standing for one of a network's processes. */
  function spawnSleep(): { pid: number; command: string[] } {
    const command = ['/bin/sleep', '600'];
    const child = spawn(command[0]!, command.slice(1), { detached: true, stdio: 'ignore' });
    child.unref();
    children.push(child.pid!);
    // Reaped by us when killed, so `alive` turns false.
    child.on('exit', () => undefined);
    return { pid: child.pid!, command };
  }

  async function network(name: string, processes: { name: string; pid: number; command: string[] }[] | undefined): Promise<string> {
    const dataDir = join(tap, `data-${name}`);
    await mkdir(dataDir);
    if (processes) await writeFile(join(dataDir, 'state.json'), JSON.stringify({ processes }));
    await mkdir(join(tap, NETWORK_MARKERS), { recursive: true });
    await writeFile(join(tap, NETWORK_MARKERS, `data-${name}`), dataDir);
    return dataDir;
  }

  it('kills each recorded process that still runs its command, and names the network', async () => {
    const a = spawnSleep();
    const b = spawnSleep();
    const dataDir = await network('leaked', [
      { name: 'nats', pid: a.pid, command: a.command },
      { name: 'node-1', pid: b.pid, command: b.command },
    ]);
    const lines = stopLeftoverNetworks(tap);
    expect(lines).toEqual([`${dataDir}: nats, node-1`]);
    await until('both processes to be gone', () => !alive(a.pid) && !alive(b.pid), { timeoutMs: 10_000, intervalMs: 20 });
  });

  it('leaves a pid alone that now runs something else, and a network that never wrote its state', async () => {
    const other = spawnSleep();
    await network('reused', [{ name: 'intake', pid: other.pid, command: ['/usr/bin/node', '/somewhere/intake/main.js'] }]);
    await network('unstarted', undefined);
    expect(stopLeftoverNetworks(tap)).toEqual([]);
    expect(alive(other.pid)).toBe(true);
  });

  it('finds nothing to stop when no network left a marker', () => {
    expect(stopLeftoverNetworks(tap)).toEqual([]);
  });
});
