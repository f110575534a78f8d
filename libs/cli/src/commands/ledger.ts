/** `gpunet ledger rebuild`: the ledger recomputes every projection from zero; exit 0 only when every invoice is byte-identical. */
import type { RebuildLedgerReply } from '#contracts';
import type { CommandContext } from '../context.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { table } from '../format.js';

/** One row per invoice, then the verdict. Pure. */
export function renderRebuild(r: RebuildLedgerReply): string {
  const finalized = new Map(r.finalized.map((f) => [f.invoiceId, f.identical]));
  const rows = r.invoices.map((i) => [
    i.invoiceId,
    i.status,
    i.before.slice(0, 16),
    i.after.slice(0, 16),
    i.identical ? 'identical' : 'DIFFERS',
    finalized.has(i.invoiceId) ? (finalized.get(i.invoiceId) ? 'identical' : 'DIFFERS') : '',
  ]);
  return [
    rows.length > 0 ? table(['INVOICE', 'STATUS', 'SHA256 BEFORE', 'SHA256 AFTER', 'REBUILT', 'RE-DERIVED AT ITS POSITION'], rows) : 'no invoices',
    `folded ${r.events} events up to position ${r.toPosition} in ${r.elapsedMs} ms: ${r.identical ? 'every invoice byte-identical' : 'SOME INVOICES DIFFER'}`,
  ].join('\n');
}

export async function ledgerRebuild(ctx: CommandContext): Promise<ExitCode> {
  const reply = await (await ctx.client()).rebuildLedger();
  ctx.out.doc(reply);
  ctx.out.line(renderRebuild(reply));
  return reply.identical ? EXIT.ok : EXIT.failure;
}
