/**
 * A real 3-node NATS JetStream cluster on the control hosts of a {@link HostNetwork}: one
 * nats-server per host, clients on 4222 and routes on 6222 of the host's own address, each with
 * its own store directory. Servers can be SIGKILLed and started again on their data (Raft
 * catches them up).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Host, HostNetwork } from './hosts.js';

const NATS_BIN = process.env.GPUNET_NATS_SERVER_BIN ?? 'nats-server';
export const CLIENT_PORT = 4222;
export const ROUTE_PORT = 6222;

/** The lines that make a server one of the cluster on `hosts`: its name and its routes. */
export function clusterBlock(self: Host, hosts: readonly Host[]): string {
  const routes = hosts.filter((h) => h !== self).map((h) => `nats-route://${h.address}:${ROUTE_PORT}`);
  return [`server_name: ${self.name}`, `cluster { name: gpunet, listen: "${self.address}:${ROUTE_PORT}", routes: [${routes.map((r) => `"${r}"`).join(', ')}] }`, ''].join('\n');
}

/** The config of one server of the cluster on `hosts`, with no authorization. */
export function clusterConfig(self: Host, hosts: readonly Host[], storeDir: string): string {
  return [`listen: "${self.address}:${CLIENT_PORT}"`, `jetstream { store_dir: "${storeDir}", max_memory_store: 64MB, max_file_store: 1GB }`, clusterBlock(self, hosts)].join('\n');
}

export interface NatsClusterOptions {
  /**
   * The rest of a server's config (listen on the host's address and CLIENT_PORT, JetStream in
   * `storeDir`, an authorization); the cluster's lines are added to it. Default: no authorization.
   */
  base?: (host: Host, storeDir: string) => Promise<string>;
}

export class NatsCluster {
  private readonly servers = new Map<string, { child: ChildProcess; log: string }>();

  /** The pid of each running server, by host name. */
  pids(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [host, s] of this.servers) if (s.child.pid !== undefined && s.child.exitCode === null && s.child.signalCode === null) out.set(host, s.child.pid);
    return out;
  }

  constructor(
    private readonly net: HostNetwork,
    readonly hosts: readonly Host[],
    private readonly dir: string,
    private readonly options: NatsClusterOptions = {},
  ) {}

  /** Client URLs of every server, for a client on any host. */
  get urls(): string[] {
    return this.hosts.map((h) => `nats://${h.address}:${CLIENT_PORT}`);
  }

  /** Starts every server and waits until each says it is ready. */
  async start(): Promise<void> {
    await Promise.all(this.hosts.map((h) => this.startServer(h)));
  }

  /** Starts (again) the server of `host` on its store directory; resolves once it is ready. */
  async startServer(host: Host): Promise<void> {
    const storeDir = join(this.dir, host.name);
    await mkdir(storeDir, { recursive: true });
    const conf = join(this.dir, `${host.name}.conf`);
    await writeFile(conf, this.options.base ? `${await this.options.base(host, storeDir)}\n${clusterBlock(host, this.hosts)}` : clusterConfig(host, this.hosts, storeDir), { mode: 0o600 });
    const child = this.net.spawn(host, NATS_BIN, ['-c', conf]);
    const entry = { child, log: '' };
    this.servers.set(host.name, entry);
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        entry.log += chunk.toString();
        if (/Server is ready/.test(entry.log)) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', (err) => reject(new Error(`cannot run ${NATS_BIN} on ${host.name}: ${err.message}`, { cause: err })));
      child.once('exit', (code, signal) => reject(new Error(`nats-server on ${host.name} exited (${signal ?? code}) before it was ready:\n${entry.log}`)));
    });
  }

  /** SIGKILLs the server of `host` and waits for it to be gone. */
  async kill(host: Host): Promise<void> {
    const s = this.servers.get(host.name);
    if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      s.child.once('exit', () => resolve());
      s.child.kill('SIGKILL');
    });
  }

  /** What the server of `host` logged (this run of it). */
  log(host: Host): string {
    return this.servers.get(host.name)?.log ?? '';
  }
}
