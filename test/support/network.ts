/**
 * A whole gpunet network of real processes for end-to-end tests and benchmarks, started the way
 * a person starts one: `gpunet up` (the CLI's own launcher, run in-process through `runCli`) on a
 * temporary data directory, so each test file gets its own nats-server (random port), its own
 * SQLite store, its own logs, and no second launcher exists to drift from the first.
 *
 * On top of what `up` records in `state.json` it adds per-process control (`kill`, `restart`),
 * direct reads of the event store, an SDK client, and log tails for failure messages.
 */
import type { EventStore, ReadAllFilter, RecordedEvent } from '#event-store';
import { openEventStore } from '#event-store';
import { GpunetClient } from '#sdk';
import { jetstreamManager } from '@nats-io/jetstream';
import { createIdentityFile, identityName, natsAuthOptions } from '#identity';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { PassThrough } from 'node:stream';
import type { ServiceName } from '#contracts';
import { waitHealthy, type HealthTargets } from '../../libs/cli/src/local/health.js';
import { freePort } from '../../libs/cli/src/local/environment.js';
import { isAlive, spawnDetached, tailOf } from '../../libs/cli/src/local/processes.js';
import { readState, writeState, type LocalProcess, type LocalState } from '../../libs/cli/src/local/state.js';
import { writeNatsConfig } from '../../libs/cli/src/local/identities.js';
import { runCli } from '../../libs/cli/src/program.js';
import { until } from './poll.js';
import { BUS_TAP_DIR_ENV, BusContract } from './bus/bus-contract.js';
import { BusTap } from './bus/bus-tap.js';
import { NETWORK_MARKERS } from './e2e-teardown.js';

/** Options of {@link TestNetwork.start}; every field has a default suited to a 2-core machine. */
export interface TestNetworkOptions {
  /** Execution agents (nodes `node-1` … `node-N`). Default 2. */
  agents?: number;
  /** GPU slots each agent declares. Default 4. */
  gpus?: number;
  /** Model of the declared slots. Default `sim-gpu` (priced 1 µ per GPU-ms by the default list). */
  gpuModel?: string;
  /**
   * Extra variables for every process on top of this process's environment, e.g.
   * `{ GPUNET_KILL_GRACE_MS: '1000' }`. `up`'s own variables (URLs, ports, node ids) win.
   */
  env?: Record<string, string>;
  /** Services' log level. Default `info` (the logs are what a failure message shows). */
  logLevel?: string;
  /** How long `up` waits for every health answer. Default 60 s. */
  startTimeoutMs?: number;
  /** Prefix of the temporary data directory. Default `gpunet-e2e-`. */
  dirPrefix?: string;
  /**
   * Directory the data dir is made in. Default the temp dir, which a job's private /tmp hides
   * entirely; a test of the data dir's file modes puts it elsewhere, where a job could reach it.
   */
  parentDir?: string;
  /** Event store on this PostgreSQL database (`up --postgres`) instead of SQLite in the data directory. */
  postgresUrl?: string;
  /** Producer teams besides `local` (`up --team`), each with its own API key and NKey. */
  teams?: string[];
  /** Three nats-servers forming one JetStream cluster, streams R3 (`up --cluster`; needs `postgresUrl`). */
  cluster?: boolean;
}

/** Names of processes: `nats`, a service name, or an agent's node id (`node-1`). */
export type ProcessName = string;

