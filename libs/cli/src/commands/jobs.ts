/** The read and control commands of one network: status, list, logs, cancel, output, invoice. */
import { JOB_STATES, type GetQueueReply, type JobState, type LogLine } from '#contracts';
import { join, resolve } from 'node:path';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { displayPath, formatBytes, formatMicros, formatMs, formatWait, sumMicros } from '../format.js';
import { byteBar } from '../progress.js';
import { renderInvoice, renderJob, renderJobList, renderTimeline, stateText } from '../render.js';

export async function status(ctx: CommandContext, jobId: string, opts: { timeline?: boolean }): Promise<ExitCode> {
  const client = await ctx.client();
  const view = await client.getJob(jobId);
  const events = opts.timeline ? (await client.events(jobId)).events : undefined;
  // A waiting job: where the live plan has it. Placement not answering only leaves the line out.
  const queue = WAITING.has(view.state) ? await client.queue(jobId).then((q) => q.pending[0], () => undefined) : undefined;
  ctx.out.doc({ ...view, ...(queue ? { queue } : {}), ...(events ? { events } : {}) });
  ctx.out.line(renderJob(view));
  if (queue) ctx.out.line(renderQueueEntry(queue, Date.now()));
  if (events) {
    ctx.out.line();
    ctx.out.line(renderTimeline(events));
  }
  return EXIT.ok;
}

/** States in which a job waits in placement's queue. */
const WAITING: ReadonlySet<string> = new Set(['submitted', 'staged']);

/** A waiting job's place in the live plan, for people: `  queue      #3 in line, Resources; expected start in 12m (…)`. */
export function renderQueueEntry(entry: GetQueueReply['pending'][number], now: number): string {
  const start = entry.expectedStart === undefined ? 'expected start unknown' : `expected start ${Date.parse(entry.expectedStart) <= now ? 'now' : `in ${formatWait(Date.parse(entry.expectedStart) - now)}`} (${entry.expectedStart})`;
  return `  queue      #${entry.position} in line, ${entry.reason}${entry.reasonDetail !== undefined ? ` (${entry.reasonDetail})` : ''}; ${start}`;
}

/** `--state running,placed` or repeated `--state`: each checked against the job states. */
export function parseStates(values: readonly string[] | undefined): JobState[] | undefined {
  const states = (values ?? []).flatMap((v) => v.split(',')).map((s) => s.trim()).filter(Boolean);
  const bad = states.filter((s) => !(JOB_STATES as readonly string[]).includes(s));
  if (bad.length > 0) {
    throw new UsageError(`unknown state ${bad.map((s) => `\`${s}\``).join(', ')}`, [{ path: '--state', message: `must be one of ${JOB_STATES.join(', ')}`, fix: 'write e.g. `--state running`' }]);
  }
  return states.length > 0 ? (states as JobState[]) : undefined;
}

export async function list(ctx: CommandContext, opts: { state?: string[]; limit?: string; all?: boolean }): Promise<ExitCode> {
  const states = parseStates(opts.state);
  const limit = opts.limit === undefined ? 50 : Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw new UsageError(`--limit must be 1–500, got \`${opts.limit}\``, [{ path: '--limit', message: 'must be a whole number from 1 to 500', fix: 'write e.g. `--limit 20`' }]);
  const client = await ctx.client();
  const jobs = [];
  let cursor: string | undefined;
  do {
    const page = await client.listJobs({ ...(states ? { state: states } : {}), limit, ...(cursor ? { cursor } : {}) });
    jobs.push(...page.jobs);
    cursor = page.nextCursor ?? undefined;
  } while (opts.all && cursor);
  ctx.out.doc({ jobs, ...(opts.all ? {} : { nextCursor: cursor ?? null }) });
  ctx.out.line(renderJobList(jobs));
  if (cursor && !opts.all) ctx.out.line(`(more: \`gpunet list --all\`)`);
  return EXIT.ok;
}

