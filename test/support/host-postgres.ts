/**
 * A PostgreSQL server of its own on one host of a {@link HostNetwork}: the store of a multi-host
 * network, reached by the services on the other control hosts through the network only. The
 * machine's own PostgreSQL (127.0.0.1:5432) is out of a host's reach, as it would be for another
 * machine, so this one is made for the run: `initdb` into a temporary directory, `postgres`
 * listening on the host's address (trust for the control hosts' addresses only), run as the `postgres` user
 * through `setpriv` so the server is the process the network kills. It can be stopped and started
 * again on its data.
 *
 * The test process itself, outside the hosts, creates databases through the server's Unix socket
 * in the data directory: harness set-up, never a path the services use.
 */
import { execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { appendFile, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Host, HostNetwork } from './hosts.js';

const run = promisify(execFile);
export const PG_PORT = 5432;

/** The directory of the machine's PostgreSQL programs (Debian: /usr/lib/postgresql/<major>/bin). */
function pgBin(): string {
  if (process.env.GPUNET_PG_BIN) return process.env.GPUNET_PG_BIN;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root) ? readdirSync(root).filter((d) => existsSync(join(root, d, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a)) : [];
  if (majors.length === 0) throw new Error('no PostgreSQL server programs under /usr/lib/postgresql/<major>/bin: apt-get install postgresql (or set GPUNET_PG_BIN)');
  return join(root, majors[0]!, 'bin');
}

async function uidGid(user: string): Promise<{ uid: number; gid: number }> {
  const [uid, gid] = await Promise.all([run('id', ['-u', user]), run('id', ['-g', user])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export class HostPostgres {
  private server: { child: ChildProcess; log: string } | undefined;

  private constructor(
    private readonly net: HostNetwork,
    readonly host: Host,
    /** Parent of the data directory and the socket (owned by `postgres`). */
    readonly dir: string,
  ) {}

  /**
   * Makes a cluster for this run on `host` and starts it. Only `clients` (default: the control
   * hosts) may connect: a GPU host never reaches the store.
   */
  static async start(net: HostNetwork, host: Host, clients: readonly Host[] = net.hosts.filter((h) => h.role === 'control')): Promise<HostPostgres> {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-hostpg-'));
    const { uid, gid } = await uidGid('postgres');
    await chown(dir, uid, gid);
    const pgdata = join(dir, 'data');
    await run('setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', join(pgBin(), 'initdb'), '-D', pgdata, '-A', 'trust', '-U', 'postgres', '--no-sync'], { cwd: dir });
    // The clients' addresses may connect (the services on the control hosts), no other host.
    await appendFile(join(pgdata, 'pg_hba.conf'), clients.map((c) => `host all all ${c.address}/32 trust\n`).join(''));
    await mkdir(join(dir, 'socket'), { recursive: true });
    await chown(join(dir, 'socket'), uid, gid);
    const pgs = new HostPostgres(net, host, dir);
    await pgs.startServer();
    return pgs;
  }

  /** A connection URL for a process on any host of the network. */
  url(database: string): string {
    return `postgresql://postgres@${this.host.address}:${PG_PORT}/${database}`;
  }

  /** Creates `database` (through the socket: harness set-up) and returns its network URL. */
  async createDatabase(database: string): Promise<string> {
    const c = new pg.Client({ host: join(this.dir, 'socket'), port: PG_PORT, user: 'postgres', database: 'postgres' });
    await c.connect();
    try {
      await c.query(`CREATE DATABASE ${database}`);
    } finally {
      await c.end();
    }
    return this.url(database);
  }

  /** Starts the server on its data directory; resolves once it accepts connections. */
  async startServer(): Promise<void> {
    const args = [
      '--reuid=postgres', '--regid=postgres', '--init-groups',
      join(pgBin(), 'postgres'),
      '-D', join(this.dir, 'data'),
      '-c', `listen_addresses=${this.host.address}`,
      '-c', `port=${PG_PORT}`,
      '-c', `unix_socket_directories=${join(this.dir, 'socket')}`,
      '-c', 'max_connections=200',
      '-c', 'logging_collector=off',
    ];
    const child = this.net.spawn(this.host, 'setpriv', args, { cwd: this.dir });
    const entry = { child, log: '' };
    this.server = entry;
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        entry.log += chunk.toString();
        if (/database system is ready to accept connections/.test(entry.log)) resolve();
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('error', (err) => reject(new Error(`cannot start postgres on ${this.host.name}: ${err.message}`, { cause: err })));
      child.once('exit', (code, signal) => reject(new Error(`postgres on ${this.host.name} exited (${signal ?? code}) before it was ready:\n${entry.log}`)));
    });
  }

  /**
   * Stops the server with `SIGINT`, PostgreSQL's fast shutdown: open transactions are rolled back
   * and every client is disconnected, as in a restart of the database machine's service.
   */
  async stopServer(): Promise<void> {
    const s = this.server;
    if (!s || s.child.exitCode !== null || s.child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      s.child.once('exit', () => resolve());
      s.child.kill('SIGINT');
    });
  }

  /** What the server logged (its current run). */
  log(): string {
    return this.server?.log ?? '';
  }

  /** Stops the server and removes its data. */
  async remove(): Promise<void> {
    await this.stopServer();
    await rm(this.dir, { recursive: true, force: true });
  }
}
