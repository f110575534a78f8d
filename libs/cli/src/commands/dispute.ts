/**
 * `gpunet dispute-bundle <invoice-id>`: verifies the store first (as `gpunet verify`), then writes
 * one file with the invoice, every event it comes from (in whole streams, genesis to head, with
 * their hashes), the chain heads, the latest signed digest with a Merkle proof per stream and the
 * node report signatures, for `gpunet verify --bundle FILE --public-key KEY` on a machine with no
 * network and no store. Sign the heads first (`gpunet digests sign`) so the digest covers the
 * invoice's latest events. What the check proves is written into the
 * bundle (`proves`) and in services/ledger/src/replay/bundle.ts.
 */
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import type { ExitCode } from '../exit-codes.js';
import { runReplayTool, storeUrlOf, trustOf, type StoreFlags } from './replay.js';

export async function disputeBundle(ctx: CommandContext, invoiceId: string, flags: StoreFlags & { out?: string; invoice?: string }): Promise<ExitCode> {
  return runReplayTool(ctx, {
    command: 'dispute-bundle',
    storeUrl: await storeUrlOf(ctx, flags),
    invoiceId,
    ...(await trustOf(ctx, flags)),
    out: resolve(ctx.io.cwd, flags.out ?? `${invoiceId}.bundle.json`),
    ...(flags.invoice ? { invoiceFile: resolve(ctx.io.cwd, flags.invoice) } : {}),
  });
}
