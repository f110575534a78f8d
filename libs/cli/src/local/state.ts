/**
 * `.gpunet/state.json`: what `gpunet up` started (pids, ports, logs) and how to reach it (API
 * URL, NATS URL, the local team's API key). Written atomically with mode 0600 (it holds a key);
 * read by every other command for its connection settings and by `down` for the pids.
 */
import { formatIssues, TeamId, Timestamp } from '#contracts';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { StateFileError } from '../errors.js';

/** Directory `gpunet up` uses when `--data-dir` is not given, relative to the working directory. */
export const DEFAULT_DATA_DIR = '.gpunet';
export const STATE_FILE = 'state.json';

export const PROCESS_ROLES = ['nats', 'service', 'agent'] as const;

export const LocalProcess = z.object({
  /** `nats`, a service name, or an agent's node id. */
  name: z.string().min(1),
  role: z.enum(PROCESS_ROLES),
  pid: z.int().min(1),
  /** The program and arguments started; `down` checks the pid still runs it before signalling. */
  command: z.array(z.string()).min(1),
  log: z.string().min(1),
  /** Working directory it was started in. */
  cwd: z.string().min(1).optional(),
  /**
   * The variables `up` set for it on top of the inherited environment (ports, URLs, node id),
   * so it can be started again as it was (tests kill and restart single processes).
   */
  env: z.record(z.string(), z.string()).optional(),
  port: z.int().min(1).max(65_535).optional(),
  /** Loopback port of its Prometheus `/metrics` (GPUNET_METRICS_PORT); `gpunet top` and tests scrape it. */
  metricsPort: z.int().min(1).max(65_535).optional(),
  nodeId: z.string().optional(),
});
export type LocalProcess = z.output<typeof LocalProcess>;

export const LocalState = z.object({
  version: z.literal(1),
  dataDir: z.string().min(1),
  startedAt: Timestamp,
  team: TeamId,
  apiKey: z.string().min(16),
  /** The network's operator key (role `operator`): teams and every team's keys (`gpunet teams`, `gpunet keys`). Absent in state files of older versions. */
  adminApiKey: z.string().min(16).optional(),
  apiKeysFile: z.string().min(1),
  /** Base URL of the intake API. */
  url: z.url(),
  natsUrl: z.string().min(1),
  /** The local team's NKey seed file (0600): producer commands connect to NATS with it. */
  natsKeyFile: z.string().min(1).optional(),
  /** The operator's NKey seed file: health checks and tests connect with it. */
  operatorKeyFile: z.string().min(1).optional(),
  /** Directory of every identity's seed file (0700). */
  keysDir: z.string().min(1).optional(),
  /** Teams besides `team` (`up --team`), each with its API key and NKey seed file. */
  otherTeams: z.array(z.object({ team: TeamId, apiKey: z.string().min(16), natsKeyFile: z.string().min(1) })).optional(),
  /** The nats-server config `up` wrote (the authorization of every identity). */
  natsConfig: z.string().min(1).optional(),
  /** True when `up` started nats-server itself (and `down` stops it). */
  natsManaged: z.boolean(),
  /** `up --cluster`: the NATS cluster's servers (processes `nats-1`…), all started and stopped by `up`/`down`. */
  natsCluster: z.object({ servers: z.int().min(1) }).optional(),
  storeUrl: z.string().min(1),
  /**
   * Public key (NKey `U…`, ed25519) of the network signing key the ledger signs chain heads with;
   * `verify`, `replay` and `dispute-bundle` check against it. The seed is never here: it is in
   * `signingKeyFile`, 0600, handed to the ledger only.
   */
  signingPublicKey: z.string().regex(/^U[A-Z2-7]{55}$/).optional(),
  signingKeyFile: z.string().min(1).optional(),
  processes: z.array(LocalProcess),
});
export type LocalState = z.output<typeof LocalState>;

/** Absolute path of the state file in `dataDir`. */
export function statePath(dataDir: string): string {
  return join(resolve(dataDir), STATE_FILE);
}

/** Parses state file text; the error names each bad field and what to do. Pure. */
export function parseState(text: string, path: string): LocalState {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new StateFileError(path, `${path} is not JSON: ${(err as Error).message}`, [{ path: '', message: 'not JSON', fix: `run \`gpunet down\` or delete ${path}, then \`gpunet up\`` }], { cause: err });
  }
  const parsed = LocalState.safeParse(json);
  if (!parsed.success) {
    const issues = formatIssues(parsed.error).map((i) => ({ ...i, fix: i.fix ?? `delete ${path} and run \`gpunet up\` again` }));
    throw new StateFileError(path, `${path} is not a gpunet state file: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  }
  return parsed.data;
}

/** The state in `dataDir`, or undefined when there is none (nothing was started there). */
export async function readState(dataDir: string): Promise<LocalState | undefined> {
  const path = statePath(dataDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new StateFileError(path, `cannot read ${path}: ${(err as Error).message}`, [], { cause: err });
  }
  return parseState(text, path);
}

/** Writes the state atomically (temp file + rename), readable by its owner only. */
export async function writeState(state: LocalState): Promise<string> {
  const path = statePath(state.dataDir);
  LocalState.parse(state); // never write a file the next command would refuse
  await mkdir(state.dataDir, { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, path);
  return path;
}

/** Removes the state file (after `down`). */
export async function removeState(dataDir: string): Promise<void> {
  await rm(statePath(dataDir), { force: true });
}
