/**
 * Separate hosts on one machine, for the multi-host tier: each host is a Linux network namespace
 * with its own address on one private subnet, joined by a bridge that lives in a namespace of its
 * own (the machine's own network is never touched), with no default route, so a host reaches the
 * other hosts and nothing else. Processes run on a host through `ip netns exec`. A host's link can
 * be cut and restored (a GPU host falling off the network).
 *
 *     switch ns:  br0 ── c1 ─┐ veth    host ns gpn<pid>x0-c1: eth0 10.77.0.11/24, lo
 *                      ├─ c2 …                  gpn<pid>x0-c2: eth0 10.77.0.12/24
 *                      └─ g1 …                  gpn<pid>x0-g1: eth0 10.77.0.21/24
 *
 * Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and iproute2; `npm test` installs iproute2 as root.
 * Namespaces are named after the test process (`gpn<pid>x<n>-…`): {@link HostNetwork.stop} removes
 * them, and creating a network first removes those of any process that is gone, so a run killed
 * halfway leaves nothing behind for the next one.
 */
import { execFile, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The private subnet every host network uses (each network has its own bridge, so runs never meet). */
export const SUBNET = '10.77.0';

/** One host: its namespace, its name and address. */
export interface Host {
  readonly name: string;
  readonly ns: string;
  readonly address: string;
  readonly role: 'control' | 'gpu';
}

async function ip(...args: string[]): Promise<string> {
  try {
    return (await run('ip', args)).stdout;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('`ip` (iproute2) is not installed: apt-get install iproute2', { cause: err });
    throw new Error(`ip ${args.join(' ')}: ${e.stderr?.trim() || e.message}${/Operation not permitted/.test(e.stderr ?? '') ? ' (network namespaces need root)' : ''}`, { cause: err });
  }
}

/** Our namespaces (`gpn<pid>x<n>-…`), by owning pid. */
async function ourNamespaces(): Promise<{ name: string; pid: number }[]> {
  const out = await ip('netns', 'list');
  return out
    .split('\n')
    .map((l) => /^(gpn(\d+)x\d+-[a-z0-9]+)/.exec(l.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ name: m[1]!, pid: Number(m[2]) }));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class HostNetwork {
  /** Networks this process made, so that two at once get distinct names. */
  private static made = 0;
  private readonly children = new Set<ChildProcess>();
  private stopped = false;

  private constructor(
    readonly hosts: readonly Host[],
    private readonly switchNs: string,
  ) {}

  /**
   * Builds `control` control hosts (`c1`…, 10.77.0.11…) and `gpu` GPU hosts (`g1`…, 10.77.0.21…).
   * Removes namespaces left by test processes that are gone first.
   */
  static async create(opts: { control: number; gpu: number }): Promise<HostNetwork> {
    for (const stale of await ourNamespaces()) if (!alive(stale.pid)) await ip('netns', 'delete', stale.name).catch(() => undefined);
    const prefix = `gpn${process.pid}x${HostNetwork.made++}`;
    const switchNs = `${prefix}-sw`;
    const hosts: Host[] = [
      ...Array.from({ length: opts.control }, (_, i) => ({ name: `c${i + 1}`, role: 'control' as const, address: `${SUBNET}.${11 + i}` })),
      ...Array.from({ length: opts.gpu }, (_, i) => ({ name: `g${i + 1}`, role: 'gpu' as const, address: `${SUBNET}.${21 + i}` })),
    ].map((h) => ({ ...h, ns: `${prefix}-${h.name}` }));
    const net = new HostNetwork(hosts, switchNs);
    try {
      await ip('netns', 'add', switchNs);
      await ip('-n', switchNs, 'link', 'add', 'br0', 'type', 'bridge');
      await ip('-n', switchNs, 'link', 'set', 'br0', 'up');
      for (const h of hosts) {
        await ip('netns', 'add', h.ns);
        await ip('-n', h.ns, 'link', 'set', 'lo', 'up');
        // One end on the bridge, named after the host; the other is the host's eth0.
        await ip('-n', switchNs, 'link', 'add', h.name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.ns);
        await ip('-n', switchNs, 'link', 'set', h.name, 'master', 'br0', 'up');
        await ip('-n', h.ns, 'addr', 'add', `${h.address}/24`, 'dev', 'eth0');
        await ip('-n', h.ns, 'link', 'set', 'eth0', 'up');
      }
    } catch (err) {
      await net.stop();
      throw err;
    }
    return net;
  }

  host(name: string): Host {
    const h = this.hosts.find((x) => x.name === name);
    if (!h) throw new Error(`no host ${name}; hosts: ${this.hosts.map((x) => x.name).join(', ')}`);
    return h;
  }

  /** Starts `command` on `host` (`ip netns exec`); the network kills it when it stops. */
  spawn(host: Host, command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
    if (this.stopped) throw new Error('the host network is stopped');
    const child = spawn('ip', ['netns', 'exec', host.ns, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** Runs `command` on `host` to its end: its exit code and output. */
  async exec(host: Host, command: string, args: readonly string[], options: SpawnOptions & { timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = this.spawn(host, command, args, options);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const timeoutMs = options.timeoutMs ?? 60_000;
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (c) => resolve(c));
    }).finally(() => clearTimeout(timer));
    return { code, stdout, stderr };
  }

  /** Takes `host` off the network (its link to the bridge goes down), as a cable pulled. */
  async cut(host: Host): Promise<void> {
    await ip('-n', this.switchNs, 'link', 'set', host.name, 'down');
  }

  /** Puts `host` back on the network. */
  async restore(host: Host): Promise<void> {
    await ip('-n', this.switchNs, 'link', 'set', host.name, 'up');
  }

  /** Kills what runs on the hosts and removes every namespace (their links go with them). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      [...this.children].map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null || c.signalCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGKILL');
          }),
      ),
    );
    for (const ns of [...this.hosts.map((h) => h.ns), this.switchNs]) await ip('netns', 'delete', ns).catch(() => undefined);
  }

  /** Namespaces of this process that still exist (none after {@link stop}). */
  static async leftOver(): Promise<string[]> {
    return (await ourNamespaces()).filter((n) => n.pid === process.pid).map((n) => n.name);
  }
}
