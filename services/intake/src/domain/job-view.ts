/**
 * The job read model: every event of a job, from every service, folded into the contracts'
 * `JobView`. Pure: no I/O, no clock; the event carries its own time.
 *
 * States: submitted → staged (InputsStaged) → placed (JobPlaced) → running (JobStarted) →
 * finishing (JobFinished: outputs being stored, GPUs being released) → final at the attempt's
 * ComputeReleased, where the state becomes the attempt's outcome. Other ways to a final state:
 * JobRejected (`rejected`), StagingFailed (`failed`), JobWithdrawn (its outcome: `cancelled` or
 * `deadline`, the job never ran). An attempt that ended `node_lost` is not final: placement
 * requeues the job (JobRequeued → `staged`), whichever of its ComputeReleased and the requeue
 * lands first. A final state is never left; later events only extend the timeline. The ledger's
 * JobEnded, recorded once nothing more happens to the job, sets the final state (its outcome) and
 * `ended` (when, and what was billed).
 */
import {
  FINAL_JOB_STATES,
  gangOutcome,
  retriesAfter,
  type AttemptView,
  type EventData,
  type JobState,
  type JobSummary,
  type JobView,
} from '#contracts';

/** What the fold needs of a recorded event. */
export interface JobEvent {
  type: string;
  data: unknown;
  /** Global store position: events are applied in this order, each once. */
  position: bigint;
  metadata: { occurredAt: string; jobId?: string | undefined };
}

/** A job's view plus what the read side needs to order and deduplicate. */
export interface JobRecord {
  readonly view: JobView;
  /** Position of the job's JobSubmitted: submit order, newest first in lists. */
  readonly submittedPosition: bigint;
  /** Position of the last event applied; an event at or before it is a replay and changes nothing. */
  readonly lastPosition: bigint;
}

const FINAL = new Set<JobState>(FINAL_JOB_STATES);

/** Whether a state is one a job never leaves. */
export function isFinalState(state: JobState): boolean {
  return FINAL.has(state);
}

/** The field holding the time an event states, by type; other types use `metadata.occurredAt`. */
const TIME_FIELD: Readonly<Record<string, string>> = {
  JobSubmitted: 'submittedAt',
  JobRejected: 'rejectedAt',
  JobCancelRequested: 'requestedAt',
  InputsStaged: 'stagedAt',
  StagingFailed: 'failedAt',
  JobPlaced: 'placedAt',
  ComputeHeld: 'heldAt',
  JobStarted: 'startedAt',
  JobCheckpointed: 'checkpointedAt',
  JobFinished: 'finishedAt',
  JobRequeued: 'requeuedAt',
  JobWithdrawn: 'withdrawnAt',
  JobQuoted: 'quotedAt',
  ComputeReleased: 'releasedAt',
  OutputsStored: 'storedAt',
  DataRemoved: 'removedAt',
  UsageRecorded: 'recordedAt',
  JobEnded: 'endedAt',
};

/** The time an event states: its own time field (agent clock for agent events), else when it was produced. */
export function eventTime(event: Pick<JobEvent, 'type' | 'data' | 'metadata'>): string {
  const field = TIME_FIELD[event.type];
  const value = field === undefined ? undefined : asRecord(event.data)[field];
  return typeof value === 'string' ? value : event.metadata.occurredAt;
}

