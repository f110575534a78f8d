/**
 * When a job is over, and how: the pure rule behind `JobEnded`. It reads the job's recorded facts
 * (every event naming the job, in store order, and the NodeLost events of the nodes its attempts
 * ran on) and answers either "not over yet" with why, or the JobEnded to record.
 *
 * A job is over on exactly one of these, whichever the facts show:
 * - `JobRejected` (outcome `rejected`), `StagingFailed` (`failed`), `JobWithdrawn` (its outcome:
 *   `cancelled`, `deadline`) — placement or storage decided the job never runs (again);
 * - its current attempt (the last placed) ended in a way that is not run again: every part ended
 *   (`gangOutcome`), not lost with its node, and not a failure the spec's retry policy retries
 *   (`retriesAfter`, the rule placement applies). An attempt that ended `node_lost` or retryably
 *   is never the end by itself: placement then records `JobRequeued` (it runs again) or, when the
 *   team cancelled meanwhile, `JobWithdrawn` (it does not).
 *
 * And only once nothing more will happen to it: every part of every attempt released its GPUs
 * (`ComputeReleased`) or was lost with its node, and every part that held compute and finished
 * has its usage line — so the billed total and the outputs (stored before the release) are final.
 */
import { gangOutcome, gangParts, retriesAfter, type EventData, type JobOutcome } from '#contracts';

/** What the rule needs of a recorded event. */
export interface JobFact {
  type: string;
  data: unknown;
}

export type JobEndedData = EventData<'JobEnded'>;

export type JobEndDecision =
  | { kind: 'over'; ended: Omit<JobEndedData, 'endedAt'> }
  | { kind: 'not_over'; why: string };

interface AttemptFacts {
  placed: EventData<'JobPlaced'>;
  held: Set<string>;
  finished: Map<string, EventData<'JobFinished'>>;
  released: Set<string>;
}

/** The end an attempt came to, once it came to one. */
interface AttemptEnd {
  outcome: JobOutcome;
  exitCode?: number | null;
  message?: string;
}

/**
 * Decides whether the job whose facts these are is over. `events`: every recorded event naming the
 * job, in store order; `nodeLosses`: the NodeLost events of the nodes its attempts were placed on.
 */
export function decideJobEnd(events: readonly JobFact[], nodeLosses: readonly EventData<'NodeLost'>[]): JobEndDecision {
  let submitted: EventData<'JobSubmitted'> | undefined;
  let rejected: EventData<'JobRejected'> | undefined;
  let stagingFailed: EventData<'StagingFailed'> | undefined;
  let withdrawn: EventData<'JobWithdrawn'> | undefined;
  let outputs: EventData<'OutputsStored'> | undefined;
  const attempts = new Map<string, AttemptFacts>();
  const usage = new Map<string, EventData<'UsageRecorded'>>();

  for (const e of events) {
    switch (e.type) {
      case 'JobSubmitted':
        submitted ??= e.data as EventData<'JobSubmitted'>;
        break;
      case 'JobRejected':
        rejected ??= e.data as EventData<'JobRejected'>;
        break;
      case 'StagingFailed':
        stagingFailed ??= e.data as EventData<'StagingFailed'>;
        break;
      case 'JobWithdrawn':
        withdrawn ??= e.data as EventData<'JobWithdrawn'>;
        break;
      case 'JobPlaced': {
        const d = e.data as EventData<'JobPlaced'>;
        if (!attempts.has(d.attemptId)) attempts.set(d.attemptId, { placed: d, held: new Set(), finished: new Map(), released: new Set() });
        break;
      }
      case 'ComputeHeld': {
        const d = e.data as EventData<'ComputeHeld'>;
        attempts.get(d.attemptId)?.held.add(d.nodeId);
        break;
      }
      case 'JobFinished': {
        const d = e.data as EventData<'JobFinished'>;
        const a = attempts.get(d.attemptId);
        if (a && !a.finished.has(d.nodeId)) a.finished.set(d.nodeId, d);
        break;
      }
      case 'ComputeReleased': {
        const d = e.data as EventData<'ComputeReleased'>;
        attempts.get(d.attemptId)?.released.add(d.nodeId);
        break;
      }
      case 'OutputsStored':
        outputs = e.data as EventData<'OutputsStored'>;
        break;
      case 'UsageRecorded': {
        const d = e.data as EventData<'UsageRecorded'>;
        usage.set(partKey(d.attemptId, d.nodeId), d);
        break;
      }
    }
  }

  if (!submitted && !rejected) return { kind: 'not_over', why: 'no JobSubmitted recorded for the job' };
  const team = submitted?.team ?? rejected!.team;
  const lost = lostParts(nodeLosses);
  const ordered = [...attempts.values()].sort((a, b) => a.placed.attempt - b.placed.attempt);
  const ends = ordered.map((a) => attemptEnd(a, lost));

  // Which fact ends the job, if one does.
  let end: { outcome: JobEndedData['outcome']; reason?: string | undefined } | undefined;
  if (rejected) end = { outcome: 'rejected', reason: rejected.message };
  else if (stagingFailed) end = { outcome: 'failed', reason: stagingFailed.message };
  else if (withdrawn) end = { outcome: withdrawn.outcome, reason: withdrawn.message };
  else {
    const last = ends.at(-1);
    if (last === undefined) return { kind: 'not_over', why: ordered.length === 0 ? 'never placed yet' : 'its attempt is still running' };
    if (last.outcome === 'node_lost') return { kind: 'not_over', why: 'its attempt was lost with its node: placement requeues or withdraws it' };
    const history = ends.map((x) => ({ outcome: x!.outcome, exitCode: x!.exitCode }));
    if (retriesAfter(submitted?.spec.retry, history)) return { kind: 'not_over', why: 'its attempt failed in a way its retry policy retries: placement requeues or withdraws it' };
    end = { outcome: last.outcome, reason: last.outcome === 'completed' ? undefined : last.message };
  }

  // Nothing more may happen: every part released (or lost with its node), every finished hold billed.
  for (const a of ordered) {
    for (const part of gangParts(a.placed)) {
      const key = partKey(a.placed.attemptId, part.nodeId);
      if (!a.released.has(part.nodeId) && !lost.has(key)) return { kind: 'not_over', why: `attempt ${a.placed.attemptId} on ${part.nodeId} has not released its GPUs` };
      if (a.held.has(part.nodeId) && a.finished.has(part.nodeId) && !usage.has(key)) return { kind: 'not_over', why: `attempt ${a.placed.attemptId} on ${part.nodeId} has no usage line yet` };
    }
  }

  const lastEnd = ends.at(-1);
  const ended: Omit<JobEndedData, 'endedAt'> = {
    jobId: submitted?.jobId ?? rejected!.jobId,
    team,
    outcome: end.outcome,
    attempts: ordered.length,
    billed: billedOf(usage.values()),
    outputs: outputs ? { files: outputs.files, totalBytes: outputs.totalBytes, rejected: (outputs.rejected ?? []).length } : null,
  };
  if (end.reason !== undefined) ended.reason = end.reason.slice(0, 2000);
  if (lastEnd !== undefined && lastEnd.exitCode !== undefined) ended.exitCode = lastEnd.exitCode;
  return { kind: 'over', ended };
}

