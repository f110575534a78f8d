/**
 * `gpunet nodes enroll <nodeId> --public-key U…` and `gpunet nodes list`: the execution nodes
 * whose reports the recorder records, and their keys (decision 0015), with placement's view of each
 * (state, GPUs, attempts, heartbeat). `gpunet nodes cordon|drain|uncordon`: placement's (decision 0031). `gpunet nodes token`,
 * `gpunet node join` and `gpunet nats authorization`: a machine joins with a one-time token
 * (decision 0022). Operator commands: they
 * talk to the recorder over NATS (`gpunet.cmd.EnrollNode`, `gpunet.qry.execution.ListNodes`),
 * authenticated with the operator's key file when `GPUNET_NATS_NKEY_FILE` is set.
 */
import { Commands, ListNodesReply, ListNodeStatesReply, parseDuration, Queries, SERVICE_NAMES, querySubject, type EnrollNodeReply, type IssueJoinTokenReply, type JoinNodeReply, type NodeAdminReply, type NodeStatus } from '#contracts';
import { createIdentityFile, identityName, inboxPrefix, loadIdentityFile, natsAuthOptions } from '#identity';
import { requestQuery } from '#messaging';
import { ensureKeyFiles, operatorKeyFileOf, routePassword, writeAuthorizationFile, writeClusterServerConfig, writeNatsConfig } from '../local/identities.js';
import { waitForNats } from '../local/health.js';
import { isAlive } from '../local/processes.js';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { LocalNetworkError, UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatDuration, table } from '../format.js';

export interface NodesOptions {
  nats?: string;
}

export async function operatorConnection(ctx: CommandContext, opts: NodesOptions): Promise<NatsConnection> {
  const url = opts.nats ?? ctx.io.env.GPUNET_NATS_URL ?? (await ctx.state())?.natsUrl;
  if (!url) throw new UsageError('no NATS server to reach the recorder', [{ path: '--nats', message: 'not given, no GPUNET_NATS_URL, no local network', fix: 'pass `--nats nats://host:4222`, or start one with `gpunet up`' }]);
  return connect({ ...(await natsAuthOptions(operatorKeyFileOf(ctx.io.env, await ctx.state()))), servers: url.split(','), name: 'gpunet-cli-nodes', noAsyncTraces: true, maxReconnectAttempts: 2 });
}

