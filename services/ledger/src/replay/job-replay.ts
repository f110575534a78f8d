/**
 * Replaying one job: re-derive each of its attempt lines from the stored agent events and price
 * lists (the invoice derivation's `lineOf`) and compare them with the UsageRecorded lines the
 * ledger recorded. Pure.
 */
import type { EventData, UsageRecorded } from '#contracts';
import { canonicalJson, decideJobEnd, foldBilling, lineOf, type JobFact, type StoredEvent } from '../domain/index.js';

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

/**
 * The job's JobEnded against the rule re-applied to its facts: `same`; `changed` (fields differ);
 * `not_recorded` (the facts say it is over and no JobEnded is recorded yet — a ledger behind, not a
 * difference); `not_derivable` (one is recorded and the facts do not say it is over); `open`
 * (neither).
 */
export interface JobEndReplay {
  status: 'same' | 'changed' | 'not_recorded' | 'not_derivable' | 'open';
  changes: { field: string; recorded: unknown; derived: unknown }[];
  eventId?: string;
  outcome?: string;
}

export interface JobReplay {
  jobId: string;
  asOfPosition: string;
  identical: boolean;
  lines: JobLineReplay[];
  ended?: JobEndReplay;
}

/** Compared between the recorded JobEnded and the re-derived one (not `endedAt`: the ledger's clock). */
const END_FIELDS = ['outcome', 'reason', 'attempts', 'exitCode', 'billed', 'outputs', 'team'] as const;

/**
 * Re-applies the JobEnded rule to the job's facts as of the store position they were read at
 * (`jobEvents`: every event naming the job, in store order; `nodeLosses`: the NodeLost events of
 * its nodes) and compares with the recorded JobEnded among them. Pure.
 */
export function replayJobEnd(jobEvents: readonly (JobFact & { eventId: string })[], nodeLosses: readonly EventData<'NodeLost'>[]): JobEndReplay {
  const recordedEvent = jobEvents.find((e) => e.type === 'JobEnded');
  const decision = decideJobEnd(jobEvents.filter((e) => e.type !== 'JobEnded'), nodeLosses);
  if (!recordedEvent) return decision.kind === 'over' ? { status: 'not_recorded', changes: [], outcome: decision.ended.outcome } : { status: 'open', changes: [] };
  const recorded = recordedEvent.data as EventData<'JobEnded'>;
  if (decision.kind !== 'over') return { status: 'not_derivable', changes: [], eventId: recordedEvent.eventId, outcome: recorded.outcome };
  const derived = decision.ended as Record<string, unknown>;
  const changes = END_FIELDS.filter((f) => canonicalJson((recorded as Record<string, unknown>)[f] ?? null) !== canonicalJson(derived[f] ?? null)).map((f) => ({
    field: f,
    recorded: (recorded as Record<string, unknown>)[f],
    derived: derived[f],
  }));
  return { status: changes.length === 0 ? 'same' : 'changed', changes, eventId: recordedEvent.eventId, outcome: recorded.outcome };
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
  if (r.ended) {
    const e = r.ended;
    const what = { same: 'JobEnded recorded as the facts give it', changed: 'JobEnded differs from what the facts give', not_recorded: 'the facts say the job is over; no JobEnded recorded yet', not_derivable: 'JobEnded recorded, but the facts do not say the job is over', open: 'the job is not over: no JobEnded' }[e.status];
    out.push(`${e.status === 'same' ? '=' : e.status === 'open' || e.status === 'not_recorded' ? '·' : '~'} end  ${e.outcome ?? ''}  ${what}${e.eventId ? `  event ${e.eventId}` : ''}`);
    for (const c of e.changes) out.push(`    ${c.field}: recorded ${JSON.stringify(c.recorded)} → derived ${JSON.stringify(c.derived)}`);
  }
  out.push(r.identical ? `identical: ${r.lines.length} line(s)` : 'differs: the recorded usage does not follow from the events');
  return out;
}
