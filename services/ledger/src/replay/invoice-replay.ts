/**
 * Replaying an invoice for a dispute: re-derive it from stored events with the ledger's one
 * derivation (`deriveInvoice`) as of the position recorded on it, and compare line by line, each
 * line with the events it comes from. Pure: events, the recorded invoice and prices are handed in.
 */
import type { InvoiceBody, InvoiceLine, PriceListPublished } from '#contracts';
import { ValidationError } from '#errors';
import { canonicalJson, deriveInvoice, parseInvoiceId, priceVersionOf, type PriceListVersion, type StoredEvent } from '../domain/index.js';

/** Fields of a line compared one by one (lineId is the key; eventIds are shown, not compared). */
const LINE_FIELDS = [
  'jobId',
  'attemptId',
  'run',
  'nodeId',
  'gpuModel',
  'gpus',
  'gpuIndices',
  'outcome',
  'heldFrom',
  'finishedAt',
  'billableMs',
  'rateMicrosPerGpuHour',
  'priceListVersion',
  'currency',
  'amountMicros',
  'minimumApplied',
  'waivedReason',
  'lateFrom',
  'completedAtPosition',
] as const satisfies readonly (keyof InvoiceLine)[];

export type LineStatus = 'same' | 'changed' | 'missing' | 'extra';

/** One line of the diff: recorded vs re-derived, the fields that differ and the contributing event ids. */
export interface LineDiff {
  lineId: string;
  status: LineStatus;
  /** `field: recorded → derived` for each differing field (changed lines only). */
  changes: { field: string; recorded: unknown; derived: unknown }[];
  recorded?: InvoiceLine;
  derived?: InvoiceLine;
  /** Events the line comes from: the derived line's (or the recorded one's when it is missing now). */
  eventIds: string[];
}

export interface InvoiceReplay {
  invoiceId: string;
  /** The position the recorded invoice was derived at, and the replay with it. */
  asOfPosition: string;
  /** True when the re-derived invoice is byte-identical to the recorded one (canonical JSON). */
  identical: boolean;
  lines: LineDiff[];
  /** Totals per currency that differ (empty when identical). */
  totals: { currency: string; recorded?: number; derived?: number }[];
  /** Other top-level fields that differ (period, rounding, postings, …). */
  otherChanges: string[];
  /** The prices came from a what-if list, not from the store. */
  whatIf: boolean;
  derived: InvoiceBody;
}

