/**
 * `gpunet dispute-bundle <invoice-id>`: one file with the invoice, every event it comes from (in
 * whole streams, genesis to head, with their hashes) and the chain heads, for `gpunet verify
 * --bundle` on a machine with no network and no store. What the check proves is written into the
 * bundle (`proves`) and in services/ledger/src/replay/bundle.ts.
 */
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import type { ExitCode } from '../exit-codes.js';
import { runReplayTool, storeUrlOf, type StoreFlags } from './replay.js';

export async function disputeBundle(ctx: CommandContext, invoiceId: string, flags: StoreFlags & { out?: string; invoice?: string }): Promise<ExitCode> {
  return runReplayTool(ctx, {
    command: 'dispute-bundle',
    storeUrl: await storeUrlOf(ctx, flags),
    invoiceId,
    out: resolve(ctx.io.cwd, flags.out ?? `${invoiceId}.bundle.json`),
    ...(flags.invoice ? { invoiceFile: resolve(ctx.io.cwd, flags.invoice) } : {}),
  });
}
