/**
 * Replaying one job: re-derive each of its attempt lines from the stored agent events and price
 * lists (the invoice derivation's `lineOf`) and compare them with the UsageRecorded lines the
 * ledger recorded. Pure.
 */
import type { UsageRecorded } from '#contracts';
import { canonicalJson, foldBilling, lineOf, type StoredEvent } from '../domain/index.js';

export interface JobLineReplay {
  attemptId: string;
  nodeId: string;
  /** `not_recorded`: the events give a line the ledger never recorded; `not_derivable`: a recorded line the events do not give. */
  status: 'same' | 'changed' | 'not_recorded' | 'not_derivable';
  changes: { field: string; recorded: unknown; derived: unknown }[];
  amountMicros?: number;
  currency?: string;
  /** Contributing events: ComputeHeld, JobFinished, price list (, NodeLost, JobSubmitted), then the UsageRecorded. */
  eventIds: string[];
}

export interface JobReplay {
  jobId: string;
  asOfPosition: string;
  identical: boolean;
  lines: JobLineReplay[];
}

/** Compared between a recorded UsageRecorded and the re-derived line (amount only when no minimum charge applied: usage lines carry none). */
const FIELDS = ['gpuModel', 'gpus', 'outcome', 'heldFrom', 'finishedAt', 'billableMs', 'rateMicrosPerGpuHour', 'priceListVersion', 'currency', 'waivedReason'] as const;

export function replayJob(events: readonly StoredEvent[], jobId: string, asOf: bigint): JobReplay {
  const state = foldBilling(events, asOf);
  const usage = events.filter((e) => e.position <= asOf && e.type === 'UsageRecorded' && (e.data as UsageRecorded).jobId === jobId);
  const lines: JobLineReplay[] = [];
  const matched = new Set<string>();
  for (const facts of state.attempts.values()) {
    if (facts.held?.data.jobId !== jobId && facts.finished?.data.jobId !== jobId) continue;
    const derived = lineOf(state, facts)?.line;
    if (!derived) continue;
    const recordedEvent = usage.find((u) => {
      const d = u.data as UsageRecorded;
      return d.attemptId === derived.attemptId && d.nodeId === derived.nodeId;
    });
    if (!recordedEvent) {
      lines.push({ attemptId: derived.attemptId, nodeId: derived.nodeId, status: 'not_recorded', changes: [], amountMicros: derived.amountMicros, currency: derived.currency, eventIds: derived.eventIds });
      continue;
    }
    matched.add(recordedEvent.eventId);
    const recorded = recordedEvent.data as UsageRecorded;
    const changes: JobLineReplay['changes'] = FIELDS.filter((f) => canonicalJson(recorded[f] ?? null) !== canonicalJson(derived[f] ?? null)).map((f) => ({ field: f, recorded: recorded[f], derived: derived[f] }));
    if (!derived.minimumApplied && recorded.amountMicros !== derived.amountMicros) changes.push({ field: 'amountMicros', recorded: recorded.amountMicros, derived: derived.amountMicros });
    lines.push({
      attemptId: derived.attemptId,
      nodeId: derived.nodeId,
      status: changes.length === 0 ? 'same' : 'changed',
      changes,
      amountMicros: derived.amountMicros,
      currency: derived.currency,
      eventIds: [...derived.eventIds, recordedEvent.eventId],
    });
  }
  for (const u of usage) {
    if (matched.has(u.eventId)) continue;
    const d = u.data as UsageRecorded;
    lines.push({ attemptId: d.attemptId, nodeId: d.nodeId, status: 'not_derivable', changes: [], amountMicros: d.amountMicros, currency: d.currency, eventIds: [u.eventId] });
  }
  return { jobId, asOfPosition: asOf.toString(), identical: lines.every((l) => l.status === 'same'), lines };
}

/** For people: one line per attempt line, then the verdict. Pure. */
export function renderJobReplay(r: JobReplay): string[] {
  const out = [`job ${r.jobId} replayed as of store position ${r.asOfPosition}: usage lines re-derived from the agents' events and the price lists`];
  if (r.lines.length === 0) out.push('no attempt held compute: nothing billed, nothing recorded');
  for (const l of r.lines) {
    out.push(`${l.status === 'same' ? '=' : l.status === 'changed' ? '~' : l.status === 'not_recorded' ? '-' : '+'} ${l.attemptId}@${l.nodeId}  ${l.status}  ${l.amountMicros ?? '?'} micro-${l.currency ?? '?'}  events ${l.eventIds.join(' ')}`);
    for (const c of l.changes) out.push(`    ${c.field}: recorded ${JSON.stringify(c.recorded)} → derived ${JSON.stringify(c.derived)}`);
  }
  out.push(r.identical ? `identical: ${r.lines.length} line(s)` : 'differs: the recorded usage does not follow from the events');
  return out;
}