export async function logs(ctx: CommandContext, jobId: string, opts: { follow?: boolean }): Promise<ExitCode> {
  const client = await ctx.client();
  const collected: LogLine[] = [];
  const abort = new AbortController();
  const onSigint = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSigint);
  try {
    for await (const line of client.logs(jobId, { follow: opts.follow === true, signal: abort.signal })) {
      if (ctx.out.json) collected.push(line);
      else if (line.stream === 'stdout') ctx.io.stdout.write(`${line.line}\n`);
      // Agent notices say who speaks; the agent writes most with the prefix already.
      else ctx.io.stderr.write(`${line.stream === 'agent' && !line.line.startsWith('[gpunet]') ? '[gpunet] ' : ''}${line.line}\n`);
    }
  } catch (err) {
    if (!abort.signal.aborted) throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
  }
  ctx.out.doc({ jobId, lines: collected });
  return EXIT.ok;
}

export async function cancel(ctx: CommandContext, jobId: string, opts: { reason?: string }): Promise<ExitCode> {
  const client = await ctx.client();
  const reply = await client.cancel(jobId, opts.reason ? { reason: opts.reason } : {});
  ctx.out.doc(reply);
  ctx.out.line(reply.cancelRequested ? `${jobId}: cancel requested (state ${reply.state})` : `${jobId}: already ended (${reply.state}); nothing changed`);
  return EXIT.ok;
}

export async function output(ctx: CommandContext, jobId: string, opts: { dest?: string }): Promise<ExitCode> {
  const client = await ctx.client();
  const listing = await client.outputs(jobId);
  if (!listing.stored) {
    const view = await client.getJob(jobId);
    throw new UsageError(`job ${jobId} has no stored outputs yet (state ${stateText(view)})`, [
      { path: 'jobId', message: 'outputs are stored when the job ends', fix: `wait for it: \`gpunet wait ${jobId}\`` },
    ]);
  }
  const dest = resolve(ctx.io.cwd, opts.dest ?? join('outputs', jobId));
  const bar = byteBar(ctx.out, 'downloading');
  let before = 0;
  const downloaded = [];
  for (const file of listing.files) {
    const d = await client.downloadOutput(jobId, file.path, join(dest, ...file.path.split('/')), {
      expected: file,
      onProgress: (p) => bar.update(before + p.bytesDone, listing.totalBytes, file.path),
    });
    before += file.size;
    downloaded.push(d);
  }
  bar.stop();
  ctx.out.doc({ jobId, dest, truncated: listing.truncated, files: downloaded, rejected: listing.rejected });
  for (const d of downloaded) ctx.out.line(`  ${d.path}  ${formatBytes(d.size)}  sha256 ${d.sha256.slice(0, 16)}… verified`);
  // Files the job wrote that were not kept are named with their reason, never left out silently.
  for (const r of listing.rejected) ctx.out.line(`  refused  ${r.path}  ${r.reason}: ${r.message}`);
  ctx.out.line(`${downloaded.length} file(s), ${formatBytes(listing.totalBytes)} in ${displayPath(ctx.io.cwd, dest)}${listing.truncated ? ' (the job\'s outputs were truncated at maxBytes)' : ''}`);
  return EXIT.ok;
}

export async function invoice(ctx: CommandContext, opts: { job?: string; from?: string; to?: string }): Promise<ExitCode> {
  const client = await ctx.client();
  const charges = await client.charges({ ...(opts.job ? { jobId: opts.job } : {}), ...(opts.from ? { from: opts.from } : {}), ...(opts.to ? { to: opts.to } : {}) });
  // The ledger's reply as it is, plus each total as units with 6 decimals (exact: bigint arithmetic).
  const formatted = [...new Set(charges.lines.map((l) => l.currency))].map((currency) => ({
    currency,
    amount: formatMicros(sumMicros(charges.lines.filter((l) => l.currency === currency).map((l) => l.amountMicros))),
  }));
  ctx.out.doc({ ...charges, formatted: { totals: formatted, billableTime: formatMs(charges.billableMs) } });
  ctx.out.line(renderInvoice(charges));
  return EXIT.ok;
}
