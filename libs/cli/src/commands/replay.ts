/**
 * `gpunet replay invoice <id>` and `gpunet replay job <id>`: verify the store first (hash chain,
 * and the signed heads with the network public key and `--digests DIR`), naming the first bad
 * position; then re-derive from it and diff against what was recorded, line by line with the
 * contributing event ids; exit 0 when identical, 1 otherwise. They run the ledger's replay tool beside the store (it holds the one
 * derivation, and libs/ may not import a service; docs/decisions/0006), which only reads.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { repoRoot } from '../local/environment.js';

/** `--store`, which the commands that read the store directly take, and what they check it against. */
export interface StoreFlags {
  store?: string;
  /** The network public key (`U…`) or a file holding it. */
  publicKey?: string;
  /** A directory of digests exported earlier (`gpunet digests export`). */
  digests?: string;
}

const NKEY_PUBLIC = /^U[A-Z2-7]{55}$/;

/**
 * The network public key to check signed heads with: `--public-key` (the key itself or a file
 * holding it), else `GPUNET_SIGNING_PUBLIC_KEY`, else the local network's (state.json); undefined
 * when none is known.
 */
export async function publicKeyOf(ctx: CommandContext, flags: { publicKey?: string }): Promise<string | undefined> {
  const given = flags.publicKey ?? ctx.io.env.GPUNET_SIGNING_PUBLIC_KEY;
  if (given === undefined) return (await ctx.state().catch(() => undefined))?.signingPublicKey;
  if (NKEY_PUBLIC.test(given.trim())) return given.trim();
  let text: string;
  try {
    text = (await readFile(resolve(ctx.io.cwd, given), 'utf8')).trim();
  } catch (err) {
    throw new UsageError(`--public-key ${given} is neither a public key nor a readable file`, [{ path: '--public-key', message: (err as Error).message, fix: 'give the network public key (`U…`, 56 characters) or a file holding it' }]);
  }
  if (!NKEY_PUBLIC.test(text)) {
    throw new UsageError(`${given} does not hold a public key`, [{ path: '--public-key', message: 'expected one NKey public key (`U…`, 56 characters)', fix: 'write the key `gpunet up` printed (state.json signingPublicKey) into the file, nothing else; never a seed (`SU…`)' }]);
  }
  return text;
}

/** The trust fields of a replay-tool request: the public key and the exported digests. */
export async function trustOf(ctx: CommandContext, flags: StoreFlags): Promise<{ publicKey?: string; digestsDir?: string }> {
  const publicKey = await publicKeyOf(ctx, flags);
  return { ...(publicKey ? { publicKey } : {}), ...(flags.digests ? { digestsDir: resolve(ctx.io.cwd, flags.digests) } : {}) };
}

/** The built replay tool. */
export function replayToolEntry(root: string): string {
  return join(root, 'dist', 'services', 'ledger', 'src', 'replay', 'main.js');
}

const Reply = z.union([
  z.object({ exitCode: z.number().int(), result: z.unknown(), text: z.array(z.string()) }),
  z.object({ error: z.object({ code: z.string(), message: z.string(), issues: z.array(z.object({ path: z.string(), message: z.string(), fix: z.string().optional() })) }) }),
]);

/** The store to read: `--store`, else `GPUNET_STORE_URL`, else the local network's (state.json). */
export async function storeUrlOf(ctx: CommandContext, flags: StoreFlags): Promise<string> {
  const url = flags.store ?? ctx.io.env.GPUNET_STORE_URL ?? (await ctx.state())?.storeUrl;
  if (!url) {
    throw new UsageError('no event store to read: no --store, no GPUNET_STORE_URL, no local network', [
      { path: '--store', message: 'the store URL is needed', fix: 'pass `--store sqlite:PATH` or `--store postgres://…` (a replica or backup will do)' },
    ]);
  }
  return url;
}

/**
 * Runs the ledger's replay tool with one JSON request; prints its text (or its result with
 * `--json`) and returns its exit code. A request it refuses becomes a UsageError (exit 2).
 */
export async function runReplayTool(ctx: CommandContext, request: Record<string, unknown>): Promise<ExitCode> {
  const entry = replayToolEntry(repoRoot());
  if (!existsSync(entry)) throw new UsageError(`the replay tool is not built: ${entry} is missing`, [{ path: 'dist/', message: 'no build of the ledger', fix: 'run `npm run build`' }]);
  const { stdout, code } = await new Promise<{ stdout: string; code: number }>((resolvePromise, reject) => {
    const child = spawn(process.execPath, [entry, JSON.stringify(request)], { cwd: ctx.io.cwd, env: { ...process.env, ...ctx.io.env }, stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (c) => resolvePromise({ stdout: Buffer.concat(chunks).toString('utf8'), code: c ?? 1 }));
  });
  let reply: z.infer<typeof Reply>;
  try {
    reply = Reply.parse(JSON.parse(stdout));
  } catch (err) {
    throw new Error(`the replay tool (exit ${code}) did not answer with its JSON document: ${stdout.slice(0, 500)}`, { cause: err });
  }
  if ('error' in reply) {
    if (code === EXIT.usage) throw new UsageError(reply.error.message, reply.error.issues);
    throw new Error(reply.error.message);
  }
  ctx.out.doc(reply.result);
  for (const line of reply.text) ctx.out.line(line);
  return reply.exitCode === 0 ? EXIT.ok : EXIT.failure;
}

export async function replayInvoice(ctx: CommandContext, invoiceId: string, flags: StoreFlags & { prices?: string; invoice?: string }): Promise<ExitCode> {
  return runReplayTool(ctx, {
    command: 'replay-invoice',
    storeUrl: await storeUrlOf(ctx, flags),
    invoiceId,
    ...(await trustOf(ctx, flags)),
    ...(flags.prices ? { pricesFile: resolve(ctx.io.cwd, flags.prices) } : {}),
    ...(flags.invoice ? { invoiceFile: resolve(ctx.io.cwd, flags.invoice) } : {}),
  });
}

export async function replayJob(ctx: CommandContext, jobId: string, flags: StoreFlags): Promise<ExitCode> {
  return runReplayTool(ctx, { command: 'replay-job', storeUrl: await storeUrlOf(ctx, flags), jobId, ...(await trustOf(ctx, flags)) });
}
