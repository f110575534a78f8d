/**
 * `gpunet audit jobs` and `gpunet audit job <id>`: what ran, how long, on what, what came back and
 * what it cost, from the ledger's audit projection over every service's events (through intake,
 * `GET /v1/audit/...`). Every query is recorded by the ledger (who asked what, when).
 */
import type { AuditDurations, AuditJobSummary } from '#contracts';
import type { AuditJobAnswer } from '#sdk';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatBytes, formatMicros, formatMs, table } from '../format.js';

export const AUDIT_FORMATS = ['table', 'json', 'csv'] as const;
export type AuditFormat = (typeof AUDIT_FORMATS)[number];

export interface AuditJobsFlags {
  team?: string;
  from?: string;
  to?: string;
  node?: string;
  gpuModel?: string;
  outcome?: string;
  limit?: string;
  format?: AuditFormat;
}

const PHASES: readonly [keyof AuditDurations, string][] = [
  ['stagingMs', 'staging'],
  ['queuedMs', 'queued'],
  ['heldMs', 'held'],
  ['runningMs', 'running'],
  ['outputMs', 'output'],
  ['releaseMs', 'release'],
];

function formatOf(ctx: CommandContext, format: AuditFormat | undefined): AuditFormat {
  return ctx.out.json ? 'json' : (format ?? 'table');
}

/** A CSV field: quoted when it holds a comma, quote or line break (RFC 4180). Pure. */
export function csvField(value: string | number | undefined): string {
  const s = value === undefined ? '' : String(value);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_HEADER = [
  'jobId',
  'team',
  'name',
  'submittedAt',
  'outcome',
  'attempts',
  'nodes',
  'gpuModels',
  'gpus',
  ...PHASES.map(([k]) => k),
  'outputFiles',
  'outputBytes',
  'billableMs',
  'currency',
  'amountMicros',
];

/** The list as CSV, one job per line, durations in integer ms, amounts in integer micro-units. Pure. */
export function auditCsv(jobs: readonly AuditJobSummary[]): string {
  const rows = jobs.map((j) => [
    j.jobId,
    j.team,
    j.name,
    j.submittedAt,
    j.outcome,
    j.attempts,
    j.nodes.join(' '),
    j.gpuModels.join(' '),
    j.gpus,
    ...PHASES.map(([k]) => j.durations[k]),
    j.outputs.files,
    j.outputs.totalBytes,
    j.billableMs,
    j.totals.map((t) => t.currency).join(' '),
    j.totals.map((t) => t.amountMicros).join(' '),
  ]);
  return [CSV_HEADER, ...rows].map((r) => r.map(csvField).join(',')).join('\n') + '\n';
}

const dur = (ms: number | undefined) => (ms === undefined ? '-' : formatMs(ms));
const money = (totals: AuditJobSummary['totals']) => (totals.length === 0 ? '0' : totals.map((t) => `${formatMicros(t.amountMicros)} ${t.currency}`).join(' + '));

/** Pages fetched by `audit jobs`: every job wanted, the total matching, and the ids of the AuditQueried events recording each page's query. */
export interface AuditJobsListing {
  jobs: AuditJobSummary[];
  total: number;
  asOfPosition: string;
  recordedAs: string[];
}

/** Jobs per query: one page stays well under NATS's default 1 MB payload. */
const PAGE = 500;

/** The list for people. Pure. */
export function renderAuditJobs(reply: Pick<AuditJobsListing, 'jobs' | 'total' | 'asOfPosition'>): string {
  if (reply.jobs.length === 0) return `no jobs match (store position ${reply.asOfPosition})`;
  const rows = reply.jobs.map((j) => [
    j.jobId,
    j.team,
    j.submittedAt.slice(0, 19).replace('T', ' '),
    j.outcome,
    j.nodes.join(',') || '-',
    j.gpuModels.join(',') || '-',
    dur(j.durations.queuedMs),
    dur(j.durations.heldMs),
    dur(j.durations.runningMs),
    String(j.outputs.files),
    money(j.totals),
  ]);
  const more = reply.total > reply.jobs.length ? `\n(${reply.total - reply.jobs.length} more: raise --limit)` : '';
  return `${table(['JOB', 'TEAM', 'SUBMITTED (UTC)', 'OUTCOME', 'NODES', 'GPU MODEL', 'QUEUED', 'HELD', 'RUNNING', 'FILES', 'CHARGE'], rows, ['l', 'l', 'l', 'l', 'l', 'l', 'r', 'r', 'r', 'r', 'r'])}${more}\n(as of store position ${reply.asOfPosition})`;
}

/** One job's audit for people: the five answers, then the timeline. Pure. */
export function renderAuditJob(a: AuditJobAnswer): string {
  const out: string[] = [];
  out.push(`job       ${a.jobId}${a.name ? ` (${a.name})` : ''}  team ${a.team}  submitted ${a.submittedAt}${a.submittedBy ? ` by key ${a.submittedBy}` : ''}`);
  out.push(`outcome   ${a.outcome}`);
  out.push('');
  out.push('what ran');
  const work = a.work.spec.work as { kind: string; image?: string; command?: string[]; interpreter?: string };
  out.push(`  work      ${work.kind}${work.image ? ` ${work.image}` : ''}${work.interpreter ? ` (${work.interpreter})` : ''}`);
  out.push(`  spec      sha256 ${a.work.specSha256}`);
  for (const i of a.work.inputs) out.push(`  input     ${i.name}  ${formatBytes(i.size)}  sha256 ${i.sha256}`);
  out.push(a.work.workDigest ? `  ran       ${a.work.workKind ?? 'work'} ${a.work.workDigest}${a.work.runtime ? ` (${a.work.runtime})` : ''}, recorded by the agent` : `  ran       no digest recorded by the agent (derived from the spec and inputs)`);
  if (a.work.note) out.push(`  note      ${a.work.note}`);
  out.push('');
  out.push('how long');
  out.push(`  ${PHASES.map(([k, label]) => `${label} ${dur(a.durations[k])}`).join('  ')}`);
  out.push('');
  out.push('on what');
  if (a.attempts.length === 0) out.push('  never placed');
  for (const t of a.attempts) {
    const nodes = t.nodes.map((n) => `${n.nodeId} GPUs [${n.gpuIndices.join(',')}]`).join(' + ');
    out.push(`  attempt ${t.attempt} ${t.attemptId}: ${nodes}, ${t.gpuModel} × ${t.gpus}, ${t.outcome ?? 'not finished'}${t.exitCode !== undefined ? ` (exit ${t.exitCode ?? 'signal'})` : ''}`);
    out.push(`    ${PHASES.map(([k, label]) => `${label} ${dur(t.durations[k])}`).join('  ')}`);
  }
  out.push('');
  out.push('what came back');
  if (!a.outputs) out.push('  no outputs stored');
  else {
    for (const f of a.outputs.files) out.push(`  ${f.path}  ${formatBytes(f.size)}  sha256 ${f.sha256}`);
    out.push(`  ${a.outputs.files.length} file(s), ${formatBytes(a.outputs.totalBytes)}${a.outputs.truncated ? ' (truncated at maxBytes)' : ''}`);
  }
  out.push('');
  out.push('what it cost');
  if (a.cost.lines.length === 0) out.push('  nothing billed');
  for (const l of a.cost.lines) {
    out.push(
      `  ${l.attemptId}  ${l.nodeId}  ${l.gpuModel} × ${l.gpus}  ${l.heldFrom} → ${l.finishedAt}  ${l.billableMs} ms  ${formatMicros(l.rateMicrosPerGpuHour)}/GPU-h (list v${l.priceListVersion})  ${formatMicros(l.amountMicros)} ${l.currency}${l.waivedReason ? ` waived: ${l.waivedReason}` : ''}`,
    );
  }
  if (a.cost.lines.length > 0) out.push(`  total ${money(a.cost.totals)}, ${a.cost.billableMs} billable ms`);
  out.push('');
  out.push('timeline');
  out.push(
    table(
      ['POSITION', 'AT', 'TYPE', 'PRODUCER', 'STREAM', 'EVENT ID'],
      a.timeline.map((e) => [e.position, e.at, e.type, e.producer, `${e.streamId}@${e.revision}`, e.eventId]),
      ['r', 'l', 'l', 'l', 'l', 'l'],
    ),
  );
  out.push(`(as of store position ${a.asOfPosition}; this query is recorded as event ${a.recordedAs})`);
  return out.join('\n');
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,6}$/.test(value)) throw new UsageError(`${flag} must be a whole number from 1 to 9999999, got \`${value}\``, [{ path: flag, message: 'must be a whole number ≥ 1', fix: `write e.g. \`${flag} 5000\`` }]);
  return Number(value);
}

