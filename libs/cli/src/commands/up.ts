/**
 * `gpunet up`: a whole gpunet network on this machine — nats-server with JetStream (unless
 * `--nats`), the five services and N execution agents as detached processes, a SQLite store
 * (unless `--postgres`), an API key for team `local` — then waits until every process answers
 * its health query. Everything lives under the data directory (default `./.gpunet`).
 *
 * Every NATS connection authenticates: each process, team and the operator gets its own NKey
 * seed file in `<data dir>/keys/` (0700, files 0600), nats-server is started from a config
 * (`<data dir>/nats/nats.conf`, 0600) that admits each with its permissions
 * (deploy/nats-permissions.yaml), and each process is told only the path of its own key, in
 * its environment (`GPUNET_NATS_NKEY_FILE`), never on its command line.
 *
 * The network signing key (ed25519 NKey seed, not a bus identity) is made once per data directory
 * in `<dataDir>/signing/signing.nk` (0600 in a 0700 directory) and its path is handed to the ledger
 * alone (`GPUNET_SIGNING_KEY_FILE`): the ledger's notary signs the chain heads with it. state.json
 * records its public key, which `verify`, `replay` and `dispute-bundle` check against.
 */
import { parseDuration, SERVICE_NAMES, type ServiceName } from '#contracts';
import { BlobStore } from '#blobs';
import { parseTopology, provision, standingConsumers, type TopologyFileDefinition } from '#messaging';
import { parse as parseYaml } from 'yaml';
import { jetstreamManager } from '@nats-io/jetstream';
import { pino } from 'pino';
import { createIdentityFile, identityName, loadIdentityFile, natsAuthOptions, type Identity } from '#identity';
import { connect } from '@nats-io/transport-node';
import { chmod, lstat, mkdir, readdir, readFile, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { LocalNetworkError, UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { displayPath } from '../format.js';
import { writeApiKeysFile, LOCAL_TEAM, newAdminApiKey, newApiKey } from '../local/api-keys.js';
import { checkServicesBuilt, findNatsServer, freePort, recorderEntry, repoRoot } from '../local/environment.js';
import { HealthTimeoutError, waitForNats, waitHealthy } from '../local/health.js';
import { ensureKeyFiles, routePassword, writeAuthorizationFile, writeClusterServerConfig, writeNatsConfig } from '../local/identities.js';
import { isAlive, runsCommand, spawnDetached, stopProcesses, tailOf } from '../local/processes.js';
import { removeState, writeState, type LocalProcess, type LocalState } from '../local/state.js';
import { spinner } from '../progress.js';

export interface UpOptions {
  agents: string;
  gpus: string;
  gpuModel: string;
  nats?: string;
  keys?: string;
  team?: string[];
  postgres?: string;
  cluster?: boolean;
  port?: string;
  timeout: string;
  logLevel: string;
}

/** Services started once each; agents (execution) are started per node. */
const SINGLE_SERVICES: readonly ServiceName[] = SERVICE_NAMES.filter((s) => s !== 'execution');

/**
 * What an execution node must never be given: the central store and its chain key (a node keeps
 * its own journal and reports to the recorder, decision 0015).
 */
const CONTROL_PLANE_ONLY_ENV: readonly string[] = ['GPUNET_STORE_URL', 'GPUNET_CHAIN_KEY'];

/** Instance name of the execution service's recorder (it answers the execution Health query as that instance). */
export const RECORDER_INSTANCE = 'recorder';

/** Variables that name one process; `up` sets them per process and never passes its own along. */
const PER_PROCESS_ENV: readonly string[] = ['GPUNET_INSTANCE', 'GPUNET_NODE_ID', 'GPUNET_WORK_DIR', 'GPUNET_HTTP_PORT', 'GPUNET_HTTP_HOST', 'GPUNET_API_KEYS_FILE', 'GPUNET_SIGNING_KEY_FILE', 'GPUNET_NATS_NKEY_FILE', 'GPUNET_METRICS_PORT'];

/**
 * V8 flags of every control-plane process: its young generation at V8's own cap from the start.
 * V8 otherwise begins it at a quarter of that and doubles it as the allocation rate rises, so a
 * steady load grew each service's RSS by 8 to 16 MiB at whatever minute that happened (most of the
 * growth a 5 jobs/s soak showed), and a busy service scavenged four times as often until it did.
 * Agents keep V8's default: an edge node's memory is the jobs'. deploy/systemd's units say the same.
 */
export const SERVICE_V8_FLAGS: readonly string[] = ['--min-semi-space-size=16', '--max-semi-space-size=16'];

/** Where the network signing key lives in a data directory. */
export function signingKeyPath(dataDir: string): string {
  return join(dataDir, 'signing', 'signing.nk');
}

/** The data directory's signing key: the one made by an earlier `up` (digests already signed with it stay checkable), else a new one. */
async function signingKey(dataDir: string): Promise<{ identity: Identity; file: string }> {
  const file = signingKeyPath(dataDir);
  return { identity: existsSync(file) ? await loadIdentityFile(file) : await createIdentityFile(file), file };
}

function count(flag: string, text: string, min: number): number {
  if (!/^\d{1,4}$/.test(text) || Number(text) < min) throw new UsageError(`${flag} must be a whole number ≥ ${min}, got \`${text}\``, [{ path: flag, message: `must be a whole number ≥ ${min}`, fix: `write e.g. \`${flag} 2\`` }]);
  return Number(text);
}

function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined || ms <= 0) throw new UsageError(`${flag} must be a duration such as 60s or 2m, got \`${text}\``, [{ path: flag, message: 'must be a duration', fix: `write e.g. \`${flag} 60s\`` }]);
  return ms;
}

