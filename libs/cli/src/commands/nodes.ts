/**
 * `gpunet nodes enroll <nodeId> --public-key U…` and `gpunet nodes list`: the execution nodes
 * whose reports the recorder records, and their keys (decision 0015). Operator commands: they
 * talk to the recorder over NATS (`gpunet.cmd.EnrollNode`, `gpunet.qry.execution.ListNodes`),
 * authenticated with the operator's key file when `GPUNET_NATS_NKEY_FILE` is set.
 */
import { Commands, ListNodesReply, querySubject, type EnrollNodeReply } from '#contracts';
import { natsAuthOptions } from '#identity';
import { requestQuery } from '#messaging';
import { operatorKeyFileOf } from '../local/identities.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { userInfo } from 'node:os';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';

export interface NodesOptions {
  nats?: string;
}

async function operatorConnection(ctx: CommandContext, opts: NodesOptions): Promise<NatsConnection> {
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

export async function nodesList(ctx: CommandContext, opts: NodesOptions): Promise<ExitCode> {
  const nc = await operatorConnection(ctx, opts);
  try {
    const reply = await requestQuery<ListNodesReply>(nc, querySubject('execution', 'ListNodes'), {}, { response: ListNodesReply });
    ctx.out.doc(reply);
    ctx.out.line(reply.nodes.length === 0 ? 'no nodes enrolled' : table(['NODE', 'PUBLIC KEY', 'ENROLLED BY', 'AT'], reply.nodes.map((n) => [n.nodeId, n.publicKey, n.enrolledBy, n.enrolledAt])));
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
