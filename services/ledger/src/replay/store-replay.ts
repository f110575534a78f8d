/**
 * Replay and dispute bundles read from an event store: the one place that reads what
 * `invoice-replay.ts` and `bundle.ts` derive from, shared by the offline tool (`main.ts`, behind
 * `gpunet replay` / `gpunet dispute-bundle`) and the ledger's queries (`ReplayInvoice`,
 * `GetDisputeBundle`), so a bundle downloaded from the console is the file the CLI writes.
 * Reads only; never appends.
 */
import type { InvoiceBody, InvoiceFinalized, ReplayInvoiceReply } from '#contracts';
import { NotFoundError } from '#errors';
import type { EventStore, ReadAllFilter, RecordedEvent } from '#event-store';
import { BILLING_EVENT_TYPES, deriveInvoice, parseInvoiceId, type PriceListVersion } from '../domain/index.js';
import { latestDigestTree } from '../digests/store-digests.js';
import { buildBundle, type DisputeBundle } from './bundle.js';
import { replayInvoice, type InvoiceReplay } from './invoice-replay.js';

const PAGE = 5_000;

/** Every event matching `filter` up to `toPosition` (inclusive), in position order. */
export async function readUpTo(store: EventStore, toPosition: bigint, filter: ReadAllFilter = {}): Promise<RecordedEvent[]> {
  const all: RecordedEvent[] = [];
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, toPosition, maxCount: PAGE, filter });
    all.push(...page);
    if (page.length < PAGE) return all;
    from = page[page.length - 1]!.position;
  }
}

/** The invoice its InvoiceFinalized event recorded, with that event; undefined while it is a draft. */
export async function finalizedInvoice(store: EventStore, head: bigint, invoiceId: string): Promise<{ invoice: InvoiceBody; finalized: RecordedEvent } | undefined> {
  const finalized = (await readUpTo(store, head, { types: ['InvoiceFinalized'] })).find((e) => (e.data as InvoiceFinalized).invoice.invoiceId === invoiceId);
  return finalized ? { invoice: (finalized.data as InvoiceFinalized).invoice, finalized } : undefined;
}

/** Re-derives `recorded` from the store's billing events up to the position recorded on it and diffs it; `prices` for a what-if. */
export async function replayFromStore(store: EventStore, recorded: InvoiceBody, prices?: readonly PriceListVersion[]): Promise<InvoiceReplay> {
  const events = await readUpTo(store, BigInt(recorded.derivedAtPosition), { types: BILLING_EVENT_TYPES });
  return replayInvoice(events, recorded, prices ? { prices } : {});
}

/**
 * The dispute bundle of an invoice at the store's head `head`: the recorded (finalized) invoice
 * when there is one, else the draft derived at the head; streams carried whole (those of every
 * event a line names, the price lists, the team's finalized invoices and credit notes, which
 * decide where late lines go) and the latest signed heads. NotFoundError for a draft without lines.
 */
export async function disputeBundleOf(
  store: EventStore,
  input: { invoiceId: string; head: bigint; recorded?: { invoice: InvoiceBody; finalizedEventId?: string; finalizedStreamId?: string }; chainKeyed: boolean; createdAt: string },
): Promise<DisputeBundle> {
  const { invoiceId, head, recorded } = input;
  const { team, month } = parseInvoiceId(invoiceId);
  const billing = await readUpTo(store, head, { types: BILLING_EVENT_TYPES });
  const invoice = recorded?.invoice ?? deriveInvoice(billing, { team, month, asOf: head });
  if (invoice.lines.length === 0 && !recorded) {
    throw new NotFoundError(`invoice ${invoiceId} has no lines (as of store position ${head}): nothing to dispute; check the id with \`gpunet invoices list\``);
  }
  const streamOf = new Map(billing.map((e) => [e.eventId, e.streamId]));
  const streams = new Set<string>();
  for (const id of invoice.lines.flatMap((l) => l.eventIds)) {
    const s = streamOf.get(id);
    if (!s) throw new Error(`event ${id} named by invoice ${invoiceId} is not in the store up to position ${head}`);
    streams.add(s);
  }
  for (const e of billing) {
    if (e.type === 'PriceListPublished') streams.add(e.streamId);
    if (e.type === 'InvoiceFinalized' && (e.data as InvoiceFinalized).invoice.team === team) streams.add(e.streamId);
    if (e.type === 'CreditNoteIssued' && (e.data as { team: string }).team === team) streams.add(e.streamId);
  }
  if (recorded?.finalizedStreamId) streams.add(recorded.finalizedStreamId);
  // Each stream as it stood at `head`, so the bundle is the store at one position.
  const whole = await Promise.all([...streams].map(async (s) => (await store.readStream(s)).filter((e) => e.position <= head)));
  const signed = await latestDigestTree(store);
  return buildBundle({
    ...(signed ? { signed } : {}),
    invoice,
    invoiceStatus: recorded?.finalizedEventId ? 'finalized' : 'draft',
    ...(recorded?.finalizedEventId ? { finalizedEventId: recorded.finalizedEventId } : {}),
    streams: whole,
    chainKeyed: input.chainKeyed,
    createdAt: input.createdAt,
  });
}

/** The replay as the `ReplayInvoice` query answers it: every line with both amounts, every currency's totals. Pure. */
export function replayReport(recorded: InvoiceBody, r: InvoiceReplay, invoiceStatus: 'draft' | 'finalized'): ReplayInvoiceReply {
  const lines = r.lines.map((l) => {
    const line = (l.derived ?? l.recorded)!;
    return {
      lineId: l.lineId,
      status: l.status,
      identical: l.status === 'same',
      jobId: line.jobId,
      attemptId: line.attemptId,
      nodeId: line.nodeId,
      gpuModel: line.gpuModel,
      gpus: line.gpus,
      billableMs: line.billableMs,
      currency: line.currency,
      ...(l.recorded ? { recordedAmountMicros: l.recorded.amountMicros, recordedRateMicrosPerGpuHour: l.recorded.rateMicrosPerGpuHour } : {}),
      ...(l.derived ? { replayedAmountMicros: l.derived.amountMicros, replayedRateMicrosPerGpuHour: l.derived.rateMicrosPerGpuHour } : {}),
      changes: l.changes.map((c) => ({ field: c.field, recorded: JSON.stringify(c.recorded ?? null), replayed: JSON.stringify(c.derived ?? null) })),
      eventIds: l.eventIds,
    };
  });
  const currencies = [...new Set([...recorded.totals, ...r.derived.totals].map((t) => t.currency))];
  const totals = currencies.map((currency) => {
    const recordedMicros = recorded.totals.find((t) => t.currency === currency)?.amountMicros ?? 0;
    const replayedMicros = r.derived.totals.find((t) => t.currency === currency)?.amountMicros ?? 0;
    return { currency, recordedMicros, replayedMicros, identical: recordedMicros === replayedMicros };
  });
  const count = (s: string) => r.lines.filter((l) => l.status === s).length;
  const summary = r.identical
    ? `identical: ${r.lines.length} line(s) re-derived from the store as of position ${r.asOfPosition}, byte for byte${r.whatIf ? ' (the what-if list prices them the same)' : ''}`
    : `${r.whatIf ? 'what-if (nothing written): ' : 'differs: '}${count('changed')} line(s) changed, ${count('missing')} missing from the replay, ${count('extra')} only in the replay, ${count('same')} the same`;
  return { invoiceId: r.invoiceId, invoiceStatus, asOfPosition: r.asOfPosition, whatIf: r.whatIf, identical: r.identical, lines, totals, otherChanges: r.otherChanges, summary };
}