/** Captures a stream's text (the CLI's stdout/stderr when run in-process). */
function sink(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** The exported contract, loaded once per test process for the taps. */
/**
 * The Jest limit for a hook that starts a network. It only stops a start that hangs: `gpunet up`
 * gives up by itself once no process became healthy for its `--timeout` (`startTimeoutMs`), and
 * on a loaded machine a start that keeps making progress takes what the machine gives it (a
 * fixed 90 s failed drain.e2e at a load average of 23).
 */
export const NETWORK_START_HOOK_MS = 600_000;

let contractOfRun: BusContract | undefined;

/** Every network started by this process, stopped on exit if a test forgot (or crashed before) `stop()`. */
const live = new Set<TestNetwork>();
process.once('exit', () => {
  for (const net of live) net.killAllNow();
});

/**
 * The marker of a network this run started and has not stopped, in the run's tap directory: the
 * e2e teardown stops what is left of each (`e2e-teardown.ts`), since a hook that times out while
 * `start` runs leaves a test no handle to stop it with. Outside the e2e project (no tap
 * directory) there is no teardown to read markers, and none is written.
 */
function markerOf(dataDir: string): string | undefined {
  const dir = process.env[BUS_TAP_DIR_ENV];
  return dir ? join(dir, NETWORK_MARKERS, basename(dataDir)) : undefined;
}

async function markStarted(dataDir: string): Promise<void> {
  const marker = markerOf(dataDir);
  if (marker === undefined) return;
  await mkdir(dirname(marker), { recursive: true });
  await writeFile(marker, dataDir);
}

async function markStopped(dataDir: string): Promise<void> {
  const marker = markerOf(dataDir);
  if (marker !== undefined) await rm(marker, { force: true });
}

/** Failure to start or stop a test network; the message carries the CLI's output and log tails. */
export class TestNetworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TestNetworkError';
  }
}

export class TestNetwork {
  private storeHandle: Promise<EventStore> | undefined;
  private natsHandle: Promise<NatsConnection> | undefined;
  private readonly clients: GpunetClient[] = [];
  private stopped = false;
  /** The bus tap of an e2e run (GPUNET_BUS_TAP_DIR set by the e2e project's globalSetup), on a connection of its own. */
  private tap: { tap: BusTap; nc: NatsConnection } | undefined;
  /** Set by {@link withLogsOnFailure}: keep the data directory for reading. */
  failed = false;