/** Throws when a started process has exited: its log's last lines say why. */
function assertRunning(started: readonly LocalProcess[]): void {
  for (const p of started) {
    if (!isAlive(p.pid)) {
      const tail = tailOf(p.log);
      throw new LocalNetworkError(`${p.name} (pid ${p.pid}) exited during start-up${tail ? `; the end of its log:\n${tail.replace(/^/gm, '    ')}` : ''}`, [p.log]);
    }
  }
}

/**
 * The data dir holds the store (every team's specs, env secrets included), the API keys, the
 * state file with the local key, the NATS data and the logs: each file 0600, each directory 0700.
 * The data dir itself and `nodes/` are 0711 when agents run below it (job users must pass through
 * to their run directories; they can never list or open anything else), else 0700. Applied to an
 * existing data dir too, whatever it was.
 */
export async function closeDataDir(dataDir: string, agents: boolean): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await chmod(dataDir, agents ? 0o711 : 0o700);
  for (const dir of ['logs', 'nats', 'keys', 'signing']) {
    const path = join(dataDir, dir);
    if (dir === 'logs') await mkdir(path, { recursive: true, mode: 0o700 });
    if (await stat(path).catch(() => undefined)) await closeTree(path);
  }
  for (const file of ['events.db', 'events.db-wal', 'events.db-shm', 'api-keys.yaml', 'state.json']) await chmod(join(dataDir, file), 0o600).catch(() => undefined);
  if (agents) {
    await mkdir(join(dataDir, 'nodes'), { recursive: true, mode: 0o711 });
    await chmod(join(dataDir, 'nodes'), 0o711);
  }
}

/** Directories 0700 and files 0600, all the way down (symlinks left alone). */
async function closeTree(path: string): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) return;
  if (st.isDirectory()) {
    await chmod(path, 0o700);
    for (const name of await readdir(path)) await closeTree(join(path, name));
  } else if (st.isFile()) {
    await chmod(path, 0o600);
  }
}

