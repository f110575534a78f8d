/**
 * `gpunet verify`: walk the event store's hash chain (every link, every stream head) and name the
 * first bad position; `gpunet verify --bundle FILE`: check a dispute bundle offline, with no
 * network and no store (chains from genesis to the stated heads, then the invoice re-derived from
 * the bundled events). Exit 0 when it holds, 1 when not.
 */
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import type { ExitCode } from '../exit-codes.js';
import { runReplayTool, storeUrlOf, type StoreFlags } from './replay.js';

export async function verify(ctx: CommandContext, flags: StoreFlags & { bundle?: string }): Promise<ExitCode> {
  if (flags.bundle) return runReplayTool(ctx, { command: 'verify-bundle', file: resolve(ctx.io.cwd, flags.bundle) });
  return runReplayTool(ctx, { command: 'verify', storeUrl: await storeUrlOf(ctx, flags) });
}
