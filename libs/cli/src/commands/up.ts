/**
 * `gpunet up`: a whole gpunet network on this machine — nats-server with JetStream (unless
 * `--nats`), the five services and N execution agents as detached processes, a SQLite store
 * (unless `--postgres`), an API key for team `local` — then waits until every process answers
 * its health query. Everything lives under the data directory (default `./.gpunet`).
 */
import { parseDuration, SERVICE_NAMES, type ServiceName } from '#contracts';
import { createIdentityFile, loadIdentityFile, type Identity } from '#identity';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { CommandContext } from '../context.js';
import { LocalNetworkError, UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { displayPath } from '../format.js';
import { writeApiKeysFile, LOCAL_TEAM, newApiKey } from '../local/api-keys.js';
import { checkServicesBuilt, findNatsServer, freePort, recorderEntry, repoRoot } from '../local/environment.js';
import { HealthTimeoutError, waitForNats, waitHealthy } from '../local/health.js';
import { isAlive, runsCommand, spawnDetached, stopProcesses, tailOf } from '../local/processes.js';
import { removeState, writeState, type LocalProcess, type LocalState } from '../local/state.js';
import { spinner } from '../progress.js';

export interface UpOptions {
  agents: string;
  gpus: string;
  gpuModel: string;
  nats?: string;
  postgres?: string;
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

/** `<dataDir>/keys/node-<nodeId>.nk`: the node's key, made once and kept (its public key is what the recorder enrolls). */
export async function nodeKey(dataDir: string, nodeId: string): Promise<{ file: string; identity: Identity }> {
  const file = join(dataDir, 'keys', `node-${nodeId}.nk`);
  const identity = existsSync(file) ? await loadIdentityFile(file) : await createIdentityFile(file);
  return { file, identity };
}

/** Variables that name one process; `up` sets them per process and never passes its own along. */
const PER_PROCESS_ENV: readonly string[] = ['GPUNET_INSTANCE', 'GPUNET_NODE_ID', 'GPUNET_WORK_DIR', 'GPUNET_HTTP_PORT', 'GPUNET_HTTP_HOST', 'GPUNET_API_KEYS_FILE'];

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

export async function up(ctx: CommandContext, opts: UpOptions): Promise<ExitCode> {
  const { out, io } = ctx;
  const agents = count('--agents', opts.agents, 0);
  const gpus = count('--gpus', opts.gpus, 1);
  const timeoutMs = duration('--timeout', opts.timeout);
  const httpPortWanted = opts.port === undefined ? undefined : count('--port', opts.port, 1);
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
  await mkdir(logsDir, { recursive: true });
  const t0 = Date.now();
  const started: LocalProcess[] = [];
  const spin = spinner(out, 'starting nats-server');
  const show = (path: string) => displayPath(io.cwd, path);
  try {
    let natsUrl: string;
    if (opts.nats) {
      natsUrl = opts.nats;
      spin.text(`connecting to NATS at ${natsUrl}`);
      await waitForNats(natsUrl, { timeoutMs: 5_000 });
    } else {
      const port = await freePort();
      const natsDir = join(dataDir, 'nats');
      await mkdir(natsDir, { recursive: true });
      const command = [natsBin!, '-js', '-a', '127.0.0.1', '-p', String(port), '-sd', natsDir];
      const log = join(logsDir, 'nats.log');
      started.push({ name: 'nats', role: 'nats', pid: spawnDetached(command, { cwd: dataDir, env: { ...io.env }, log }), command, log, cwd: dataDir, env: {}, port });
      natsUrl = `nats://127.0.0.1:${port}`;
      await waitForNats(natsUrl, { timeoutMs: 10_000, check: () => assertRunning(started) });
    }

    const apiKey = newApiKey();
    const apiKeysFile = join(dataDir, 'api-keys.yaml');
    await writeApiKeysFile(apiKeysFile, apiKey);
    const httpPort = httpPortWanted ?? (await freePort());
    const storeUrl = opts.postgres ?? `sqlite:${join(dataDir, 'events.db')}`;
    const common = { GPUNET_NATS_URL: natsUrl, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: opts.logLevel };
    // Other GPUNET_* settings in our environment (GPUNET_PRICES, GPUNET_CHAIN_KEY, …) reach every
    // service; per-process identities do not, or every process would claim the same one.
    const inherited = Object.fromEntries(Object.entries(io.env).filter(([name]) => !PER_PROCESS_ENV.includes(name)));
    const extra: Partial<Record<ServiceName, Record<string, string>>> = {
      intake: { GPUNET_HTTP_PORT: String(httpPort), GPUNET_HTTP_HOST: '127.0.0.1', GPUNET_API_KEYS_FILE: apiKeysFile },
    };

    spin.text('starting services');
    for (const service of SINGLE_SERVICES) {
      const command = [process.execPath, entries[service]];
      const log = join(logsDir, `${service}.log`);
      const env = { ...common, ...extra[service] };
      const pid = spawnDetached(command, { cwd: root, env: { ...inherited, ...env }, log });
      started.push({ name: service, role: 'service', pid, command, log, cwd: root, env, ...(service === 'intake' ? { port: httpPort } : {}) });
    }
    const nodeIds = Array.from({ length: agents }, (_, i) => `node-${i + 1}`);
    const keys = new Map<string, { file: string; identity: Identity }>();
    for (const nodeId of nodeIds) keys.set(nodeId, await nodeKey(dataDir, nodeId));
    {
      // The recorder enrolls this network's nodes with their public keys (NodeEnrolled, once).
      const command = [process.execPath, recorderEntry(root)];
      const log = join(logsDir, `${RECORDER_INSTANCE}.log`);
      const env = { ...common, GPUNET_ENROLL_NODES: nodeIds.map((n) => `${n}=${keys.get(n)!.identity.publicKey}`).join(',') };
      const pid = spawnDetached(command, { cwd: root, env: { ...inherited, ...env }, log });
      started.push({ name: RECORDER_INSTANCE, role: 'service', pid, command, log, cwd: root, env });
    }
    const nodeInherited = Object.fromEntries(Object.entries(inherited).filter(([name]) => !CONTROL_PLANE_ONLY_ENV.includes(name)));
    for (const nodeId of nodeIds) {
      const command = [process.execPath, entries.execution];
      const log = join(logsDir, `${nodeId}.log`);
      // No store URL and no chain key: a node holds its own key and journal, nothing of the control plane's.
      const env = {
        GPUNET_NATS_URL: natsUrl,
        GPUNET_LOG_LEVEL: opts.logLevel,
        GPUNET_NATS_NKEY_FILE: keys.get(nodeId)!.file,
        GPUNET_NODE_ID: nodeId,
        GPUNET_GPUS: String(gpus),
        GPUNET_GPU_MODEL: opts.gpuModel,
        GPUNET_WORK_DIR: join(dataDir, 'nodes', nodeId),
      };
      started.push({ name: nodeId, role: 'agent', pid: spawnDetached(command, { cwd: root, env: { ...nodeInherited, ...env }, log }), command, log, cwd: root, env, nodeId });
    }

    const state: LocalState = {
      version: 1,
      dataDir,
      startedAt: new Date(t0).toISOString(),
      team: LOCAL_TEAM,
      apiKey,
      apiKeysFile,
      url: `http://127.0.0.1:${httpPort}`,
      natsUrl,
      natsManaged: !opts.nats,
      storeUrl,
      processes: started,
    };
    // Written before waiting, so `gpunet down` can stop a network that never became healthy.
    await writeState(state);

    // The recorder answers the execution Health query as its own instance, like each agent.
    const targets = { services: [...SINGLE_SERVICES, 'execution' as const], agents: [RECORDER_INSTANCE, ...nodeIds] };
    await waitHealthy(natsUrl, targets, {
      timeoutMs,
      check: () => assertRunning(started),
      onRound: (missing, healthy, total) => spin.text(`waiting for ${missing.join(', ')} (${healthy}/${total} healthy)`),
    });
    const tookMs = Date.now() - t0;
    spin.stop();

    out.doc({ ...state, healthyAfterMs: tookMs });
    out.line(`gpunet is up: ${started.length} processes healthy in ${(tookMs / 1000).toFixed(1)} s`);
    out.line(`  API     ${state.url}  (team ${LOCAL_TEAM}; key in ${show(ctx.statePath)})`);
    out.line(`  NATS    ${natsUrl}${state.natsManaged ? `  (data in ${show(join(dataDir, 'nats'))})` : ''}`);
    out.line(`  store   ${opts.postgres ? 'PostgreSQL' : show(join(dataDir, 'events.db'))}`);
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
      throw new LocalNetworkError(`the network did not become healthy within ${err.timeoutMs} ms: ${err.missing.join(', ')} never answered its health query; everything started was stopped`, logs, { cause: err });
    }
    throw err;
  }
}