export async function up(ctx: CommandContext, opts: UpOptions): Promise<ExitCode> {
  const { out, io } = ctx;
  const agents = count('--agents', opts.agents, 0);
  const gpus = count('--gpus', opts.gpus, 1);
  const timeoutMs = duration('--timeout', opts.timeout);
  const httpPortWanted = opts.port === undefined ? undefined : count('--port', opts.port, 1);
  if (opts.cluster && opts.nats) {
    throw new UsageError('--cluster starts its own three nats-servers: it cannot be given --nats', [{ path: '--nats', message: 'not with --cluster', fix: 'drop `--nats` (or drop `--cluster` to use that server)' }]);
  }
  if (opts.cluster && !opts.postgres) {
    // A cluster's point is that no one machine holds the truth: SQLite is a file on one machine.
    throw new UsageError('--cluster needs --postgres: the store of a clustered network is PostgreSQL, not a SQLite file on one machine', [
      { path: '--postgres', message: 'required with --cluster', fix: 'pass `--postgres postgres://user@host:5432/gpunet` (an empty database; `createdb gpunet` makes one)' },
    ]);
  }
  const root = repoRoot();
  const entries = checkServicesBuilt(root);
  const dataDir = ctx.dataDir;
  const natsBin = opts.nats ? undefined : findNatsServer(io.env);

  const previous = await ctx.state();
  const alive = previous?.processes.filter((p) => isAlive(p.pid) && runsCommand(p.pid, p.command) !== false) ?? [];
  if (alive.length > 0) {
    throw new UsageError(`a local network is already up in ${dataDir} (${alive.map((p) => `${p.name} pid ${p.pid}`).join(', ')})`, [
      { path: '--data-dir', message: 'already running here', fix: 'use it as it is, stop it with `gpunet down`, or pick another `--data-dir`' },
    ]);
  }

  const logsDir = join(dataDir, 'logs');
  await closeDataDir(dataDir, agents > 0);
  const nodeIds = Array.from({ length: agents }, (_, i) => `node-${i + 1}`);
  const otherTeams = [...new Set(opts.team ?? [])].filter((t) => t !== LOCAL_TEAM);
  for (const t of otherTeams) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(t)) throw new UsageError(`--team \`${t}\` is not a team id`, [{ path: '--team', message: 'letters, digits, _ and -', fix: 'write e.g. `--team ml`' }]);
  }
  const teams = [LOCAL_TEAM, ...otherTeams];
  // One identity per process, per team and for the operator; kept across runs in the same data directory.
  const keysDir = opts.keys ? resolve(io.cwd, opts.keys) : join(dataDir, 'keys');
  const keyFiles = await ensureKeyFiles(keysDir, [
    ...SINGLE_SERVICES.map((s) => identityName('service', s)),
    identityName('service', RECORDER_INSTANCE),
    ...nodeIds.map((n) => identityName('node', n)),
    ...teams.map((t) => identityName('team', t)),
    identityName('operator'),
    // Machines that join later (`gpunet node join`) connect as it, with the seed their token carries.
    identityName('joiner'),
  ]);
  const operatorKeyFile = keyFiles[identityName('operator')]!;
  const natsDir = join(dataDir, 'nats');
  const natsConfig = join(natsDir, 'nats.conf');
  const t0 = Date.now();
  const started: LocalProcess[] = [];
  const spin = spinner(out, 'starting nats-server');
  const show = (path: string) => displayPath(io.cwd, path);
  try {
    let natsUrl: string;
    if (opts.nats) {
      natsUrl = opts.nats;
      // The authorization the external server must load to admit these identities (see the README).
      const first = new URL(natsUrl.split(',')[0]!.trim());
      await writeNatsConfig(natsConfig, { keysDir, listen: `${first.hostname}:${first.port || 4222}`, storeDir: natsDir });
      spin.text(`connecting to NATS at ${natsUrl}`);
      await waitForNats(natsUrl, { timeoutMs: 5_000, keyFile: operatorKeyFile }).catch((err: unknown) => {
        throw new UsageError(`cannot connect to NATS at ${natsUrl} as the operator: ${(err as Error).message}`, [
          { path: '--nats', message: 'the server does not admit this network\'s identities yet', fix: `include the authorization block of ${natsConfig} in that server's config, \`nats-server --signal reload\`, and run \`gpunet up\` again (the keys in ${keysDir} are kept)` },
        ]);
      });
      // A server that lets anyone in would ignore every permission: the secure setup is not optional.
      if (!(await requiresAuthentication(natsUrl, operatorKeyFile))) {
        throw new UsageError(`NATS at ${natsUrl} lets anyone in (no authorization): every permission would be ignored`, [
          { path: '--nats', message: 'the server requires no authentication', fix: `include the authorization block of ${natsConfig} in that server's config, \`nats-server --signal reload\`, and run \`gpunet up\` again` },
        ]);
      }
    } else if (opts.cluster) {
      spin.text('starting a 3-server NATS cluster');
      natsUrl = await startNatsCluster({ natsDir, keysDir, logsDir, dataDir, natsBin: natsBin!, env: io.env, started, timeoutMs, operatorKeyFile, check: () => assertRunning(started) });
      // The streams, at their cluster replicas, before any service: a service whose R3 stream the
      // cluster cannot place yet (its meta leader still being elected) would exit at start.
      spin.text('provisioning the streams (R3)');
      await provisionStreams(natsUrl, operatorKeyFile, join(root, 'deploy', 'topology.yaml'), { timeoutMs, check: () => assertRunning(started) });
    } else {
      const port = await freePort();
      await mkdir(natsDir, { recursive: true, mode: 0o700 });
      await chmod(natsDir, 0o700);
      await writeNatsConfig(natsConfig, { keysDir, listen: `127.0.0.1:${port}`, storeDir: natsDir });
      // Everything is in the config file (0600): the command line names nothing secret.
      const command = [natsBin!, '-c', natsConfig];
      const log = join(logsDir, 'nats.log');
      started.push({ name: 'nats', role: 'nats', pid: spawnDetached(command, { cwd: dataDir, env: { ...io.env }, log }), command, log, cwd: dataDir, env: {}, port });
      natsUrl = `nats://127.0.0.1:${port}`;
      // The same --timeout as the services' health: on a loaded machine a server that has logged "ready" can take longer than 10 s to finish its first authenticated handshake.
      await waitForNats(natsUrl, { timeoutMs, check: () => assertRunning(started), keyFile: operatorKeyFile });
    }
    // Each team's blob bucket is made here, by the operator: producers and nodes may not create streams.
    await ensureTeamBuckets(natsUrl, operatorKeyFile, teams);

    const apiKey = newApiKey();
    const adminApiKey = newAdminApiKey();
    const others = otherTeams.map((team) => ({ team, apiKey: newApiKey(), natsKeyFile: keyFiles[identityName('team', team)]! }));
    const apiKeysFile = join(dataDir, 'api-keys.yaml');
    await writeApiKeysFile(apiKeysFile, apiKey, LOCAL_TEAM, adminApiKey, others);
    const httpPort = httpPortWanted ?? (await freePort());
    const storeUrl = opts.postgres ?? `sqlite:${join(dataDir, 'events.db')}`;
    const common = { GPUNET_NATS_URL: natsUrl, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: opts.logLevel };
    // Other GPUNET_* settings in our environment (GPUNET_PRICES, GPUNET_CHAIN_KEY, …) reach every
    // service; per-process identities do not, or every process would claim the same one.
    const inherited = Object.fromEntries(Object.entries(io.env).filter(([name]) => !PER_PROCESS_ENV.includes(name)));
    // Only the ledger gets the signing key: no other service, and never an agent.
    const signing = await signingKey(dataDir);
    const extra: Partial<Record<ServiceName, Record<string, string>>> = {
      intake: { GPUNET_HTTP_PORT: String(httpPort), GPUNET_HTTP_HOST: '127.0.0.1', GPUNET_API_KEYS_FILE: apiKeysFile },
      ledger: { GPUNET_SIGNING_KEY_FILE: signing.file },
    };

    spin.text('starting services');
    for (const service of SINGLE_SERVICES) {
      const command = [process.execPath, ...SERVICE_V8_FLAGS, entries[service]];
      const log = join(logsDir, `${service}.log`);
      const metricsPort = await freePort();
      const env = { ...common, ...extra[service], GPUNET_NATS_NKEY_FILE: keyFiles[identityName('service', service)]!, GPUNET_METRICS_PORT: String(metricsPort) };
      const pid = spawnDetached(command, { cwd: root, env: { ...inherited, ...env }, log });
      started.push({ name: service, role: 'service', pid, command, log, cwd: root, env, metricsPort, ...(service === 'intake' ? { port: httpPort } : {}) });
    }
    {
      // The recorder enrolls this network's nodes with their public keys (NodeEnrolled, once).
      const command = [process.execPath, ...SERVICE_V8_FLAGS, recorderEntry(root)];
      const log = join(logsDir, `${RECORDER_INSTANCE}.log`);
      const enroll: string[] = [];
      for (const n of nodeIds) enroll.push(`${n}=${(await loadIdentityFile(keyFiles[identityName('node', n)]!)).publicKey}`);
      const metricsPort = await freePort();
      const env = { ...common, GPUNET_ENROLL_NODES: enroll.join(','), GPUNET_NATS_NKEY_FILE: keyFiles[identityName('service', RECORDER_INSTANCE)]!, GPUNET_METRICS_PORT: String(metricsPort) };
      const pid = spawnDetached(command, { cwd: root, env: { ...inherited, ...env }, log });
      started.push({ name: RECORDER_INSTANCE, role: 'service', pid, command, log, cwd: root, env, metricsPort });
    }
    const nodeInherited = Object.fromEntries(Object.entries(inherited).filter(([name]) => !CONTROL_PLANE_ONLY_ENV.includes(name)));
    for (const nodeId of nodeIds) {
      const command = [process.execPath, entries.execution];
      const log = join(logsDir, `${nodeId}.log`);
      // No store URL and no chain key: a node holds its own key and journal, nothing of the control plane's.
      const metricsPort = await freePort();
      const env = {
        GPUNET_METRICS_PORT: String(metricsPort),
        GPUNET_NATS_URL: natsUrl,
        GPUNET_LOG_LEVEL: opts.logLevel,
        GPUNET_NATS_NKEY_FILE: keyFiles[identityName('node', nodeId)]!,
        GPUNET_NODE_ID: nodeId,
        GPUNET_GPUS: String(gpus),
        GPUNET_GPU_MODEL: opts.gpuModel,
        GPUNET_WORK_DIR: join(dataDir, 'nodes', nodeId),
      };
      started.push({ name: nodeId, role: 'agent', pid: spawnDetached(command, { cwd: root, env: { ...nodeInherited, ...env }, log }), command, log, cwd: root, env, nodeId, metricsPort });
    }

    const state: LocalState = {
      version: 1,
      dataDir,
      startedAt: new Date(t0).toISOString(),
      team: LOCAL_TEAM,
      apiKey,
      adminApiKey,
      apiKeysFile,
      url: `http://127.0.0.1:${httpPort}`,
      natsUrl,
      natsKeyFile: keyFiles[identityName('team', LOCAL_TEAM)]!,
      operatorKeyFile,
      keysDir,
      natsConfig: opts.cluster ? join(natsDir, 'authorization.conf') : natsConfig,
      ...(others.length > 0 ? { otherTeams: others } : {}),
      natsManaged: !opts.nats,
      ...(opts.cluster ? { natsCluster: { servers: started.filter((p) => p.role === 'nats').length } } : {}),
      storeUrl,
      signingPublicKey: signing.identity.publicKey,
      signingKeyFile: signing.file,
      processes: started,
    };
    // Written before waiting, so `gpunet down` can stop a network that never became healthy.
    await writeState(state);

    // The recorder answers the execution Health query as its own instance, like each agent.
    const targets = { services: [...SINGLE_SERVICES, 'execution' as const], agents: [RECORDER_INSTANCE, ...nodeIds] };
    await waitHealthy(natsUrl, targets, {
      keyFile: operatorKeyFile,
      timeoutMs,
      check: () => assertRunning(started),
      onRound: (missing, healthy, total) => spin.text(`waiting for ${missing.join(', ')} (${healthy}/${total} healthy)`),
    });
    const tookMs = Date.now() - t0;
    spin.stop();

    out.doc({ ...state, healthyAfterMs: tookMs });
    out.line(`gpunet is up: ${started.length} processes healthy in ${(tookMs / 1000).toFixed(1)} s`);
    out.line(`  API     ${state.url}  (team ${LOCAL_TEAM}; key in ${show(ctx.statePath)})`);
    const consoleBuilt = existsSync(join(root, 'dist', 'console', 'index.html'));
    out.line(`  console ${state.url}/console  ${consoleBuilt ? '(log in with that key)' : '(not built yet: run `npm run build:console`)'}`);
    if (opts.cluster) out.line(`  cluster 3 nats-servers (${started.filter((p) => p.role === 'nats').map((p) => p.name).join(', ')}), streams R3; routes authenticate (password in ${show(join(natsDir, 'route.secret'))})`);
    out.line(`  NATS    ${natsUrl}${state.natsManaged ? `  (data in ${show(natsDir)})` : ''}; every connection authenticates (keys in ${show(keysDir)}/, permissions in ${show(state.natsConfig!)})`);
    out.line(`  store   ${opts.postgres ? 'PostgreSQL' : show(join(dataDir, 'events.db'))}`);
    out.line(`  signing ${state.signingPublicKey}  (chain heads signed by the ledger; seed in ${show(signing.file)}, 0600)`);
    out.line(`  agents  ${nodeIds.length > 0 ? `${nodeIds.join(', ')}: ${gpus} × ${opts.gpuModel} each` : 'none'}`);
    out.line(`  logs    ${show(logsDir)}/`);
    out.line('next: `gpunet submit job.yaml --wait`; stop with `gpunet down`');
    return EXIT.ok;
  } catch (err) {
    spin.stop();
    if (started.length > 0) {
      // Half a network is worse than none: stop what started, keep the logs for reading.
      const workers = started.filter((p) => p.role !== 'nats');
      await stopProcesses(workers, { graceMs: 10_000 });
      await stopProcesses(started.filter((p) => p.role === 'nats'), { graceMs: 5_000 });
      await removeState(dataDir);
    }
    if (err instanceof HealthTimeoutError) {
      const logs = err.missing.map((name) => started.find((p) => p.name === name)?.log).filter((l): l is string => !!l);
      throw new LocalNetworkError(`the network did not become healthy: no process answered its health query for ${err.timeoutMs} ms, and ${err.missing.join(', ')} never did; everything started was stopped (a slow machine may need a longer --timeout)`, logs, { cause: err });
    }
    throw err;
  }
}