/** The nodes whose NodeLost events the job's facts need: every node of every placed attempt. */
export function nodesOfAttempts(events: readonly JobFact[]): string[] {
  const nodes = new Set<string>();
  for (const e of events) if (e.type === 'JobPlaced') for (const p of gangParts(e.data as EventData<'JobPlaced'>)) nodes.add(p.nodeId);
  return [...nodes];
}

/** Sum of the job's usage lines: billable ms, and the amount per currency (sorted by currency). */
export function billedOf(lines: Iterable<EventData<'UsageRecorded'>>): JobEndedData['billed'] {
  let billableMs = 0;
  const totals = new Map<string, number>();
  for (const l of lines) {
    billableMs += l.billableMs;
    totals.set(l.currency, (totals.get(l.currency) ?? 0) + l.amountMicros);
  }
  return { billableMs, totals: [...totals].sort(([a], [b]) => a.localeCompare(b)).map(([currency, amountMicros]) => ({ currency, amountMicros })) };
}

function partKey(attemptId: string, nodeId: string): string {
  return `${attemptId}@${nodeId}`;
}

/** Every (attempt, node) a NodeLost declared lost: those attempts ended `node_lost` for placement. */
function lostParts(nodeLosses: readonly EventData<'NodeLost'>[]): Set<string> {
  const out = new Set<string>();
  for (const l of nodeLosses) for (const a of l.affectedAttempts) out.add(partKey(a.attemptId, l.nodeId));
  return out;
}

/**
 * How an attempt ended, as placement sees it: `node_lost` when a NodeLost listed it (placement
 * ends it so at once, whatever its parts report later), else the parts' verdict once every part
 * reported its JobFinished; undefined while it runs.
 */
function attemptEnd(a: AttemptFacts, lost: ReadonlySet<string>): AttemptEnd | undefined {
  const parts = gangParts(a.placed);
  if (parts.some((p) => lost.has(partKey(a.placed.attemptId, p.nodeId)))) return { outcome: 'node_lost' };
  const verdict = gangOutcome(parts, [...a.finished.values()]);
  if (!verdict) return undefined;
  const decider = a.finished.get(verdict.decidedBy);
  return {
    outcome: verdict.outcome,
    exitCode: decider?.exitCode ?? null,
    ...(decider?.message !== undefined ? { message: decider.message } : verdict.outcome === 'timeout' ? { message: 'stopped at its time limit' } : {}),
  };
}