/** The job an event concerns: `metadata.jobId`, else `data.jobId`; undefined for events of no single job. */
export function jobIdOf(event: Pick<JobEvent, 'data' | 'metadata'>): string | undefined {
  if (event.metadata.jobId) return event.metadata.jobId;
  const id = asRecord(event.data).jobId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Applies one event of a job to its record. Returns the record unchanged for an event already
 * applied (position not beyond `lastPosition`), and undefined for events of a job whose
 * JobSubmitted was not seen (nothing to show without the spec and team).
 */
export function evolveJob(record: JobRecord | undefined, event: JobEvent): JobRecord | undefined {
  if (record === undefined) {
    return event.type === 'JobSubmitted' ? submitted(event.data as EventData<'JobSubmitted'>, event) : undefined;
  }
  if (event.position <= record.lastPosition) return record;
  const at = eventTime(event);
  const base: JobView = {
    ...record.view,
    updatedAt: at,
    timeline: [...record.view.timeline, timelineEntry(event.type, at, event.data)],
  };
  const view = applyChange(base, event);
  return { view, submittedPosition: record.submittedPosition, lastPosition: event.position };
}

/** Folds events (in position order) into records by job id. */
export function foldJobs(events: Iterable<JobEvent>, into: Map<string, JobRecord> = new Map()): Map<string, JobRecord> {
  for (const event of events) {
    const jobId = jobIdOf(event);
    if (jobId === undefined) continue;
    const next = evolveJob(into.get(jobId), event);
    if (next !== undefined) into.set(jobId, next);
  }
  return into;
}

/** One line of a job list. */
export function toSummary(view: JobView): JobSummary {
  const summary: JobSummary = {
    jobId: view.jobId,
    team: view.team,
    state: view.state,
    gpus: view.spec.request.gpus,
    submittedAt: view.submittedAt,
    updatedAt: view.updatedAt,
  };
  if (view.name !== undefined) summary.name = view.name;
  if (view.outcome !== undefined) summary.outcome = view.outcome;
  if (view.spec.request.gpuModel !== undefined) summary.gpuModel = view.spec.request.gpuModel;
  const last = view.attempts.at(-1);
  if (last !== undefined) summary.nodeId = last.nodeId;
  return summary;
}

function submitted(data: EventData<'JobSubmitted'>, event: JobEvent): JobRecord {
  const view: JobView = {
    jobId: data.jobId,
    team: data.team,
    state: 'submitted',
    cancelRequested: false,
    spec: data.spec,
    submittedAt: data.submittedAt,
    updatedAt: data.submittedAt,
    attempts: [],
    timeline: [{ type: 'JobSubmitted', at: data.submittedAt }],
  };
  if (data.spec.name !== undefined) view.name = data.spec.name;
  if (data.deadlineAt !== undefined) view.deadlineAt = data.deadlineAt;
  if (data.quote !== undefined) view.quote = { ...data.quote };
  return { view, submittedPosition: event.position, lastPosition: event.position };
}

function timelineEntry(type: string, at: string, data: unknown): JobView['timeline'][number] {
  const attemptId = asRecord(data).attemptId;
  return typeof attemptId === 'string' ? { type, at, attemptId } : { type, at };
}

/** The state change an event makes, if any; `view` already has the timeline and updatedAt. */
function applyChange(view: JobView, event: JobEvent): JobView {
  const final = isFinalState(view.state);
  switch (event.type) {
    case 'JobRejected': {
      if (final) return view;
      const d = event.data as EventData<'JobRejected'>;
      return { ...view, state: 'rejected', rejection: { reason: d.reason, message: d.message, issues: d.issues } };
    }
    case 'JobCancelRequested':
      return { ...view, cancelRequested: true };
    case 'JobQuoted': {
      const d = event.data as EventData<'JobQuoted'>;
      return view.quote !== undefined ? view : { ...view, quote: { expectedStart: d.expectedStart, quotedAt: d.quotedAt } };
    }
    case 'InputsStaged':
      return !final && view.state === 'submitted' ? { ...view, state: 'staged' } : view;
    case 'StagingFailed':
      return final ? view : { ...view, state: 'failed' };
    case 'JobPlaced': {
      if (final) return view;
      const d = event.data as EventData<'JobPlaced'>;
      const attempt: AttemptView = {
        attemptId: d.attemptId,
        attempt: d.attempt,
        nodeId: d.nodeId,
        gpuIndices: d.gpuIndices,
        gpuModel: d.gpuModel,
        placedAt: d.placedAt,
        ...(d.predictedRunMs !== undefined ? { predictedRunMs: d.predictedRunMs } : {}),
        ...(d.deadlineNote !== undefined ? { deadlineNote: d.deadlineNote } : {}),
        ...(d.nodes !== undefined ? { nodes: d.nodes.map((n) => ({ nodeId: n.nodeId, gpuIndices: n.gpuIndices })) } : {}),
      };
      // The first quote stands; a JobPlaced repeats it (and is the only record of a quote given before JobQuoted existed).
      const quote = view.quote ?? (d.quote !== undefined ? { ...d.quote } : undefined);
      return { ...view, state: 'placed', attempts: [...view.attempts.filter((a) => a.attemptId !== d.attemptId), attempt], ...(quote ? { quote } : {}) };
    }
    case 'ComputeHeld': {
      const d = event.data as EventData<'ComputeHeld'>;
      const gang = patchPart(view, d.attemptId, d.nodeId, { heldAt: d.heldAt });
      // A gang's hold starts with its first part's.
      if (gang) return gang.attempt.heldAt === undefined ? patchAttempt(gang.view, d.attemptId, { heldAt: d.heldAt }) : gang.view;
      return patchAttempt(view, d.attemptId, { heldAt: d.heldAt });
    }
    case 'JobStarted': {
      const d = event.data as EventData<'JobStarted'>;
      const started = view.attempts.find((a) => a.attemptId === d.attemptId)?.startedAt;
      const next = started === undefined ? patchAttempt(view, d.attemptId, { startedAt: d.startedAt }) : view;
      return !final && isCurrentAttempt(view, d.attemptId) ? { ...next, state: 'running' } : next;
    }
    case 'JobFinished': {
      const d = event.data as EventData<'JobFinished'>;
      let patch: Partial<AttemptView> = {
        finishedAt: d.finishedAt,
        outcome: d.outcome,
        exitCode: d.exitCode,
        ...(d.limit !== undefined && { limit: d.limit }),
        ...(d.message !== undefined && { message: d.message }),
      };
      let next: JobView;
      const gang = patchPart(view, d.attemptId, d.nodeId, { finishedAt: d.finishedAt, outcome: d.outcome, exitCode: d.exitCode, ...(d.peerEnded !== undefined ? { peerEnded: d.peerEnded } : {}) });
      if (gang) {
        // A gang's attempt ends with its last part; the parts that ended on their own decide how.
        const parts = gang.attempt.nodes!;
        const verdict = gangOutcome(
          parts.map((p, rank) => ({ nodeId: p.nodeId, gpuIndices: p.gpuIndices, rank })),
          parts.filter((p) => p.outcome !== undefined).map((p) => ({ nodeId: p.nodeId, outcome: p.outcome!, ...(p.peerEnded !== undefined ? { peerEnded: p.peerEnded } : {}) })),
        );
        if (!verdict || gang.attempt.outcome !== undefined) return gang.view;
        patch = { finishedAt: d.finishedAt, outcome: verdict.outcome, exitCode: parts.find((p) => p.nodeId === verdict.decidedBy)?.exitCode ?? null };
        next = patchAttempt(gang.view, d.attemptId, patch);
      } else next = patchAttempt(view, d.attemptId, patch);
      if (final || !isCurrentAttempt(view, d.attemptId)) return next;
      return { ...next, state: 'finishing', outcome: patch.outcome!, exitCode: patch.exitCode ?? null, limit: patch.limit };
    }
    case 'ComputeReleased': {
      const d = event.data as EventData<'ComputeReleased'>;
      const gang = patchPart(view, d.attemptId, d.nodeId, { releasedAt: d.releasedAt });
      // A gang's GPUs are all free only with its last part's release.
      if (gang && gang.attempt.nodes!.some((p) => p.releasedAt === undefined)) return gang.view;
      const next = patchAttempt(gang?.view ?? view, d.attemptId, { releasedAt: d.releasedAt });
      const attempt = next.attempts.find((a) => a.attemptId === d.attemptId);
      // Only the current attempt's release ends the job, once it finished; a lost node's attempt waits for placement's requeue.
      if (final || !isCurrentAttempt(view, d.attemptId) || attempt?.outcome === undefined || attempt.outcome === 'node_lost') return next;
      // A failure the spec's retry policy retries is not the end: placement requeues the job (reason retry).
      if (retriesAfter(view.spec.retry, next.attempts.filter((a) => a.outcome !== undefined).map((a) => ({ outcome: a.outcome!, exitCode: a.exitCode })))) return next;
      return { ...next, state: attempt.outcome };
    }
    case 'JobRequeued':
      return final ? view : { ...view, state: 'staged' };
    case 'JobWithdrawn': {
      if (final) return view;
      const d = event.data as EventData<'JobWithdrawn'>;
      return { ...view, state: d.outcome, outcome: d.outcome };
    }
    case 'JobEnded': {
      // The ledger's word that nothing more happens to the job: its outcome is the final state,
      // whatever the view had made of the events before (it is recorded after all of them).
      const d = event.data as EventData<'JobEnded'>;
      const next: JobView = { ...view, state: d.outcome, ended: { endedAt: d.endedAt, billed: d.billed } };
      if (d.outcome !== 'rejected') next.outcome = d.outcome;
      if (d.exitCode !== undefined) next.exitCode = d.exitCode;
      return next;
    }
    case 'OutputsStored': {
      const d = event.data as EventData<'OutputsStored'>;
      // Events recorded before `rejected` existed have none (the fold reads stored data as it is).
      const rejected = (d as { rejected?: typeof d.rejected }).rejected ?? [];
      return { ...view, outputs: { files: d.files, totalBytes: d.totalBytes, truncated: d.truncated, ...(rejected.length > 0 ? { rejected } : {}) } };
    }
    default:
      return view;
  }
}

function isCurrentAttempt(view: JobView, attemptId: string): boolean {
  return view.attempts.at(-1)?.attemptId === attemptId;
}

function patchAttempt(view: JobView, attemptId: string, patch: Partial<AttemptView>): JobView {
  if (!view.attempts.some((a) => a.attemptId === attemptId)) return view;
  return { ...view, attempts: view.attempts.map((a) => (a.attemptId === attemptId ? { ...a, ...patch } : a)) };
}

/** Patches one part of a multi-node attempt; undefined when the attempt is not a gang (or unknown). */
function patchPart(view: JobView, attemptId: string, nodeId: string, patch: Partial<NonNullable<AttemptView['nodes']>[number]>): { view: JobView; attempt: AttemptView } | undefined {
  const attempt = view.attempts.find((a) => a.attemptId === attemptId);
  if (!attempt?.nodes?.some((p) => p.nodeId === nodeId)) return undefined;
  const next: AttemptView = { ...attempt, nodes: attempt.nodes.map((p) => (p.nodeId === nodeId ? { ...p, ...patch } : p)) };
  return { view: { ...view, attempts: view.attempts.map((a) => (a.attemptId === attemptId ? next : a)) }, attempt: next };
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}
