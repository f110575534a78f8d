/** Job views, timelines and invoices as text for people. Pure. */
import type { GetChargesReply, JobSummary, JobView } from '#contracts';
import type { JobEventRecord } from '#sdk';
import { clockTime, formatBytes, formatDuration, formatMicros, formatMs, msBetween, offset, sumMicros, table } from './format.js';

/** `completed (exit 0)`, `failed (exit 3)`, `timeout (killed)`, `running`. */
export function stateText(view: Pick<JobView, 'state' | 'exitCode' | 'cancelRequested'> & { limit?: JobView['limit'] }): string {
  const limit = view.limit === undefined ? '' : `, stopped at its ${view.limit.replace('_', ' ')}`;
  const exit = view.exitCode === undefined ? (limit ? ` (${limit.slice(2)})` : '') : view.exitCode === null ? ` (killed by a signal${limit})` : ` (exit ${view.exitCode}${limit})`;
  const cancel = view.cancelRequested && view.state !== 'cancelled' ? ', cancel requested' : '';
  return `${view.state}${exit}${cancel}`;
}

/** `gpunet status`: the job at a glance. */
export function renderJob(view: JobView): string {
  const lines: string[] = [];
  const req = view.spec.request;
  lines.push(`${view.jobId}${view.name ? `  ${view.name}` : ''}`);
  lines.push(`  state      ${stateText(view)}`);
  lines.push(`  submitted  ${view.submittedAt}`);
  lines.push(`  request    ${req.gpus} × ${req.gpuModel ?? 'any GPU'}, time limit ${formatDuration(req.timeLimitMs)}${view.deadlineAt ? `, deadline ${view.deadlineAt}` : ''}`);
  const quote = quoteLine(view);
  if (quote) lines.push(`  quoted     ${quote}`);
  for (const a of view.attempts) {
    const ran = msBetween(a.heldAt, a.finishedAt);
    lines.push(
      `  attempt ${a.attempt}  ${a.nodeId}  GPUs ${a.gpuIndices.join(',')} (${a.gpuIndices.length} × ${a.gpuModel})` +
        `${a.heldAt ? `  held ${clockTime(a.heldAt)}` : ''}${a.finishedAt ? ` → finished ${clockTime(a.finishedAt)}` : ''}` +
        `${ran !== undefined ? ` (${formatMs(ran)} held)` : ''}${a.outcome ? `  ${a.outcome}` : ''}${a.limit ? ` (${a.limit})` : ''}`,
    );
    if (a.message && a.outcome !== 'completed') lines.push(`    ${a.message}`);
    if (a.deadlineNote) lines.push(`    deadline: ${a.deadlineNote}`);
  }
  if (view.outputs) lines.push(`  outputs    ${view.outputs.files.length} file(s), ${formatBytes(view.outputs.totalBytes)}${view.outputs.truncated ? ' (truncated at maxBytes)' : ''}`);
  if (view.rejection) {
    lines.push(`  rejected   ${view.rejection.reason}: ${view.rejection.message}`);
    for (const i of view.rejection.issues) lines.push(`    ${i.path}: ${i.message}${i.fix ? ` — fix: ${i.fix}` : ''}`);
  }
  const start = view.timeline[0]?.at;
  if (start) lines.push(`  timeline   ${view.timeline.map((t) => `${t.type} ${offset(start, t.at)}`).join(' → ')}`);
  return lines.join('\n');
}

/** `start 14:05:00 (quoted 13:58:12), started 4 s later; end 15:05:00, ended 52 min 10 s earlier`: the first quote and how far off it was. */
export function quoteLine(view: Pick<JobView, 'quote' | 'attempts' | 'state'>): string | undefined {
  const q = view.quote;
  if (!q) return undefined;
  const off = (actual: string | undefined, quoted: string, what: string) => {
    const ms = msBetween(quoted, actual);
    if (ms === undefined) return '';
    return `, ${what} ${ms === 0 ? 'on time' : `${formatMs(Math.abs(ms))} ${ms > 0 ? 'later' : 'earlier'}`}`;
  };
  const first = view.attempts[0];
  const last = view.attempts.at(-1);
  const end = q.expectedEnd === undefined ? '' : `; end ${clockTime(q.expectedEnd)}${view.state === 'completed' ? off(last?.finishedAt, q.expectedEnd, 'ended') : ''}`;
  return `start ${clockTime(q.expectedStart)} (quoted ${clockTime(q.quotedAt)})${off(first?.placedAt, q.expectedStart, 'started')}${end}`;
}