function same(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** Line-by-line comparison of two invoices of the same id. Pure. */
export function diffInvoices(recorded: InvoiceBody, derived: InvoiceBody, whatIf = false): InvoiceReplay {
  const derivedById = new Map(derived.lines.map((l) => [l.lineId, l]));
  const recordedIds = new Set(recorded.lines.map((l) => l.lineId));
  const lines: LineDiff[] = [];
  for (const r of recorded.lines) {
    const d = derivedById.get(r.lineId);
    if (!d) {
      lines.push({ lineId: r.lineId, status: 'missing', changes: [], recorded: r, eventIds: r.eventIds });
      continue;
    }
    const changes: LineDiff['changes'] = LINE_FIELDS.filter((f) => !same(r[f], d[f])).map((f) => ({ field: f, recorded: r[f], derived: d[f] }));
    if (!same(r.eventIds, d.eventIds)) changes.push({ field: 'eventIds', recorded: r.eventIds, derived: d.eventIds });
    lines.push({ lineId: r.lineId, status: changes.length === 0 ? 'same' : 'changed', changes, recorded: r, derived: d, eventIds: d.eventIds });
  }
  for (const d of derived.lines) {
    if (!recordedIds.has(d.lineId)) lines.push({ lineId: d.lineId, status: 'extra', changes: [], derived: d, eventIds: d.eventIds });
  }
  const currencies = [...new Set([...recorded.totals, ...derived.totals].map((t) => t.currency))];
  const totals = currencies
    .map((currency) => ({
      currency,
      recorded: recorded.totals.find((t) => t.currency === currency)?.amountMicros,
      derived: derived.totals.find((t) => t.currency === currency)?.amountMicros,
    }))
    .filter((t) => t.recorded !== t.derived);
  const otherChanges = (['invoiceId', 'team', 'month', 'periodStart', 'periodEnd', 'derivedAtPosition', 'rounding', 'postings'] as const).filter((k) => !same(recorded[k], derived[k]));
  return {
    invoiceId: recorded.invoiceId,
    asOfPosition: recorded.derivedAtPosition,
    identical: canonicalJson(recorded) === canonicalJson(derived),
    lines,
    totals,
    otherChanges,
    whatIf,
    derived,
  };
}

/**
 * Re-derives the invoice from `events` (in position order; later ones are ignored) as of the
 * position recorded on it, with the stored price lists or the what-if `prices`, and diffs it
 * against the recorded one.
 */
export function replayInvoice(events: Iterable<StoredEvent>, recorded: InvoiceBody, options: { prices?: readonly PriceListVersion[] } = {}): InvoiceReplay {
  const { team, month } = parseInvoiceId(recorded.invoiceId);
  const asOf = BigInt(recorded.derivedAtPosition);
  const derived = deriveInvoice(events, { team, month, asOf, ...(options.prices ? { prices: options.prices } : {}) });
  return diffInvoices(recorded, derived, options.prices !== undefined);
}

/**
 * A what-if price file as price list versions: one list (`{ currency, ratesMicrosPerGpuHour,
 * defaultRateMicrosPerGpuHour?, minimumChargeMicros?, effectiveFrom? }`) or `{ versions: [...] }`
 * / a bare array of them. A list without `effectiveFrom` applies from the epoch; versions are
 * numbered from 1 in the order given unless they carry `version`. Errors name the field.
 */
export function whatIfPrices(doc: unknown): PriceListVersion[] {
  const list = Array.isArray(doc) ? doc : doc !== null && typeof doc === 'object' && Array.isArray((doc as { versions?: unknown }).versions) ? (doc as { versions: unknown[] }).versions : [doc];
  if (list.length === 0) throw new ValidationError('the price file lists no price list', [{ path: 'versions', message: 'is empty', fix: 'give one list: `{ currency: EUR, ratesMicrosPerGpuHour: { A100-80GB: 2500000 } }`' }]);
  return list.map((raw, i) => {
    const at = list.length === 1 && !Array.isArray(doc) && !(doc as { versions?: unknown }).versions ? '' : `versions[${i}].`;
    if (raw === null || typeof raw !== 'object') throw new ValidationError(`${at || 'the price file'} is not a price list`, [{ path: at || '(file)', message: 'must be an object', fix: 'write `{ currency: EUR, ratesMicrosPerGpuHour: { sim-gpu: 3600000 } }`' }]);
    const r = raw as Record<string, unknown>;
    const rates = r.ratesMicrosPerGpuHour;
    const issues = [];
    if (typeof r.currency !== 'string' || !/^[A-Z]{3}$/.test(r.currency)) issues.push({ path: `${at}currency`, message: 'must be an ISO 4217 code', fix: 'write e.g. `currency: EUR`' });
    if (rates === null || typeof rates !== 'object' || Object.values(rates).some((v) => !Number.isSafeInteger(v) || (v as number) < 0)) {
      issues.push({ path: `${at}ratesMicrosPerGpuHour`, message: 'must map GPU models to whole micro-units per GPU-hour', fix: 'write e.g. `ratesMicrosPerGpuHour: { A100-80GB: 2500000 }`' });
    }
    for (const k of ['defaultRateMicrosPerGpuHour', 'minimumChargeMicros'] as const) {
      if (r[k] !== undefined && (!Number.isSafeInteger(r[k]) || (r[k] as number) < 0)) issues.push({ path: `${at}${k}`, message: 'must be whole micro-units ≥ 0', fix: `write e.g. \`${k}: 1000000\`` });
    }
    if (issues.length > 0) throw new ValidationError(`invalid price file: ${issues.map((x) => x.path).join(', ')}`, issues);
    const published = {
      version: Number.isSafeInteger(r.version) ? (r.version as number) : i + 1,
      currency: r.currency as string,
      effectiveFrom: typeof r.effectiveFrom === 'string' ? r.effectiveFrom : new Date(0).toISOString(),
      ratesMicrosPerGpuHour: rates as Record<string, number>,
      ...(r.defaultRateMicrosPerGpuHour !== undefined ? { defaultRateMicrosPerGpuHour: r.defaultRateMicrosPerGpuHour as number } : {}),
      ...(r.minimumChargeMicros !== undefined ? { minimumChargeMicros: r.minimumChargeMicros as number } : {}),
      publishedAt: new Date(0).toISOString(),
    } as PriceListPublished;
    return priceVersionOf(published);
  });
}

/** The diff for people: one line per invoice line, its status, what changed and its events. Pure. */
export function renderInvoiceReplay(r: InvoiceReplay): string[] {
  const out: string[] = [];
  out.push(`invoice ${r.invoiceId} replayed as of store position ${r.asOfPosition}${r.whatIf ? ' under the what-if price list (nothing written)' : ''}`);
  const mark: Record<LineStatus, string> = { same: '=', changed: '~', missing: '-', extra: '+' };
  for (const l of r.lines) {
    const amount = l.derived ? `${l.derived.amountMicros} micro-${l.derived.currency}` : `${l.recorded!.amountMicros} micro-${l.recorded!.currency}`;
    out.push(`${mark[l.status]} ${l.lineId}  ${l.status}  ${amount}  events ${l.eventIds.join(' ')}`);
    for (const c of l.changes) out.push(`    ${c.field}: ${JSON.stringify(c.recorded)} → ${JSON.stringify(c.derived)}`);
  }
  for (const t of r.totals) out.push(`total: ${t.recorded ?? 0} → ${t.derived ?? 0} micro-${t.currency}`);
  for (const k of r.otherChanges) out.push(`${k} differs`);
  const counts = (s: LineStatus) => r.lines.filter((l) => l.status === s).length;
  out.push(
    r.identical
      ? `identical: ${r.lines.length} line(s), byte for byte`
      : `differs: ${counts('changed')} changed, ${counts('missing')} missing from the replay, ${counts('extra')} only in the replay, ${counts('same')} same`,
  );
  return out;
}
