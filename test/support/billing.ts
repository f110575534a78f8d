/**
 * What the ledger should have billed, recomputed from the event store alone: per attempt,
 * `ComputeHeld.heldAt → JobFinished.finishedAt` × gpus × the rate in force at heldAt (from the
 * `PriceListPublished` events), rounded once per line with the ledger's own `chargeMicros` (the
 * one rounding rule), and `node_lost` waived. The version lookup is written here again on
 * purpose: a test of the ledger should not borrow the ledger's price book.
 */
import type { ComputeHeld, JobFinished, PriceListPublished, UsageRecorded } from '#contracts';
import type { RecordedEvent } from '#event-store';
import { chargeMicros } from '../../services/ledger/src/domain/pricing.js';

/** One attempt's expected usage line. */
export interface ExpectedLine {
  jobId: string;
  attemptId: string;
  outcome: string;
  gpus: number;
  billableMs: number;
  rateMicrosPerGpuHour: number;
  amountMicros: number;
  currency: string;
  waived: boolean;
}

/** Event types {@link recomputeUsage} reads. */
export const BILLING_EVENT_TYPES = ['PriceListPublished', 'ComputeHeld', 'JobFinished'] as const;

function rateAt(lists: readonly PriceListPublished[], gpuModel: string, at: number): { rate: number; currency: string } {
  // The latest version in force at `at`; on equal effectiveFrom the higher version.
  const inForce = lists
    .filter((l) => Date.parse(l.effectiveFrom) <= at)
    .sort((a, b) => Date.parse(b.effectiveFrom) - Date.parse(a.effectiveFrom) || b.version - a.version)[0];
  const rate = inForce?.ratesMicrosPerGpuHour[gpuModel] ?? inForce?.defaultRateMicrosPerGpuHour;
  if (!inForce || rate === undefined) throw new Error(`no price for ${gpuModel} at ${new Date(at).toISOString()} in ${lists.length} price list(s)`);
  return { rate, currency: inForce.currency };
}

/**
 * Expected lines for every attempt that has a `JobFinished` and a `ComputeHeld` (an attempt that
 * never held compute has no line), keyed by attempt id. Pure.
 */
export function recomputeUsage(events: readonly RecordedEvent[]): Map<string, ExpectedLine> {
  const lists = events.filter((e) => e.type === 'PriceListPublished').map((e) => e.data as PriceListPublished);
  const held = new Map<string, ComputeHeld>();
  for (const e of events) if (e.type === 'ComputeHeld') held.set((e.data as ComputeHeld).attemptId, e.data as ComputeHeld);
  const lines = new Map<string, ExpectedLine>();
  for (const e of events) {
    if (e.type !== 'JobFinished') continue;
    const finished = e.data as JobFinished;
    const h = held.get(finished.attemptId);
    if (!h) continue;
    const heldAt = Date.parse(h.heldAt);
    const { rate, currency } = rateAt(lists, h.gpuModel, heldAt);
    const waived = finished.outcome === 'node_lost';
    const billableMs = waived ? 0 : Math.max(0, Date.parse(finished.finishedAt) - heldAt);
    lines.set(finished.attemptId, {
      jobId: finished.jobId,
      attemptId: finished.attemptId,
      outcome: finished.outcome,
      gpus: h.gpus,
      billableMs,
      rateMicrosPerGpuHour: rate,
      amountMicros: waived ? 0 : chargeMicros(h.gpus, billableMs, rate),
      currency,
      waived,
    });
  }
  return lines;
}

/** Sum of amounts per currency (integers; lines are never re-rounded). */
export function totalsByCurrency(lines: Iterable<{ amountMicros: number; currency: string }>): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const l of lines) totals[l.currency] = (totals[l.currency] ?? 0) + l.amountMicros;
  return totals;
}

/** The `UsageRecorded` events of the store, grouped by attempt id (to see doubles). */
export function usageByAttempt(events: readonly RecordedEvent[]): Map<string, UsageRecorded[]> {
  const byAttempt = new Map<string, UsageRecorded[]>();
  for (const e of events) {
    if (e.type !== 'UsageRecorded') continue;
    const u = e.data as UsageRecorded;
    byAttempt.set(u.attemptId, [...(byAttempt.get(u.attemptId) ?? []), u]);
  }
  return byAttempt;
}