/** `gpunet status --timeline`: every event with its time, offset from the first, and producer. */
export function renderTimeline(events: readonly JobEventRecord[]): string {
  const start = events[0]?.at;
  if (!start) return '(no events)';
  return table(
    ['TIME (UTC)', 'OFFSET', 'EVENT', 'PRODUCER', 'DETAIL'],
    events.map((e) => [e.at.replace('T', ' ').replace('Z', ''), offset(start, e.at), e.type, e.producer, eventDetail(e)]),
    ['l', 'r', 'l', 'l', 'l'],
  );
}

/** The one fact worth a column for the events people look at most. */
function eventDetail(e: JobEventRecord): string {
  const d = (e.data ?? {}) as Record<string, unknown>;
  switch (e.type) {
    case 'JobPlaced':
      return `${String(d.nodeId ?? '')} GPUs ${Array.isArray(d.gpuIndices) ? d.gpuIndices.join(',') : ''}`.trim();
    case 'InputsStaged':
      return typeof d.totalBytes === 'number' ? formatBytes(d.totalBytes) : '';
    case 'JobFinished':
      return [d.outcome, d.exitCode !== undefined ? `exit ${String(d.exitCode)}` : '', typeof d.limit === 'string' ? d.limit : ''].filter(Boolean).join(', ');
    case 'OutputsStored':
      return Array.isArray(d.files) ? `${d.files.length} file(s)` : '';
    case 'UsageRecorded':
      return typeof d.amountMicros === 'number' ? `${formatMicros(d.amountMicros)} ${String(d.currency ?? '')} for ${typeof d.billableMs === 'number' ? formatMs(d.billableMs) : '?'}` : '';
    case 'JobRejected':
    case 'StagingFailed':
      return String(d.reason ?? '');
    default:
      return '';
  }
}

/** `gpunet list`. */
export function renderJobList(jobs: readonly JobSummary[]): string {
  if (jobs.length === 0) return '(no jobs)';
  return table(
    ['JOB', 'NAME', 'STATE', 'GPUS', 'SUBMITTED', 'UPDATED'],
    jobs.map((j) => [j.jobId, j.name ?? '', j.outcome && j.outcome !== j.state ? `${j.state} (${j.outcome})` : j.state, `${j.gpus}${j.gpuModel ? ` × ${j.gpuModel}` : ''}`, j.submittedAt, j.updatedAt]),
  );
}

/**
 * `gpunet invoice`: one line per billed attempt (held-from → finished-at, ms, rate, amount) and
 * a total per currency, summed as bigint micro-units.
 */
export function renderInvoice(charges: GetChargesReply): string {
  if (charges.lines.length === 0) return `team ${charges.team}: no charges`;
  const rows = charges.lines.map((l) => [
    l.jobId,
    l.attemptId,
    l.nodeId,
    `${l.gpuModel} × ${l.gpus}`,
    l.heldFrom,
    l.finishedAt,
    String(l.billableMs),
    formatMicros(l.rateMicrosPerGpuHour),
    `${formatMicros(l.amountMicros)} ${l.currency}${l.waivedReason ? ` (waived: ${l.waivedReason})` : ''}`,
  ]);
  const lines = [table(['JOB', 'ATTEMPT', 'NODE', 'GPUS', 'HELD FROM', 'FINISHED AT', 'MS', 'RATE/GPU-H', 'AMOUNT'], rows, ['l', 'l', 'l', 'l', 'l', 'l', 'r', 'r', 'r'])];
  const currencies = [...new Set(charges.lines.map((l) => l.currency))];
  for (const currency of currencies) {
    const total = sumMicros(charges.lines.filter((l) => l.currency === currency).map((l) => l.amountMicros));
    lines.push(`total ${formatMicros(total)} ${currency}`);
  }
  lines.push(`billable time ${formatMs(charges.billableMs)} (${charges.billableMs} ms) over ${charges.lines.length} attempt(s)`);
  return lines.join('\n');
}