/** Provisioning's own log lines would land in the middle of the spinner: `up` says what it did itself. */
const silentLogger = pino({ level: 'silent' });

/** Servers of a `--cluster` network: three, so that one may be down and the streams (R3) keep their majority. */
const CLUSTER_SERVERS = 3;

/**
 * Starts the three nats-servers of `--cluster` on 127.0.0.1, each on its own client, route and
 * monitoring ports and store directory (`<natsDir>/nats-<i>/`), from deploy/nats/cluster.conf with
 * one rendered authorization (`<natsDir>/authorization.conf`) all three include; resolves with
 * the three client URLs (comma-separated) once every server accepts the operator and sees the
 * other two (the INFO's `connect_urls`).
 */
async function startNatsCluster(o: {
  natsDir: string;
  keysDir: string;
  logsDir: string;
  dataDir: string;
  natsBin: string;
  env: NodeJS.ProcessEnv;
  started: LocalProcess[];
  timeoutMs: number;
  operatorKeyFile: string;
  check: () => void;
}): Promise<string> {
  await mkdir(o.natsDir, { recursive: true, mode: 0o700 });
  await chmod(o.natsDir, 0o700);
  const authorizationFile = join(o.natsDir, 'authorization.conf');
  await writeAuthorizationFile(authorizationFile, { keysDir: o.keysDir });
  const password = await routePassword(o.natsDir);
  const servers: { name: string; client: number; route: number; monitor: number }[] = [];
  for (let i = 1; i <= CLUSTER_SERVERS; i++) servers.push({ name: `nats-${i}`, client: await freePort(), route: await freePort(), monitor: await freePort() });
  for (const s of servers) {
    const dir = join(o.natsDir, s.name);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const config = join(dir, 'nats.conf');
    await writeClusterServerConfig(config, {
      serverName: s.name,
      clientListen: `127.0.0.1:${s.client}`,
      routeListen: `127.0.0.1:${s.route}`,
      routes: servers.map((r) => `127.0.0.1:${r.route}`),
      routePassword: password,
      storeDir: join(dir, 'jetstream'),
      monitorListen: `127.0.0.1:${s.monitor}`,
      // nats-server resolves an include relative to the including file, even an absolute path.
      authorizationFile: relative(dir, authorizationFile),
    });
    const command = [o.natsBin, '-c', config];
    const log = join(o.logsDir, `${s.name}.log`);
    o.started.push({ name: s.name, role: 'nats', pid: spawnDetached(command, { cwd: o.dataDir, env: { ...o.env }, log }), command, log, cwd: o.dataDir, env: {}, port: s.client });
  }
  const urls = servers.map((s) => `nats://127.0.0.1:${s.client}`);
  for (const url of urls) await waitForNats(url, { timeoutMs: o.timeoutMs, check: o.check, keyFile: o.operatorKeyFile });
  const auth = await natsAuthOptions(o.operatorKeyFile);
  const deadline = Date.now() + o.timeoutMs;
  for (const url of urls) {
    for (;;) {
      o.check();
      const nc = await connect({ ...auth, servers: url, name: 'gpunet-cli-up', noAsyncTraces: true, reconnect: false, timeout: 5_000 });
      const peers = nc.info?.connect_urls?.length ?? 0;
      await nc.close();
      if (peers >= CLUSTER_SERVERS) break;
      if (Date.now() >= deadline) throw new LocalNetworkError(`nats-server at ${url} sees ${peers} of the cluster's ${CLUSTER_SERVERS} servers after ${o.timeoutMs} ms: its routes did not connect`, o.started.filter((p) => p.role === 'nats').map((p) => p.log));
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return urls.join(',');
}

/**
 * Creates (or updates) the streams of the topology file as the operator, retrying while the
 * cluster cannot take them yet (no JetStream meta leader, peers not yet known to it).
 */
export async function provisionStreams(natsUrl: string, operatorKeyFile: string, topologyFile: string, o: { timeoutMs: number; check: () => void }): Promise<void> {
  // The streams, and the durables GPUNET_EVENTS keeps its events for (decision 0038): a service
  // may make only its own, so until all exist its relay waits. Each service still provisions its own.
  const raw = (parseYaml(await readFile(topologyFile, 'utf8')) ?? {}) as TopologyFileDefinition;
  const topology = parseTopology({ streams: raw.streams ?? [], standing: standingConsumers(raw, typeof raw.eventPartitions === 'number' ? raw.eventPartitions : 1) }, topologyFile);
  const nc = await connect({ ...(await natsAuthOptions(operatorKeyFile)), servers: natsUrl.split(','), name: 'gpunet-cli-up', noAsyncTraces: true });
  try {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      o.check();
      try {
        // Until the cluster has elected its JetStream meta leader, the API does not answer (a timeout).
        const jsm = await jetstreamManager(nc);
        await provision(jsm, { streams: topology.streams, standing: topology.standing }, { serverVersion: nc.info?.version, serverInfo: nc.info, logger: silentLogger });
        return;
      } catch (err) {
        if (Date.now() >= deadline) throw new LocalNetworkError(`the NATS cluster did not take the streams of ${topologyFile} within ${o.timeoutMs} ms: ${(err as Error).message}`, [], { cause: err });
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}

/** Creates (when missing) the blob bucket of each team, connected as the operator. */
async function ensureTeamBuckets(natsUrl: string, operatorKeyFile: string, teams: readonly string[]): Promise<void> {
  const nc = await connect({ ...(await natsAuthOptions(operatorKeyFile)), servers: natsUrl.split(','), name: 'gpunet-cli-up', noAsyncTraces: true });
  try {
    const blobs = await BlobStore.open(nc);
    for (const team of teams) await blobs.ensureBucket(team);
  } finally {
    await nc.close();
  }
}

/** True when the server at `natsUrl` requires clients to authenticate (its INFO's `auth_required`). */
async function requiresAuthentication(natsUrl: string, keyFile: string): Promise<boolean> {
  const nc = await connect({ ...(await natsAuthOptions(keyFile)), servers: natsUrl.split(','), name: 'gpunet-cli-up', noAsyncTraces: true, reconnect: false });
  try {
    return nc.info?.auth_required === true;
  } finally {
    await nc.close();
  }
}
