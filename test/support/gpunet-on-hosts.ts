/**
 * A whole gpunet network spread over separate hosts ({@link HostNetwork}): three control hosts,
 * each running a nats-server of one JetStream cluster (every connection authenticated with its own
 * NKey, permissions from deploy/nats-permissions.yaml), PostgreSQL on c1 as the store, the control
 * plane's services spread over c1–c3, and one execution agent per GPU host. Every process reaches
 * the others through the network only: services get the three NATS URLs and the store's network
 * URL, agents only the NATS URLs. What the operator does (make the teams' buckets, wait for
 * health, run the CLI) runs as a process on a control host, as an operator's shell would.
 *
 * The test process reads the store through the PostgreSQL server's Unix socket (harness
 * bookkeeping, never a path the services use) and the processes' logs from the data directory.
 */
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { identitiesInDir, loadPermissionTemplates, defaultPermissionsFile, renderServerConfig, writeServerConfig } from '#bus-auth';
import { SERVICE_NAMES, type ServiceName } from '#contracts';
import { openEventStore, type EventStore } from '#event-store';
import { identityName, loadIdentityFile } from '#identity';
import { closeDataDir, RECORDER_INSTANCE } from '../../libs/cli/src/commands/up.js';
import { newAdminApiKey, newApiKey, writeApiKeysFile, LOCAL_TEAM } from '../../libs/cli/src/local/api-keys.js';
import { checkServicesBuilt, recorderEntry } from '../../libs/cli/src/local/environment.js';
import { ensureKeyFiles } from '../../libs/cli/src/local/identities.js';
import { createIdentityFile } from '#identity';
import { HostNetwork, type Host } from './hosts.js';
import { HostPostgres } from './host-postgres.js';
import { CLIENT_PORT, NatsCluster } from './nats-cluster.js';

const ROOT = process.cwd();
const PROBE = join(ROOT, 'test', 'support', 'probes', 'gpunet-probe.mjs');
const CLI = join(ROOT, 'dist', 'libs', 'cli', 'src', 'main.js');
export const HTTP_PORT = 8080;
const METRICS_PORT = 9464;

/** Which control host runs which service (the recorder is execution's control-plane instance). */
const SERVICE_HOSTS: Record<Exclude<ServiceName, 'execution'> | typeof RECORDER_INSTANCE, string> = {
  intake: 'c1',
  ledger: 'c1',
  placement: 'c2',
  [RECORDER_INSTANCE]: 'c2',
  storage: 'c3',
};

/** The single writers' standbys (decision 0029), each on another control host than its leader's (process `<name>-standby`). */
const STANDBY_HOSTS: Partial<Record<keyof typeof SERVICE_HOSTS, string>> = { placement: 'c3', storage: 'c1', ledger: 'c2', [RECORDER_INSTANCE]: 'c3' };

export interface GpunetOnHostsOptions {
  /** GPU hosts, each with one agent (`node-1` on g1, …). Default 2. */
  gpuHosts?: number;
  /** GPU slots each agent declares. Default 4. */
  gpus?: number;
  /** Extra variables for every service and agent. */
  env?: Record<string, string>;
  /** How long the processes get to answer their health queries. Default 120 s. */
  startTimeoutMs?: number;
  /**
   * Intake replicas (decision 0030), one per control host: `intake` on c1, `intake-2` on c2,
   * `intake-3` on c3, each serving HTTP on its host's address. Default 1.
   */
  intakes?: number;
}

/** The control host of the n-th intake replica (1-based). */
const intakeHost = (n: number): string => `c${n}`;
/** The process name of the n-th intake replica (1-based): `intake`, `intake-2`, … */
const intakeName = (n: number): string => (n === 1 ? 'intake' : `intake-${n}`);

interface Running {
  readonly name: string;
  readonly host: Host;
  readonly command: readonly string[];
  readonly env: Record<string, string>;
  readonly log: string;
  child: ChildProcess;
  out: WriteStream;
}

export class GpunetOnHosts {
  private readonly processes = new Map<string, Running>();
  /** Started once the network answers: the named processes lead first (the recorder's health is asked of instance `recorder`). */
  private readonly standbys: (() => void)[] = [];
  private storeHandle: Promise<EventStore> | undefined;

  private constructor(
    readonly net: HostNetwork,
    readonly cluster: NatsCluster,
    readonly pg: HostPostgres,
    readonly dir: string,
    readonly keyFiles: Record<string, string>,
    readonly storeUrl: string,
    readonly apiKey: string,
    readonly adminApiKey: string,
    readonly nodeIds: readonly string[],
    readonly intakes: number,
  ) {}

