/**
 * `gpunet invoices list` and `gpunet invoice show ID`: the team's monthly invoices (UTC calendar
 * months), drafts until the late-event cutoff after the month, then finalized.
 */
import type { InvoiceView, ListInvoicesReply } from '#contracts';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { formatMicros, formatMs, table } from '../format.js';

const amounts = (xs: readonly { currency: string; amountMicros: number }[]) => xs.map((t) => `${formatMicros(t.amountMicros)} ${t.currency}`).join(', ') || '0';

/** One row per invoice. Pure. */
export function renderInvoiceList(reply: ListInvoicesReply): string {
  if (reply.invoices.length === 0) return 'no invoices';
  const rows = reply.invoices.map((i) => [
    i.invoiceId,
    i.month,
    i.status,
    String(i.lines),
    amounts(i.totals),
    i.credited.length > 0 ? amounts(i.credited) : '',
    i.status === 'finalized' ? `finalized ${i.finalizedAt ?? ''}` : `final after ${i.finalizesAt}`,
  ]);
  return table(['INVOICE', 'MONTH', 'STATUS', 'LINES', 'TOTAL', 'CREDITED', ''], rows, ['l', 'l', 'l', 'r', 'r', 'r', 'l']);
}

/** The invoice with a line per attempt per node, totals, postings and credit notes. Pure. */
export function renderInvoiceView(v: InvoiceView): string {
  const out = [`invoice ${v.invoiceId}  team ${v.team}  month ${v.month} (UTC)  ${v.status}${v.finalizedAt ? ` ${v.finalizedAt}` : ` (final after ${v.finalizesAt})`}`];
  if (v.lines.length === 0) out.push('no lines');
  else {
    const rows = v.lines.map((l) => [
      l.jobId,
      l.run === undefined ? l.attemptId : `${l.run}`,
      l.nodeId,
      `${l.gpuModel} × ${l.gpus}`,
      l.heldFrom,
      l.finishedAt,
      String(l.billableMs),
      formatMicros(l.rateMicrosPerGpuHour),
      `${formatMicros(l.amountMicros)} ${l.currency}${l.minimumApplied ? ' (minimum)' : ''}${l.waivedReason ? ` (waived: ${l.waivedReason})` : ''}${l.lateFrom ? ` (late, from ${l.lateFrom})` : ''}`,
    ]);
    out.push(table(['JOB', 'RUN', 'NODE', 'GPUS', 'HELD FROM', 'FINISHED AT', 'MS', 'RATE/GPU-H', 'AMOUNT'], rows, ['l', 'r', 'l', 'l', 'l', 'l', 'r', 'r', 'r']));
  }
  for (const t of v.totals) out.push(`total ${formatMicros(t.amountMicros)} ${t.currency} over ${t.lines} line(s), billable ${formatMs(t.billableMs)}`);
  for (const n of v.creditNotes) {
    out.push(`credit note ${n.creditNoteId} (${n.issuedAt}): ${amounts(n.totals)}`);
    for (const l of n.lines) out.push(`  ${l.lineId}  -${formatMicros(l.amountMicros)} ${l.currency}  ${l.reason}`);
  }
  if (v.creditNotes.length > 0) out.push(`net ${amounts(v.net)}`);
  out.push(`postings: ${v.postings.map((p) => `${p.side} ${p.account} ${formatMicros(p.amountMicros)} ${p.currency}`).join('; ') || 'none'}`);
  out.push(`derived at store position ${v.derivedAtPosition}, rounding ${v.rounding}`);
  return out.join('\n');
}

export async function invoicesList(ctx: CommandContext, opts: { month?: string; status?: string }): Promise<ExitCode> {
  if (opts.status !== undefined && opts.status !== 'draft' && opts.status !== 'finalized') {
    throw new UsageError(`--status must be draft or finalized, got ${opts.status}`, [{ path: '--status', message: 'must be draft or finalized', fix: 'write e.g. `--status draft`' }]);
  }
  const reply = await (await ctx.client()).invoices({ ...(opts.month ? { month: opts.month } : {}), ...(opts.status ? { status: opts.status } : {}) });
  ctx.out.doc(reply);
  ctx.out.line(renderInvoiceList(reply));
  return EXIT.ok;
}

export async function invoiceShow(ctx: CommandContext, invoiceId: string): Promise<ExitCode> {
  const view = await (await ctx.client()).invoice(invoiceId);
  ctx.out.doc(view);
  ctx.out.line(renderInvoiceView(view));
  return EXIT.ok;
}

/** Whether an argument of `gpunet invoice` names an invoice (else it is a job id). */
export function isInvoiceId(arg: string): boolean {
  return /^inv-.+-\d{4}-\d{2}$/.test(arg);
}
