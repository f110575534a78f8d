/**
 * `gpunet verify`: walk the event store's hash chain (every link, every stream head), then, with
 * the network public key (`--public-key`, else the local network's), every signed digest the
 * store records and every one in `--digests DIR` (exported earlier): a history rewritten with a
 * recomputed chain no longer reaches the signed heads, and the stream and first position no
 * digest vouches for are named. `gpunet verify --bundle FILE [--public-key KEY]`: check a dispute
 * bundle offline, with no network and no store (chains from genesis to the stated heads, the
 * heads against the signed digest, then the invoice re-derived from the bundled events).
 * Exit 0 when it holds, 1 when not.
 */
import { resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import type { ExitCode } from '../exit-codes.js';
import { publicKeyOf, runReplayTool, storeUrlOf, trustOf, type StoreFlags } from './replay.js';

export async function verify(ctx: CommandContext, flags: StoreFlags & { bundle?: string }): Promise<ExitCode> {
  if (flags.bundle) {
    if (flags.digests) throw new UsageError('--digests checks a store, not a bundle', [{ path: '--digests', message: 'not with --bundle', fix: 'drop --digests; a bundle carries its signed heads' }]);
    // A bundle is checked offline: the key comes from the flag or the environment, never from a
    // network the bundle may have been made on.
    const publicKey = flags.publicKey !== undefined || ctx.io.env.GPUNET_SIGNING_PUBLIC_KEY !== undefined ? await publicKeyOf(ctx, flags) : undefined;
    return runReplayTool(ctx, { command: 'verify-bundle', file: resolve(ctx.io.cwd, flags.bundle), ...(publicKey ? { publicKey } : {}) });
  }
  return runReplayTool(ctx, { command: 'verify', storeUrl: await storeUrlOf(ctx, flags), ...(await trustOf(ctx, flags)) });
}