export async function nodesEnroll(ctx: CommandContext, nodeId: string, opts: NodesOptions & { publicKey: string; by?: string }): Promise<ExitCode> {
  const nc = await operatorConnection(ctx, opts);
  try {
    const reply = await requestQuery<EnrollNodeReply>(
      nc,
      Commands.EnrollNode.subject,
      { nodeId, publicKey: opts.publicKey, enrolledBy: opts.by ?? `operator ${userInfo().username}` },
      { request: Commands.EnrollNode.schema, response: Commands.EnrollNode.replySchema },
    );
    ctx.out.doc(reply);
    ctx.out.line(reply.changed ? `node ${reply.nodeId} enrolled with key ${reply.publicKey}` : `node ${reply.nodeId} was already enrolled with this key: nothing changed`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

const NODE_ORDER = new Intl.Collator('en', { numeric: true });

/** One row of `gpunet nodes list`: placement's view of a node, or an enrolled node placement has not heard of. */
export type NodeListEntry = NodeStatus & { enrolled: boolean; publicKey?: string; enrolledBy?: string; enrolledAt?: string };

/**
 * Every node: placement's (state, GPUs, attempts, heartbeat, cordon or drain) joined with the
 * recorder's enrollments; an enrolled node that never registered is `offline`. Sorted by node id,
 * numbers in ids by value (`gpu-2` before `gpu-10`), so the list reads the same whatever order
 * the nodes registered in. Pure.
 */
export function mergeNodeViews(placement: readonly NodeStatus[], enrolled: ListNodesReply['nodes']): NodeListEntry[] {
  const byId = new Map(enrolled.map((n) => [n.nodeId, n]));
  // What the enrollment records (key, by whom, when), beside placement's view of the node.
  const enrollment = (e: ListNodesReply['nodes'][number] | undefined) => (e ? { publicKey: e.publicKey, enrolledBy: e.enrolledBy, enrolledAt: e.enrolledAt } : {});
  const rows: NodeListEntry[] = placement.map((n) => ({ ...n, enrolled: byId.has(n.nodeId), ...enrollment(byId.get(n.nodeId)) }));
  const seen = new Set(placement.map((n) => n.nodeId));
  for (const e of enrolled) {
    if (!seen.has(e.nodeId)) rows.push({ nodeId: e.nodeId, state: 'offline', gpus: 0, gpusHeld: 0, gpuModels: [], runningAttempts: 0, enrolled: true, ...enrollment(e) });
  }
  return rows.sort((a, b) => NODE_ORDER.compare(a.nodeId, b.nodeId));
}

/** The table of `gpunet nodes list`. Pure. */
export function nodesTable(rows: readonly NodeListEntry[]): string {
  return table(
    ['NODE', 'STATE', 'HOST', 'GPUS HELD/TOTAL', 'MODELS', 'ATTEMPTS', 'HEARTBEAT', 'REASON'],
    rows.map((n) => [
      n.nodeId,
      n.state,
      n.hostname ?? '-',
      `${n.gpusHeld}/${n.gpus}`,
      n.gpuModels.join(',') || '-',
      String(n.runningAttempts),
      n.heartbeatAgeMs !== undefined ? `${formatDuration(Math.round(n.heartbeatAgeMs / 1000) * 1000)} ago` : '-',
      n.admin ? `${n.admin.reason} (${n.admin.by}, ${n.admin.at})` : n.state === 'lost' && n.lostAt ? `lost at ${n.lostAt}` : n.enrolled || n.state !== 'offline' ? '' : 'not enrolled',
    ]),
  );
}

/** The remote refusal of a node command as a usage error (exit 2), its issues kept: an unknown node id, a missing reason. */
function asUsage(err: unknown): never {
  const e = err as { code?: string; message?: string; issues?: readonly { path: string; message: string; fix?: string }[] };
  if (e?.code === 'validation_failed') throw new UsageError(e.message ?? 'refused', (e.issues ?? []).map((i) => ({ path: i.path === 'nodeId' ? '<nodeId>' : i.path === 'reason' ? '--reason' : i.path, message: i.message, ...(i.fix ? { fix: i.fix } : {}) })), { cause: err });
  throw err;
}

async function listNodeStates(nc: NatsConnection): Promise<ListNodeStatesReply> {
  return requestQuery<ListNodeStatesReply>(nc, Queries.ListNodeStates.subject, {}, { response: ListNodeStatesReply });
}

export async function nodesList(ctx: CommandContext, opts: NodesOptions): Promise<ExitCode> {
  const nc = await operatorConnection(ctx, opts);
  try {
    const [states, enrolled] = await Promise.all([
      listNodeStates(nc),
      requestQuery<ListNodesReply>(nc, querySubject('execution', 'ListNodes'), {}, { response: ListNodesReply }).catch((err: unknown) => {
        ctx.out.note(`the recorder did not list enrolled nodes (${(err as Error).message}): only nodes placement knows are shown`);
        return { nodes: [] } as ListNodesReply;
      }),
    ]);
    const rows = mergeNodeViews(states.nodes, enrolled.nodes);
    ctx.out.doc({ nodes: rows, at: states.at });
    ctx.out.line(rows.length === 0 ? 'no nodes: none has registered or been enrolled (`gpunet nodes token <nodeId>` lets a machine join)' : nodesTable(rows));
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

export interface NodeAdminOptions extends NodesOptions {
  reason?: string;
  by?: string;
  wait?: boolean;
  timeout?: string;
}

const NODE_ADMIN = {
  cordon: Commands.CordonNode,
  drain: Commands.DrainNode,
  uncordon: Commands.UncordonNode,
} as const;

/**
 * `gpunet nodes cordon|drain|uncordon <nodeId> --reason "…"` (operator, decision 0031): placement
 * records the change and answers with the node as it now stands. `drain --wait` then follows the
 * node until it is drained, printing each change of its running attempts.
 */
export async function nodesAdmin(ctx: CommandContext, action: keyof typeof NODE_ADMIN, nodeId: string, opts: NodeAdminOptions): Promise<ExitCode> {
  if (action !== 'uncordon' && (opts.reason === undefined || opts.reason.trim() === '')) {
    throw new UsageError(`--reason is required to ${action} a node`, [{ path: '--reason', message: 'missing', fix: `say why, for the record and for \`gpunet nodes list\`: \`gpunet nodes ${action} ${nodeId} --reason "replace GPU 3"\`` }]);
  }
  if (opts.wait && action !== 'drain') throw new UsageError('--wait is for `gpunet nodes drain`', [{ path: '--wait', message: `not used by ${action}`, fix: `leave --wait out, or run \`gpunet nodes drain ${nodeId} --wait\`` }]);
  const timeoutMs = opts.timeout !== undefined ? parseDuration(opts.timeout) : 24 * 3_600_000;
  if (timeoutMs === undefined || timeoutMs <= 0) throw new UsageError(`--timeout must be a duration such as 30m, got \`${opts.timeout}\``, [{ path: '--timeout', message: 'must be a duration', fix: 'write e.g. `--timeout 30m`' }]);
  const command = NODE_ADMIN[action];
  const nc = await operatorConnection(ctx, opts);
  try {
    const request = { nodeId, by: opts.by ?? `operator ${userInfo().username}`, ...(opts.reason !== undefined ? { reason: opts.reason } : {}) };
    const reply = await requestQuery<NodeAdminReply>(nc, command.subject, request, { request: command.schema, response: command.replySchema }).catch(asUsage);
    const n = reply.node;
    const running = `${n.runningAttempts} attempt(s) running, ${n.gpusHeld}/${n.gpus} GPUs held`;
    const line = reply.changed ? `node ${nodeId}${n.hostname ? ` (${n.hostname})` : ''} is ${n.state} (${reply.event}): ${running}` : `node ${nodeId} already is ${n.state}: nothing changed (${running})`;
    if (!(opts.wait && n.state === 'draining')) {
      ctx.out.doc(reply);
      ctx.out.line(line);
      return EXIT.ok;
    }
    ctx.out.note(line);
    const deadline = Date.now() + timeoutMs;
    let last = n;
    let shown = `${n.runningAttempts}/${n.gpusHeld}`;
    for (;;) {
      if (Date.now() > deadline) {
        ctx.out.doc({ ...reply, node: last, timedOut: true });
        ctx.out.line(`node ${nodeId} still ${last.state} after ${opts.timeout ?? '24h'}: ${last.runningAttempts} attempt(s) running`);
        return EXIT.failure;
      }
      await new Promise((r) => setTimeout(r, 500));
      const now = (await listNodeStates(nc)).nodes.find((x) => x.nodeId === nodeId);
      if (!now) throw new UsageError(`node ${nodeId} is no longer known to placement`, [{ path: '<nodeId>', message: 'gone from the node list', fix: 'see `gpunet nodes list`' }]);
      last = now;
      if (now.state !== 'draining') break;
      const progress = `${now.runningAttempts}/${now.gpusHeld}`;
      if (progress !== shown) {
        shown = progress;
        ctx.out.note(`node ${nodeId} draining: ${now.runningAttempts} attempt(s) still running, ${now.gpusHeld}/${now.gpus} GPUs held`);
      }
    }
    ctx.out.doc({ ...reply, node: last });
    ctx.out.line(last.state === 'drained' ? `node ${nodeId} drained at ${last.admin?.drainedAt ?? '?'}: nothing runs there, it may be taken down` : `node ${nodeId} is ${last.state} (no longer draining)`);
    return last.state === 'drained' || last.state === 'offline' ? EXIT.ok : EXIT.failure;
  } finally {
    await nc.close();
  }
}

/** A join token: `gpj1.<nodeId>.<secret>.<joiner seed>` (decision 0022). */
const TOKEN_PREFIX = 'gpj1';

/** The parts of a join token; a UsageError naming the flag when it is not one. Pure. */
export function parseJoinToken(token: string): { nodeId: string; secret: string; joinerSeed: string } {
  const parts = token.trim().split('.');
  const [prefix, nodeId, secret, joinerSeed] = parts;
  if (parts.length !== 4 || prefix !== TOKEN_PREFIX || !nodeId || !/^[A-Za-z0-9_-]{43}$/.test(secret ?? '') || !/^SU[A-Z2-7]{56}$/.test(joinerSeed ?? '')) {
    throw new UsageError('--token is not a gpunet join token', [{ path: '--token', message: `expected ${TOKEN_PREFIX}.<nodeId>.<secret>.<key>`, fix: 'copy the whole line `gpunet nodes token <nodeId>` printed on the control machine' }]);
  }
  return { nodeId, secret: secret!, joinerSeed: joinerSeed! };
}

/**
 * `gpunet nodes token <nodeId> [--ttl 1h]` (operator): makes a one-time secret here, has the
 * recorder record its sha256 with the node id and expiry (NodeJoinTokenIssued), prints the token
 * once. The token also carries the network's `joiner` seed, the identity a machine without one
 * connects as to spend it.
 */
export async function nodesToken(ctx: CommandContext, nodeId: string, opts: NodesOptions & { ttl: string; by?: string; joinerKey?: string }): Promise<ExitCode> {
  const ttlMs = parseDuration(opts.ttl);
  if (ttlMs === undefined || ttlMs <= 0) throw new UsageError(`--ttl must be a duration such as 1h, got \`${opts.ttl}\``, [{ path: '--ttl', message: 'must be a duration', fix: 'write e.g. `--ttl 1h`' }]);
  const state = await ctx.state();
  const joinerFile = opts.joinerKey ?? ctx.io.env.GPUNET_JOINER_NKEY_FILE ?? (state?.keysDir ? join(state.keysDir, `${identityName('joiner')}.nk`) : undefined);
  if (!joinerFile || !existsSync(joinerFile)) {
    throw new UsageError('no joiner key: the token carries it so that the machine may connect to spend it', [
      { path: '--joiner-key', message: joinerFile ? `${joinerFile} does not exist` : 'not given, no GPUNET_JOINER_NKEY_FILE, no local network', fix: 'pass `--joiner-key /etc/gpunet/keys/joiner.nk` (the keys directory the NATS authorization is rendered from)' },
    ]);
  }
  await loadIdentityFile(joinerFile); // 0600 and a user seed, or a clear error
  const joinerSeed = (await readFile(joinerFile, 'utf8')).trim();
  const secret = randomBytes(32).toString('base64url');
  const secretSha256 = createHash('sha256').update(secret).digest('hex');
  const expiresAt = new Date(Date.now() + ttlMs).toISOString();
  const nc = await operatorConnection(ctx, opts);
  try {
    const reply = await requestQuery<IssueJoinTokenReply>(
      nc,
      Commands.IssueJoinToken.subject,
      { nodeId, secretSha256, expiresAt, issuedBy: opts.by ?? `operator ${userInfo().username}` },
      { request: Commands.IssueJoinToken.schema, response: Commands.IssueJoinToken.replySchema },
    );
    const token = [TOKEN_PREFIX, nodeId, secret, joinerSeed].join('.');
    ctx.out.doc({ ...reply, token });
    ctx.out.line(token);
    ctx.out.note(`join token ${reply.tokenId} for node ${nodeId}, once, until ${reply.expiresAt}: on the GPU machine run \`gpunet node join --nats <url> --token <token>\` (it is shown only now)`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

/**
 * `gpunet node join --nats <url> --token <t>` (on the GPU machine): makes the node's key here
 * (`--key-file`, 0600; an existing one is reused, so a failed join can be retried), connects as
 * `joiner` with the seed the token carries, and asks the recorder to spend the token for this key.
 */
export async function nodeJoin(ctx: CommandContext, opts: { nats?: string; token: string; keyFile?: string; wait?: string }): Promise<ExitCode> {
  const token = parseJoinToken(opts.token);
  const url = opts.nats ?? ctx.io.env.GPUNET_NATS_URL;
  if (!url) throw new UsageError('no NATS server to join through', [{ path: '--nats', message: 'not given, no GPUNET_NATS_URL', fix: 'pass `--nats nats://ctl-1:4222,nats://ctl-2:4222,nats://ctl-3:4222`' }]);
  const keyFile = resolve(ctx.io.cwd, opts.keyFile ?? `${identityName('node', token.nodeId)}.nk`);
  const identity = existsSync(keyFile) ? await loadIdentityFile(keyFile) : await createIdentityFile(keyFile);
  const nc = await connect({ authenticator: nkeyAuthenticator(new TextEncoder().encode(token.joinerSeed)), inboxPrefix: inboxPrefix(identityName('joiner')), servers: url.split(','), name: 'gpunet-cli-join', noAsyncTraces: true, maxReconnectAttempts: 2 });
  let reply: JoinNodeReply;
  try {
    reply = await requestQuery<JoinNodeReply>(nc, Commands.JoinNode.subject, { nodeId: token.nodeId, secret: token.secret, publicKey: identity.publicKey }, { request: Commands.JoinNode.schema, response: Commands.JoinNode.replySchema });
  } finally {
    await nc.close();
  }
  if (reply.status !== 'joined') {
    throw new UsageError(`the control plane refused the join (${reply.reason})`, [{ path: '--token', message: reply.detail ?? reply.reason ?? 'refused', fix: 'ask the operator for a new token: `gpunet nodes token ' + token.nodeId + '`' }]);
  }
  ctx.out.doc({ ...reply, keyFile });
  ctx.out.line(`node ${token.nodeId} joined with key ${identity.publicKey} (seed in ${keyFile}, 0600; token ${reply.tokenId} is spent)`);
  const waitMs = opts.wait ? parseDuration(opts.wait) : 0;
  if (waitMs === undefined) throw new UsageError(`--wait must be a duration such as 2m, got \`${opts.wait}\``, [{ path: '--wait', message: 'must be a duration', fix: 'write e.g. `--wait 2m`' }]);
  if (waitMs > 0) {
    await waitForNats(url, { timeoutMs: waitMs, keyFile }).catch((err: unknown) => {
      throw new LocalNetworkError(`node ${token.nodeId} is enrolled but NATS does not admit its key after ${opts.wait}: the control plane renders its authorization again (\`gpunet nats authorization\`) and reloads nats-server`, [], { cause: err });
    });
    ctx.out.line(`NATS admits node ${token.nodeId}: start the agent with GPUNET_NODE_ID=${token.nodeId} GPUNET_NATS_NKEY_FILE=${keyFile}`);
  } else {
    ctx.out.line(`start the agent with GPUNET_NODE_ID=${token.nodeId} GPUNET_NATS_NKEY_FILE=${keyFile} once NATS admits the key (the control plane renders its authorization again: \`gpunet nats authorization\`)`);
  }
  return EXIT.ok;
}

/**
 * `gpunet nats authorization` (operator, on a control machine): the authorization every
 * nats-server of the network loads, rendered again from the keys directory and every enrolled
 * node's key (the recorder's ListNodes): a node that joined is admitted by it. `--out` writes
 * the block alone (what deploy/nats/cluster.conf includes); without it, the local network's
 * config (state.json). `--reload` then signals the local network's nats-servers (SIGHUP).
 */
export async function natsAuthorization(ctx: CommandContext, opts: NodesOptions & { keys?: string; out?: string; reload?: boolean; offline?: boolean }): Promise<ExitCode> {
  const state = await ctx.state();
  const keysDir = opts.keys ? resolve(ctx.io.cwd, opts.keys) : state?.keysDir;
  if (!keysDir) throw new UsageError('no keys directory', [{ path: '--keys', message: 'not given, no local network', fix: 'pass `--keys /etc/gpunet/keys`' }]);
  let nodes: ListNodesReply['nodes'] = [];
  // Offline: the keys directory alone (a network's first start, before nats-server and the recorder run).
  if (!opts.offline) {
    const nc = await operatorConnection(ctx, opts);
    try {
      nodes = (await requestQuery<ListNodesReply>(nc, querySubject('execution', 'ListNodes'), {}, { response: ListNodesReply })).nodes;
    } finally {
      await nc.close();
    }
  }
  const extra = nodes.map((n) => ({ kind: 'node' as const, id: n.nodeId, publicKey: n.publicKey }));
  let written: string;
  if (opts.out) {
    written = resolve(ctx.io.cwd, opts.out);
    await writeAuthorizationFile(written, { keysDir, extra });
  } else if (state?.natsConfig && state.natsManaged) {
    written = state.natsConfig;
    if (state.natsCluster) await writeAuthorizationFile(written, { keysDir, extra });
    else {
      const nats = state.processes.find((p) => p.role === 'nats');
      await writeNatsConfig(written, { keysDir, listen: `127.0.0.1:${nats?.port ?? 4222}`, storeDir: join(state.dataDir, 'nats'), extra });
    }
  } else {
    throw new UsageError('nowhere to write the authorization', [{ path: '--out', message: 'not given, no local network that started its own nats-server', fix: 'pass `--out /etc/gpunet/nats/authorization.conf`' }]);
  }
  const reloaded: string[] = [];
  if (opts.reload) {
    if (!state?.natsManaged) throw new UsageError('--reload signals the local network\'s nats-servers; there are none here', [{ path: '--reload', message: 'no local nats-server', fix: 'reload nats-server yourself: `systemctl reload gpunet-nats` (or `nats-server --signal reload`)' }]);
    for (const p of state.processes.filter((q) => q.role === 'nats' && isAlive(q.pid))) {
      process.kill(p.pid, 'SIGHUP');
      reloaded.push(p.name);
    }
  }
  ctx.out.doc({ written, nodes: nodes.map((n) => n.nodeId), reloaded });
  ctx.out.line(`authorization written to ${written}: ${nodes.length} enrolled node(s) admitted${reloaded.length > 0 ? `; reloaded ${reloaded.join(', ')}` : '; reload nats-server to apply it (`systemctl reload gpunet-nats`)'}`);
  return EXIT.ok;
}

/**
 * `gpunet nats keys --keys <dir> [--team T…]` (operator, once per network): the seed file of every
 * control-plane identity (the services, the recorder, the operator, the joiner) and of each team,
 * made where missing (0600 in a 0700 directory), kept where present. Nodes make their own
 * (`gpunet node join`).
 */
export async function natsKeys(ctx: CommandContext, opts: { keys: string; team?: string[]; signingKey?: string }): Promise<ExitCode> {
  const dir = resolve(ctx.io.cwd, opts.keys);
  const names = [
    ...SERVICE_NAMES.filter((s) => s !== 'execution').map((s) => identityName('service', s)),
    identityName('service', 'recorder'),
    identityName('operator'),
    identityName('joiner'),
    ...(opts.team ?? []).map((t) => identityName('team', t)),
  ];
  const files = await ensureKeyFiles(dir, names);
  const keys: Record<string, string> = {};
  for (const [name, file] of Object.entries(files)) keys[name] = (await loadIdentityFile(file)).publicKey;
  // The network signing key (decision 0011) is no bus identity: kept apart from the keys directory.
  if (opts.signingKey) {
    const file = resolve(ctx.io.cwd, opts.signingKey);
    keys.signing = (existsSync(file) ? await loadIdentityFile(file) : await createIdentityFile(file)).publicKey;
  }
  ctx.out.doc({ keysDir: dir, keys });
  ctx.out.line(table(['IDENTITY', 'PUBLIC KEY'], Object.entries(keys)));
  ctx.out.line(`seeds in ${dir}/ (0600): copy each service's to the machine that runs it, keep operator.nk and joiner.nk with the operator`);
  return EXIT.ok;
}

/**
 * `gpunet nats config --name ctl-1 --host 10.0.0.11 --peers 10.0.0.11,10.0.0.12,10.0.0.13 --out …`:
 * one server's config from deploy/nats/cluster.conf (clients on 4222, routes on 6222, monitoring on
 * 127.0.0.1:8222), including `authorization.conf` beside it, with the route password of
 * `<out dir>/route.secret` (made when missing: copy it to the other two machines before theirs).
 */
export async function natsConfig(ctx: CommandContext, opts: { name: string; host: string; peers: string; out: string; storeDir: string }): Promise<ExitCode> {
  const peers = opts.peers.split(',').map((p) => p.trim()).filter(Boolean);
  if (peers.length < 3 || !peers.includes(opts.host)) {
    throw new UsageError('--peers must list the three (or more) control machines, this one (--host) included', [{ path: '--peers', message: `got ${peers.join(',') || 'nothing'}`, fix: 'write e.g. `--peers 10.0.0.11,10.0.0.12,10.0.0.13`' }]);
  }
  const out = resolve(ctx.io.cwd, opts.out);
  const dir = dirname(out);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeClusterServerConfig(out, {
    serverName: opts.name,
    clientListen: `${opts.host}:4222`,
    routeListen: `${opts.host}:6222`,
    routes: peers.map((p) => `${p}:6222`),
    routePassword: await routePassword(dir),
    storeDir: opts.storeDir,
    monitorListen: '127.0.0.1:8222',
    authorizationFile: 'authorization.conf',
  });
  ctx.out.doc({ config: out, routeSecret: join(dir, 'route.secret') });
  ctx.out.line(`${out} written (server ${opts.name}); it includes ${join(dir, 'authorization.conf')} (\`gpunet nats authorization --out\`); the route password is ${join(dir, 'route.secret')}: the same file on every control machine`);
  return EXIT.ok;
}
