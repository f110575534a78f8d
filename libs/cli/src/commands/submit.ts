/**
 * `gpunet submit job.yaml` (or flags only: `--script FILE --gpus N --input name=path …`):
 * checks the spec, uploads its local inputs with a progress bar (skipping blobs already
 * stored), submits, prints the job id; `--wait` then follows it like `gpunet wait`.
 */
import type { InputProgress, InputUpload, JobFileSpec } from '#sdk';
import { parseJobFileText } from '#sdk';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, exitCodeForState, type ExitCode } from '../exit-codes.js';
import { formatBytes } from '../format.js';
import { byteBar } from '../progress.js';
import { stateText } from '../render.js';
import { applyOverrides, specFromFlags, type SubmitFlags } from '../spec-from-flags.js';
import { followJob, waitTimeoutMs } from './wait.js';
import { renderBudgetFigures } from './budget.js';

export interface SubmitOptions extends SubmitFlags {
  idempotencyKey?: string;
  /** `warn`: accept a deadline the current plan cannot meet, with a warning (default `reject`). */
  deadlinePolicy?: 'reject' | 'warn';
  /** The estimate to hold the job to (`gpunet estimate` printed its id). */
  estimate?: string;
  /** How local inputs travel (default `auto`: NATS when the NATS URL and team are known, else HTTP). */
  upload?: 'auto' | 'http' | 'nats';
  wait?: boolean;
  timeout?: string;
}

async function readText(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, [{ path: flag, message: `cannot read ${path}`, fix: 'check the path' }], { cause: err });
  }
}

/** The spec to submit and the directory its `from:` paths are relative to. */
async function specOf(ctx: CommandContext, operands: readonly string[], opts: SubmitOptions): Promise<{ spec: JobFileSpec; baseDir: string }> {
  if (opts.script) {
    const path = resolve(ctx.io.cwd, opts.script);
    const spec = specFromFlags(opts, { path, text: await readText(path, '--script') });
    // With --script, every operand is an argument of the script (`-- --epochs 3`).
    if (operands.length > 0) (spec.work as { args?: string[] }).args = [...operands];
    return { spec, baseDir: ctx.io.cwd };
  }
  if (operands.length !== 1) {
    throw new UsageError(operands.length === 0 ? 'nothing to submit' : `one job file at a time, got ${operands.length} operands`, [
      { path: 'job.yaml', message: 'expected exactly one job file, or --script', fix: 'write `gpunet submit job.yaml` or `gpunet submit --script train.sh --gpus 1`' },
    ]);
  }
  const file = resolve(ctx.io.cwd, operands[0]!);
  const spec = applyOverrides(parseJobFileText(await readText(file, 'job.yaml'), operands[0]), opts);
  return { spec, baseDir: dirname(file) };
}

export async function submit(ctx: CommandContext, operands: string[], opts: SubmitOptions): Promise<ExitCode> {
  const { out } = ctx;
  const timeoutMs = waitTimeoutMs(opts.timeout);
  const { spec, baseDir } = await specOf(ctx, operands, opts);
  const client = await ctx.client();

  const bar = byteBar(out, '');
  let phase = '';
  const started = new Map<string, number>();
  const { spec: ready, inputs } = await client.uploadInputs(spec, baseDir, {
    ...(opts.upload ? { via: opts.upload } : {}),
    onProgress: (p: InputProgress) => {
      const label = `${p.input} ${p.phase}`;
      if (label !== phase) {
        phase = label;
        started.set(label, Date.now());
      }
      bar.update(p.bytesDone, p.bytesTotal, label);
    },
    onInput: (u: InputUpload) => {
      bar.stop();
      out.note(uploadSummary(u, started.get(`${u.name} uploading`)));
    },
  });
  bar.stop();

  const reply = await client.submit(ready, {
    ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
    ...(opts.deadlinePolicy ? { deadlinePolicy: opts.deadlinePolicy } : {}),
    ...(opts.estimate ? { estimateId: opts.estimate } : {}),
  });
  for (const w of reply.warnings ?? []) out.note(`warning: ${w.path} ${w.message}`);
  const summary = { ...reply, inputs: inputs.map(({ source: _source, ...u }) => u) };
  out.line(`${reply.duplicate ? 'already submitted (same idempotency key)' : 'submitted'}: ${reply.jobId}${opts.estimate && !reply.duplicate ? `, held to estimate ${opts.estimate}` : ''}`);
  if (reply.budget) out.line(renderBudgetFigures(reply.budget));
  if (!opts.wait) {
    out.doc(summary);
    out.line(`follow it with \`gpunet wait ${reply.jobId}\` or \`gpunet logs ${reply.jobId} -f\``);
    return EXIT.ok;
  }
  const view = await followJob(ctx, client, reply.jobId, timeoutMs);
  out.doc({ ...summary, job: view });
  out.line(`${reply.jobId}: ${stateText(view)}`);
  return exitCodeForState(view.state);
}

function uploadSummary(u: InputUpload, uploadStartedAt: number | undefined): string {
  const what = u.kind === 'folder' ? `folder, ${u.files} file(s), ${formatBytes(u.totalBytes)}` : formatBytes(u.totalBytes);
  if (u.skipped) return `  ${u.name}: ${what}, already stored (${u.sha256.slice(0, 12)}…)`;
  const seconds = uploadStartedAt ? Math.max(0.001, (Date.now() - uploadStartedAt) / 1000) : undefined;
  const rate = seconds ? ` at ${formatBytes(Math.round(u.bytesUploaded / seconds))}/s` : '';
  const resumed = u.resumedFromBytes > 0 ? `, resumed: ${formatBytes(u.resumedFromBytes)} were already stored` : '';
  return `  ${u.name}: ${what}, uploaded ${formatBytes(u.bytesUploaded)}${rate}${resumed} (${u.sha256.slice(0, 12)}…)`;
}