  /** Builds the hosts and starts everything; nothing is left behind when it fails. */
  static async start(options: GpunetOnHostsOptions = {}): Promise<GpunetOnHosts> {
    const gpuHosts = options.gpuHosts ?? 2;
    const intakes = options.intakes ?? 1;
    if (!Number.isInteger(intakes) || intakes < 1 || intakes > 3) throw new Error(`intakes: ${intakes} is not 1, 2 or 3 (one replica per control host)`);
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-hosts-'));
    // Agents run jobs below the data directory: job users must pass through it (as `up` does).
    await closeDataDir(dir, true);
    const net = await HostNetwork.create({ control: 3, gpu: gpuHosts });
    let pg: HostPostgres | undefined;
    try {
      const nodeIds = Array.from({ length: gpuHosts }, (_, i) => `node-${i + 1}`);
      const keysDir = join(dir, 'keys');
      const keyFiles = await ensureKeyFiles(keysDir, [
        ...Object.keys(SERVICE_HOSTS).map((s) => identityName('service', s)),
        ...nodeIds.map((n) => identityName('node', n)),
        identityName('team', LOCAL_TEAM),
        identityName('operator'),
      ]);
      // One config per server: the network's authorization, then the cluster's routes.
      const templates = await loadPermissionTemplates(defaultPermissionsFile());
      const identities = await identitiesInDir(keysDir);
      const control = net.hosts.filter((h) => h.role === 'control');
      const cluster = new NatsCluster(net, control, join(dir, 'nats'), {
        base: async (host, storeDir) => {
          const path = join(dir, 'nats', `${host.name}.auth.conf`);
          await writeServerConfig(path, renderServerConfig(templates, { listen: `${host.address}:${CLIENT_PORT}`, storeDir, identities }));
          return readFile(path, 'utf8');
        },
      });
      await mkdir(join(dir, 'nats'), { recursive: true, mode: 0o700 });
      await mkdir(join(dir, 'logs'), { recursive: true, mode: 0o700 });
      await cluster.start();
      pg = await HostPostgres.start(net, net.host('c1'));
      const storeUrl = await pg.createDatabase('gpunet');
      const apiKey = newApiKey();
      const adminApiKey = newAdminApiKey();
      await writeApiKeysFile(join(dir, 'api-keys.yaml'), apiKey, LOCAL_TEAM, adminApiKey);
      const g = new GpunetOnHosts(net, cluster, pg, dir, keyFiles, storeUrl, apiKey, adminApiKey, nodeIds, intakes);
      // The streams first, as `gpunet up --cluster` does: until the cluster has elected its
      // JetStream meta leader the API does not answer, and a service would give up at start.
      await g.operator('streams', { topologyFile: join(ROOT, 'deploy', 'topology.yaml'), timeoutMs: 90_000 }, 120_000);
      await g.operator('buckets', { teams: [LOCAL_TEAM], replicas: 3 });
      await g.startAll(options);
      await g.operator('healthy', {
        services: [...SERVICE_NAMES],
        agents: [RECORDER_INSTANCE, ...nodeIds],
        timeoutMs: options.startTimeoutMs ?? 120_000,
      }, (options.startTimeoutMs ?? 120_000) + 30_000).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}\n${g.logTails()}`, { cause: err });
      });
      for (const start of g.standbys.splice(0)) start();
      return g;
    } catch (err) {
      // The data directory (logs, configs) stays for reading; its path is in the message.
      await pg?.stopServer().catch(() => undefined);
      await net.stop();
      throw new Error(`${(err as Error).message}\n(data and logs kept in ${dir})`, { cause: err });
    }
  }

  /** Client URLs of the three nats-servers. */
  get natsUrls(): string[] {
    return this.cluster.urls;
  }

  /** Intake's HTTP API, on c1. */
  get url(): string {
    return `http://${this.net.host(SERVICE_HOSTS.intake).address}:${HTTP_PORT}`;
  }

  /** Every intake replica's HTTP API, c1 first. */
  get urls(): string[] {
    return Array.from({ length: this.intakes }, (_, i) => `http://${this.net.host(intakeHost(i + 1)).address}:${HTTP_PORT}`);
  }

