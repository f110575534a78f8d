/**
 * `gpunet digests sign`: ask the ledger (the one service holding the network signing key) to sign
 * the chain heads now, over NATS (`gpunet.cmd.SignChainHeads`); `gpunet digests export DIR`:
 * write every signed digest the store records as one JSON file each (`digest-000001.json`, …),
 * for keeping away from the store and checking it later with `gpunet verify --digests DIR`.
 * A file already in DIR is never overwritten: one that differs from the store's digest is evidence.
 */
import { Commands, replyEnvelope, SignChainHeadsReply } from '#contracts';
import { natsAuthOptions } from '#identity';
import { GpunetUnreachableError } from '#sdk';
import { operatorKeyFileOf } from '../local/identities.js';
import { connect } from '@nats-io/transport-node';
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { ENV } from '../settings.js';
import { publicKeyOf, runReplayTool, storeUrlOf, type StoreFlags } from './replay.js';

const Envelope = replyEnvelope(SignChainHeadsReply);

/** The NATS URL: `--nats`, else GPUNET_NATS_URL, else the local network's. */
async function natsUrlOf(ctx: CommandContext): Promise<string> {
  const url = ctx.options.nats ?? ctx.io.env[ENV.nats] ?? (await ctx.state())?.natsUrl;
  if (!url) throw new UsageError('no NATS server to ask: no --nats, no GPUNET_NATS_URL, no local network', [{ path: '--nats', message: 'the NATS URL is needed', fix: 'pass `--nats nats://host:4222` of the network whose ledger holds the signing key' }]);
  return url;
}

export async function digestsSign(ctx: CommandContext): Promise<ExitCode> {
  const url = await natsUrlOf(ctx);
  let nc;
  try {
    nc = await connect({ servers: url.split(','), name: 'gpunet-cli-digests', noAsyncTraces: true, reconnect: false, ...(await natsAuthOptions(operatorKeyFileOf(ctx.io.env, await ctx.state()))) });
  } catch (err) {
    throw new GpunetUnreachableError(url, `cannot reach NATS at ${url}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const msg = await nc.request(Commands.SignChainHeads.subject, '{}', { timeout: 30_000 }).catch((err: unknown) => {
      throw new GpunetUnreachableError(url, `no ledger answered ${Commands.SignChainHeads.subject} at ${url}: ${(err as Error).message}`, { cause: err });
    });
    const reply = Envelope.parse(JSON.parse(new TextDecoder().decode(msg.data)));
    if (!reply.ok) throw new Error(`the ledger did not sign: ${reply.error.message}`);
    const { signed, digest } = reply.data;
    ctx.out.doc(reply.data);
    if (!digest) ctx.out.line('the store is empty: nothing to sign');
    else {
      ctx.out.line(`${signed ? 'signed' : 'already signed (the store has not moved since)'}: digest #${digest.sequence} covering position ${digest.position}, ${digest.streams} stream(s), signed ${digest.signedAt}`);
      ctx.out.line(`  public key ${digest.publicKey}`);
      ctx.out.line('export them with `gpunet digests export DIR`');
    }
    return EXIT.ok;
  } finally {
    await nc.close().catch(() => undefined);
  }
}

export async function digestsExport(ctx: CommandContext, dir: string, flags: StoreFlags): Promise<ExitCode> {
  const publicKey = await publicKeyOf(ctx, flags);
  return runReplayTool(ctx, { command: 'export-digests', storeUrl: await storeUrlOf(ctx, flags), dir: resolve(ctx.io.cwd, dir), ...(publicKey ? { publicKey } : {}) });
}
