/**
 * `gpunet replay invoice <id>` and `gpunet replay job <id>`: re-derive from the event store and
 * diff against what was recorded, line by line with the contributing event ids; exit 0 when
 * identical, 1 otherwise. They run the ledger's replay tool beside the store (it holds the one
 * derivation, and libs/ may not import a service; docs/decisions/0006), which only reads.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { repoRoot } from '../local/environment.js';

/** `--store`, which the commands that read the store directly take. */
export interface StoreFlags {
  store?: string;
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
    ...(flags.prices ? { pricesFile: resolve(ctx.io.cwd, flags.prices) } : {}),
    ...(flags.invoice ? { invoiceFile: resolve(ctx.io.cwd, flags.invoice) } : {}),
  });
}

export async function replayJob(ctx: CommandContext, jobId: string, flags: StoreFlags): Promise<ExitCode> {
  return runReplayTool(ctx, { command: 'replay-job', storeUrl: await storeUrlOf(ctx, flags), jobId });
}