export async function auditJobs(ctx: CommandContext, flags: AuditJobsFlags): Promise<ExitCode> {
  const limit = positiveInt('--limit', flags.limit) ?? 1000;
  const client = await ctx.client();
  const filter = {
    ...(flags.team ? { team: flags.team } : {}),
    ...(flags.from ? { from: flags.from } : {}),
    ...(flags.to ? { to: flags.to } : {}),
    ...(flags.node ? { node: flags.node } : {}),
    ...(flags.gpuModel ? { gpuModel: flags.gpuModel } : {}),
    ...(flags.outcome ? { outcome: flags.outcome } : {}),
  };
  // A page per query (each recorded by the ledger), until the limit or the last matching job.
  const reply: AuditJobsListing = { jobs: [], total: 0, asOfPosition: '0', recordedAs: [] };
  for (;;) {
    const page = await client.auditJobs({ ...filter, limit: Math.min(PAGE, limit - reply.jobs.length), offset: reply.jobs.length });
    reply.jobs.push(...page.jobs);
    reply.total = page.total;
    reply.asOfPosition = page.asOfPosition;
    reply.recordedAs.push(page.recordedAs);
    if (page.jobs.length === 0 || reply.jobs.length >= Math.min(limit, page.total)) break;
  }
  const format = formatOf(ctx, flags.format);
  if (format === 'json') ctx.io.stdout.write(`${JSON.stringify(reply, null, 2)}\n`);
  else if (format === 'csv') ctx.io.stdout.write(auditCsv(reply.jobs));
  else ctx.out.line(renderAuditJobs(reply));
  return EXIT.ok;
}

export async function auditJob(ctx: CommandContext, jobId: string, flags: { format?: AuditFormat }): Promise<ExitCode> {
  const format = formatOf(ctx, flags.format);
  if (format === 'csv') throw new UsageError('`gpunet audit job` has no CSV form', [{ path: '--format', message: 'must be table or json for one job', fix: 'use `--format json`, or `gpunet audit jobs --format csv` for a list' }]);
  const client = await ctx.client();
  const a = await client.auditJob(jobId);
  if (format === 'json') ctx.io.stdout.write(`${JSON.stringify(a, null, 2)}\n`);
  else ctx.out.line(renderAuditJob(a));
  return EXIT.ok;
}