  private constructor(
    readonly dataDir: string,
    private state: LocalState,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /**
   * Runs `gpunet up --data-dir <temp> --agents N --gpus G` in-process and waits until every
   * process answers its health query. Throws with the CLI's message (which names the logs) when
   * the network does not come up; nothing is left running then.
   */
  static async start(options: TestNetworkOptions = {}): Promise<TestNetwork> {
    const dataDir = await mkdtemp(join(options.parentDir ?? tmpdir(), options.dirPrefix ?? 'gpunet-e2e-'));
    await markStarted(dataDir);
    const env = { ...process.env, ...options.env };
    const out = sink();
    const err = sink();
    const argv = [
      'up',
      '--json',
      '--data-dir', dataDir,
      '--agents', String(options.agents ?? 2),
      '--gpus', String(options.gpus ?? 4),
      '--gpu-model', options.gpuModel ?? 'sim-gpu',
      '--log-level', options.logLevel ?? 'info',
      '--timeout', `${options.startTimeoutMs ?? 60_000}ms`,
      ...(options.postgresUrl ? ['--postgres', options.postgresUrl] : []),
      ...(options.cluster ? ['--cluster'] : []),
      ...(options.teams ?? []).flatMap((t) => ['--team', t]),
    ];
    const code = await runCli(argv, { stdout: out.stream, stderr: err.stream, env, cwd: dataDir });
    const state = await readState(dataDir).catch(() => undefined);
    if (code !== 0 || !state) {
      // `up` has stopped whatever it started; its message names the logs to read, kept here.
      throw new TestNetworkError(`gpunet ${argv.join(' ')} exited ${code}:\n${err.text()}${out.text()}\n(data kept in ${dataDir})`);
    }
    const net = new TestNetwork(dataDir, state, env);
    live.add(net);
    await net.attachTap().catch(async (err: unknown) => {
      await net.stop().catch(() => undefined);
      throw new TestNetworkError(`cannot attach the bus tap: ${(err as Error).message}`, { cause: err });
    });
    return net;
  }

  /** When the run has a tap directory, records every message on this network's bus there (test/support/bus/). */
  private async attachTap(): Promise<void> {
    const dir = process.env[BUS_TAP_DIR_ENV];
    if (!dir) return;
    contractOfRun ??= BusContract.load(join(import.meta.dirname, '../../contracts/generated'));
    const nc = await connect({ ...(await natsAuthOptions(this.operatorKeyFile)), servers: this.natsUrl, name: 'gpunet-e2e-bus-tap', noAsyncTraces: true });
    const file = join(dir, `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}.jsonl`);
    this.tap = { tap: new BusTap(nc, file, contractOfRun), nc };
  }

  /** Base URL of intake's HTTP API. */
  get url(): string {
    return this.state.url;
  }
  get apiKey(): string {
    return this.state.apiKey;
  }
  /** The network's operator key (role `operator`, team `local`), which `gpunet up` keeps in state.json. */
  get adminApiKey(): string {
    if (!this.state.adminApiKey) throw new TestNetworkError('state.json holds no adminApiKey: was the network started by this version of `gpunet up`?');
    return this.state.adminApiKey;
  }
  /** Path of a process's log file (e.g. `intake`). */
  logPath(name: ProcessName): string {
    const p = this.state.processes.find((x) => x.name === name);
    if (!p) throw new TestNetworkError(`no process ${name} in this network`);
    return p.log;
  }
  get team(): string {
    return this.state.team;
  }
  get natsUrl(): string {
    return this.state.natsUrl;
  }
  /** The operator's NKey seed file (what {@link nats} connects with). */
  get operatorKeyFile(): string {
    if (!this.state.operatorKeyFile) throw new TestNetworkError('state.json names no operator key: rebuild the CLI');
    return this.state.operatorKeyFile;
  }
  /** Directory of every identity's seed file. */
  get keysDir(): string {
    return this.state.keysDir!;
  }
  /** Another team started with `teams`: its API key and NKey seed file. */
  teamCredentials(team: string): { team: string; apiKey: string; natsKeyFile: string } {
    if (team === this.team) return { team, apiKey: this.apiKey, natsKeyFile: this.state.natsKeyFile! };
    const other = this.state.otherTeams?.find((t) => t.team === team);
    if (!other) throw new TestNetworkError(`no team ${team} in this network (start it with { teams: ['${team}'] })`);
    return other;
  }
  /** The event store's URL: `sqlite:<data dir>/events.db`, or the PostgreSQL database given. */
  get storeUrl(): string {
    return this.state.storeUrl;
  }
  /** Node ids of the agents, in start order. */
  get nodeIds(): string[] {
    return this.state.processes.filter((p) => p.role === 'agent').map((p) => p.name);
  }
  get processes(): readonly LocalProcess[] {
    return this.state.processes;
  }

  private process(name: ProcessName): LocalProcess {
    const p = this.state.processes.find((q) => q.name === name);
    if (!p) throw new TestNetworkError(`no process ${name} in this network (${this.state.processes.map((q) => q.name).join(', ')})`);
    return p;
  }

  pid(name: ProcessName): number {
    return this.process(name).pid;
  }

  isRunning(name: ProcessName): boolean {
    return isAlive(this.process(name).pid);
  }

  /** Sends `signal` to one process and resolves once it has exited. */
  async kill(name: ProcessName, signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 15_000): Promise<void> {
    const p = this.process(name);
    try {
      process.kill(p.pid, signal);
    } catch {
      return; // already gone
    }
    await until(`${name} (pid ${p.pid}) to exit after ${signal}`, () => !isAlive(p.pid), { timeoutMs, intervalMs: 20 });
  }

  /**
   * Starts a stopped (or killed) process again exactly as `up` started it (same command, working
   * directory, variables and log file, appended to), records its new pid in state.json (so
   * `gpunet down` stops it), and waits until it answers its health query.
   */
  async restart(name: ProcessName, options: { healthTimeoutMs?: number } = {}): Promise<void> {
    const p = this.process(name);
    if (isAlive(p.pid)) throw new TestNetworkError(`${name} (pid ${p.pid}) is still running: kill it first`);
    if (p.role === 'nats') throw new TestNetworkError('restarting nats-server is not supported: its clients would need to reconnect first');
    if (!p.env || !p.cwd) throw new TestNetworkError(`state.json does not say how ${name} was started (no env/cwd): rebuild the CLI`);
    const pid = spawnDetached(p.command, { cwd: p.cwd, env: { ...this.env, ...p.env }, log: p.log });
    const next = { ...p, pid };
    this.state = { ...this.state, processes: this.state.processes.map((q) => (q.name === name ? next : q)) };
    await writeState(this.state);
    // Agents and the recorder answer the execution Health query, each as its own instance.
    const targets: HealthTargets = p.role === 'agent' || name === 'recorder' ? { services: ['execution'], agents: [name] } : { services: [name as ServiceName], agents: [] };
    await waitHealthy(this.natsUrl, targets, {
      keyFile: this.operatorKeyFile,
      timeoutMs: options.healthTimeoutMs ?? 30_000,
      check: () => {
        if (!isAlive(pid)) throw new TestNetworkError(`${name} exited while restarting:\n${tailOf(p.log, 30)}`);
      },
    });
  }

  /**
   * Joins one more execution agent, as an operator adds a node to a running network: a key of its
   * own in the keys directory, nats-server's config rendered again and reloaded (SIGHUP) so the
   * node's identity may connect, the node enrolled with the recorder (`gpunet nodes enroll`),
   * then the agent started like `up` starts one (node-1's variables, with `env` on top), recorded
   * in state.json so `gpunet down` stops it, and waited for until it answers its health query.
   */
  async addAgent(nodeId: string, env: Record<string, string> = {}): Promise<LocalProcess> {
    const template = this.process(this.nodeIds[0]!);
    const nats = this.process('nats');
    const keyFile = join(this.keysDir, `${identityName('node', nodeId)}.nk`);
    const identity = await createIdentityFile(keyFile);
    await writeNatsConfig(this.state.natsConfig!, { keysDir: this.keysDir, listen: `127.0.0.1:${nats.port}`, storeDir: join(this.dataDir, 'nats') });
    process.kill(nats.pid, 'SIGHUP');
    await until(`nats-server to admit ${nodeId}'s key after the reload`, async () => {
      try {
        const nc = await connect({ ...(await natsAuthOptions(keyFile)), servers: this.natsUrl, reconnect: false, timeout: 5_000 });
        await nc.close();
        return true;
      } catch {
        return false;
      }
    }, { timeoutMs: 60_000, intervalMs: 100 });
    const out = sink();
    const err = sink();
    const code = await runCli(['nodes', 'enroll', nodeId, '--public-key', identity.publicKey, '--data-dir', this.dataDir, '--json'], { stdout: out.stream, stderr: err.stream, env: this.env, cwd: this.dataDir });
    if (code !== 0) throw new TestNetworkError(`gpunet nodes enroll ${nodeId} exited ${code}:\n${err.text()}${out.text()}`);
    const log = join(this.dataDir, 'logs', `${nodeId}.log`);
    // Its own /metrics port: node-1's is taken.
    const metricsPort = await freePort();
    const agentEnv = { ...template.env, GPUNET_NODE_ID: nodeId, GPUNET_WORK_DIR: join(this.dataDir, 'nodes', nodeId), GPUNET_NATS_NKEY_FILE: keyFile, GPUNET_METRICS_PORT: String(metricsPort), ...env };
    const pid = spawnDetached(template.command, { cwd: template.cwd!, env: { ...this.env, ...agentEnv }, log });
    const added: LocalProcess = { ...template, name: nodeId, nodeId, pid, log, env: agentEnv, metricsPort };
    this.state = { ...this.state, processes: [...this.state.processes, added] };
    await writeState(this.state);
    await waitHealthy(this.natsUrl, { services: ['execution'], agents: [nodeId] }, {
      keyFile: this.operatorKeyFile,
      timeoutMs: 30_000,
      check: () => {
        if (!isAlive(pid)) throw new TestNetworkError(`${nodeId} exited while starting:\n${tailOf(log, 30)}`);
      },
    });
    return added;
  }

  /** The event store, opened once (read by tests; the services write it). */
  store(): Promise<EventStore> {
    return (this.storeHandle ??= openEventStore(this.storeUrl));
  }

  /** Every event matching `filter`, in store order (all pages). */
  async events(filter: ReadAllFilter = {}): Promise<RecordedEvent[]> {
    const store = await this.store();
    const all: RecordedEvent[] = [];
    let from = 0n;
    for (;;) {
      const page = await store.readAll({ fromPosition: from, maxCount: 5_000, filter });
      all.push(...page);
      if (page.length < 5_000) return all;
      from = page[page.length - 1]!.position;
    }
  }

  /** A NATS connection of the test's own (queries, JetStream state), closed by {@link stop}. */
  nats(): Promise<NatsConnection> {
    return (this.natsHandle ??= natsAuthOptions(this.operatorKeyFile).then((auth) => connect({ ...auth, servers: this.natsUrl, name: 'gpunet-e2e', noAsyncTraces: true })));
  }

  /**
   * Messages of its stream (a node's `GPUNET_WORK`, else `GPUNET_EVENTS`) the durable consumer `durable` has not yet acknowledged: not yet
   * delivered (`pending`) plus delivered and in hand (`ackPending`). Both 0: it has handled everything.
   */
  async consumerBacklog(durable: string): Promise<{ pending: number; ackPending: number }> {
    const jsm = await jetstreamManager(await this.nats());
    // A node's consumer reads its own work (GPUNET_WORK); the services' read the events.
    const info = await jsm.consumers.info(durable.startsWith('execution-') ? 'GPUNET_WORK' : 'GPUNET_EVENTS', durable);
    return { pending: info.num_pending, ackPending: info.num_ack_pending };
  }

  /** Messages in the dead-letter stream `GPUNET_DLQ` (a healthy run has none). */
  async deadLetters(): Promise<number> {
    const jsm = await jetstreamManager(await this.nats());
    return (await jsm.streams.info('GPUNET_DLQ')).state.messages;
  }

  /**
   * An SDK client of a team of the network (default the local team) with its API key and NKey,
   * or with another API key (e.g. {@link adminApiKey}); closed by {@link stop}.
   */
  client(team = this.team, apiKey?: string): GpunetClient {
    const creds = this.teamCredentials(team);
    const client = new GpunetClient({ baseUrl: this.url, apiKey: apiKey ?? creds.apiKey, natsUrl: this.natsUrl, natsKeyFile: creds.natsKeyFile, team });
    this.clients.push(client);
    return client;
  }

  /** The last `lines` lines of every process's log, for a failure message. */
  logTails(lines = 40): string {
    return this.state.processes
      .map((p) => `──── ${p.name} (pid ${p.pid}, ${isAlive(p.pid) ? 'running' : 'exited'}) ${p.log}\n${tailOf(p.log, lines)}`)
      .join('\n');
  }

  /**
   * `gpunet down` (services and agents, then nats-server), then removes the data directory
   * unless a test failed (then its path is printed, logs inside).
   */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    if (this.tap) {
      await this.tap.tap.close().catch(() => undefined);
      await this.tap.nc.close().catch(() => undefined);
    }
    if (this.storeHandle) await (await this.storeHandle).close().catch(() => undefined);
    if (this.natsHandle) await (await this.natsHandle).close().catch(() => undefined);
    const out = sink();
    const err = sink();
    const code = await runCli(['down', '--json', '--data-dir', this.dataDir, '--timeout', '20s'], { stdout: out.stream, stderr: err.stream, env: this.env, cwd: this.dataDir });
    live.delete(this);
    if (code !== 0) throw new TestNetworkError(`gpunet down exited ${code}:\n${err.text()}${out.text()}`);
    await markStopped(this.dataDir);
    if (this.failed || process.env.GPUNET_E2E_KEEP_DATA === '1') {
      process.stderr.write(`gpunet e2e: data of the network kept in ${this.dataDir}\n`);
      return;
    }
    await rm(this.dataDir, { recursive: true, force: true });
  }

  /** SIGKILL to every recorded process, synchronously (process exit). */
  killAllNow(): void {
    for (const p of this.state.processes) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}

/**
 * Wraps a test body: when it throws, the tails of every process's log are printed (straight to
 * stderr, not through Jest's console) and the network's data directory is kept.
 */
export function withLogsOnFailure(net: () => TestNetwork | undefined, body: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await body();
    } catch (err) {
      const n = net();
      if (n) {
        n.failed = true;
        process.stderr.write(`\n==== gpunet e2e failure: logs of ${n.dataDir}\n${n.logTails()}\n====\n`);
      }
      throw err;
    }
  };
}