  /** Each process's pid, by name (nats-servers as `nats-<host>`), for CPU readings. */
  pids(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [name, p] of this.processes) if (p.child.pid !== undefined && p.child.exitCode === null && p.child.signalCode === null) out.set(name, p.child.pid);
    for (const [host, pid] of this.cluster.pids()) out.set(`nats-${host}`, pid);
    return out;
  }

  private async startAll(options: GpunetOnHostsOptions): Promise<void> {
    const entries = checkServicesBuilt(ROOT);
    const signingFile = join(this.dir, 'signing', 'signing.nk');
    await createIdentityFile(signingFile);
    const common = { ...options.env, GPUNET_NATS_URL: this.natsUrls.join(','), GPUNET_LOG_LEVEL: 'info' };
    // Each process its own metrics port: two services share a control host.
    let metricsPort = METRICS_PORT;
    const enroll: string[] = [];
    for (const n of this.nodeIds) enroll.push(`${n}=${(await loadIdentityFile(this.keyFiles[identityName('node', n)]!)).publicKey}`);
    for (const [name, hostName] of Object.entries(SERVICE_HOSTS)) {
      const host = this.net.host(hostName);
      const service = name === RECORDER_INSTANCE ? undefined : (name as ServiceName);
      const env: Record<string, string> = {
        ...common,
        GPUNET_STORE_URL: this.storeUrl,
        GPUNET_METRICS_PORT: String(metricsPort++),
        GPUNET_NATS_NKEY_FILE: this.keyFiles[identityName('service', name)]!,
        ...(service === 'intake' ? { GPUNET_HTTP_PORT: String(HTTP_PORT), GPUNET_HTTP_HOST: host.address, GPUNET_API_KEYS_FILE: join(this.dir, 'api-keys.yaml') } : {}),
        ...(service === 'ledger' ? { GPUNET_SIGNING_KEY_FILE: signingFile } : {}),
        ...(service === undefined ? { GPUNET_ENROLL_NODES: enroll.join(',') } : {}),
      };
      const entry = service ? entries[service] : recorderEntry(ROOT);
      this.spawn(name, host, [process.execPath, entry], env);
      if (service === 'intake') {
        // More replicas of the same service and identity, each its own instance and host.
        for (let n = 2; n <= this.intakes; n++) {
          const replicaHost = this.net.host(intakeHost(n));
          this.spawn(intakeName(n), replicaHost, [process.execPath, entries.intake], {
            ...env,
            GPUNET_METRICS_PORT: String(metricsPort++),
            GPUNET_INSTANCE: intakeName(n),
            GPUNET_HTTP_HOST: replicaHost.address,
          });
        }
      }
      const standbyHost = STANDBY_HOSTS[name as keyof typeof SERVICE_HOSTS];
      if (standbyHost) {
        // The same service and identity as another process (`<name>-standby`): it waits for the lease.
        const standbyEnv = { ...env, GPUNET_METRICS_PORT: String(metricsPort++), GPUNET_INSTANCE: `${name}-standby` };
        this.standbys.push(() => this.spawn(`${name}-standby`, this.net.host(standbyHost), [process.execPath, entry], standbyEnv));
      }
    }
    for (const [i, nodeId] of this.nodeIds.entries()) {
      // No store URL: a node holds its own key and journal, nothing of the control plane's.
      this.spawn(nodeId, this.net.host(`g${i + 1}`), [process.execPath, entries.execution], {
        ...common,
        GPUNET_METRICS_PORT: String(metricsPort++),
        GPUNET_NATS_NKEY_FILE: this.keyFiles[identityName('node', nodeId)]!,
        GPUNET_NODE_ID: nodeId,
        GPUNET_GPUS: String(options.gpus ?? 4),
        GPUNET_GPU_MODEL: 'sim-gpu',
        GPUNET_WORK_DIR: join(this.dir, 'nodes', nodeId),
      });
    }
  }

  /** Starts one process on its host, its output appended to `logs/<name>.log`. */
  private spawn(name: string, host: Host, command: readonly string[], env: Record<string, string>): void {
    const log = join(this.dir, 'logs', `${name}.log`);
    const out = createWriteStream(log, { flags: 'a', mode: 0o600 });
    const child = this.net.spawn(host, command[0]!, command.slice(1), { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', ...env } });
    child.stdout?.pipe(out, { end: false });
    child.stderr?.pipe(out, { end: false });
    this.processes.set(name, { name, host, command, env, log, child, out });
  }

  /** The host a process runs on. */
  hostOf(name: string): Host {
    const p = this.processes.get(name);
    if (!p) throw new Error(`no process ${name}; processes: ${[...this.processes.keys()].join(', ')}`);
    return p.host;
  }

  /**
   * The process that holds `role`'s term now: the holder named by the last `LeaderElected` of
   * `leadership-<role>` in the store (decision 0029), with how many terms there were.
   */
  async leaderOf(role: string): Promise<{ name: string; terms: number }> {
    const events = await (await this.store()).readStream(`leadership-${role}`);
    const last = events.at(-1);
    if (!last) throw new Error(`no leader of ${role} recorded yet`);
    const holder = String((last.data as { holder: string }).holder);
    // The holder is `<instance>@<host>:<pid>:<id>`; the instance is the process's name here.
    const name = [...this.processes.keys()].find((n) => holder.startsWith(`${n}@`));
    if (!name) throw new Error(`the leader of ${role} is ${holder}, no process of this network`);
    return { name, terms: events.length };
  }

  /** Sends `signal` to a process and waits for it to be gone (SIGKILL by default). */
  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.processes.get(name);
    if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      p.child.once('exit', () => resolve());
      p.child.kill(signal);
    });
  }

  /** Starts a stopped process again as it was started, on its host. */
  restart(name: string): void {
    const p = this.processes.get(name);
    if (!p) throw new Error(`no process ${name}`);
    if (p.child.exitCode === null && p.child.signalCode === null) throw new Error(`${name} is still running`);
    this.spawn(name, p.host, p.command, p.env);
  }

  /** Runs an operator step (gpunet-probe.mjs) as a process on c1. */
  async operator(op: string, args: Record<string, unknown>, timeoutMs = 60_000): Promise<Record<string, unknown>> {
    const r = await this.net.exec(this.net.host('c1'), process.execPath, [PROBE, op, JSON.stringify({ servers: this.natsUrls, keyFile: this.keyFiles[identityName('operator')], ...args })], { cwd: ROOT, timeoutMs });
    const line = r.stdout.trim().split('\n').at(-1) ?? '';
    let answer: Record<string, unknown> & { ok?: boolean; error?: string };
    try {
      answer = JSON.parse(line) as typeof answer;
    } catch {
      throw new Error(`operator step ${op} printed no answer (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
    }
    if (!answer.ok) throw new Error(`operator step ${op} failed: ${answer.error}`);
    return answer;
  }

  /**
   * Runs the `gpunet` CLI as a process on `host` (default c1), as a producer of the local team
   * would: intake's URL, the API key, the NATS URLs and the team's NKey in its environment.
   */
  async cli(args: readonly string[], options: { host?: string; timeoutMs?: number } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return this.net.exec(this.net.host(options.host ?? 'c1'), process.execPath, [CLI, ...args], {
      cwd: this.dir,
      timeoutMs: options.timeoutMs ?? 120_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: this.dir,
        GPUNET_URL: this.url,
        GPUNET_API_KEY: this.apiKey,
        GPUNET_TEAM: LOCAL_TEAM,
        GPUNET_NATS_URL: this.natsUrls.join(','),
        GPUNET_NATS_NKEY_FILE: this.keyFiles[identityName('team', LOCAL_TEAM)]!,
      },
    });
  }

  /** The store, read by the test through the server's Unix socket. */
  store(): Promise<EventStore> {
    return (this.storeHandle ??= openEventStore(`postgresql://postgres@/gpunet?host=${encodeURIComponent(join(this.pg.dir, 'socket'))}`));
  }

  /** The last lines of every process's log, for a failure message. */
  logTails(lines = 30): string {
    return [...this.processes.values()]
      .map((p) => {
        let text = '';
        try {
          text = readFileSync(p.log, 'utf8');
        } catch {
          /* not written yet */
        }
        return `── ${p.name} on ${p.host.name} (${p.log}):\n${text.trim().split('\n').slice(-lines).join('\n')}`;
      })
      .join('\n');
  }

  /**
   * For scripts (benches): on SIGINT or SIGTERM, stop the whole network (its data kept) and exit,
   * so an interrupted run leaves no servers, agents or jobs behind. Returns the undo.
   */
  stopOnSignals(): () => void {
    const onSignal = (signal: NodeJS.Signals) => {
      process.stderr.write(`\n${signal}: stopping the network on the hosts (data and logs kept in ${this.dir})\n`);
      void this.stop({ keep: true }).finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    };
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    return () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    };
  }

  /** Stops everything and removes the hosts and the data (kept with `keep`, e.g. after a failure). */
  async stop(options: { keep?: boolean } = {}): Promise<void> {
    await (await this.storeHandle?.catch(() => undefined))?.close().catch(() => undefined);
    // A clean stop first (agents release what they hold); the network SIGKILLs whatever is left.
    await Promise.race([Promise.all([...this.processes.keys()].map((n) => this.kill(n, 'SIGTERM'))), new Promise((r) => setTimeout(r, 15_000).unref())]);
    for (const p of this.processes.values()) p.out.end();
    await this.pg.stopServer().catch(() => undefined);
    await this.net.stop();
    if (!options.keep) await rm(this.dir, { recursive: true, force: true });
  }
}
