/**
 * The audit projection: one record per job folded from every service's events (intake, storage,
 * placement, the agents, the ledger), and the answers compliance asks of it: what ran, how long,
 * on what, what came back, what it cost. Pure: events in, records out; no store, no clock.
 */
import {
  AUDIT_OUTCOMES,
  gangOutcome,
  type AuditAttempt,
  type AuditDurations,
  type AuditJobReport,
  type AuditJobsFilter,
  type AuditJobSummary,
  type AuditOutcome,
  type AuditTimelineEntry,
  type JobOutcome,
  type JobSpec,
  type OutputFile,
  type UsageRecorded,
} from '#contracts';
import { canonicalJson } from '#event-store';
import { createHash } from 'node:crypto';

/** The part of a recorded event the projection reads (a RecordedEvent fits). */
export interface AuditSourceEvent {
  streamId: string;
  revision: bigint;
  position: bigint;
  eventId: string;
  type: string;
  data: unknown;
  metadata: { jobId?: string; producer: string; occurredAt: string };
  recordedAt: string;
}

interface NodePart {
  heldAt?: string;
  gpus?: number;
  startedAt?: string;
  work?: { kind: 'script' | 'container'; digest: string; runtime?: string };
  finishedAt?: string;
  releasedAt?: string;
  outcome?: JobOutcome;
  exitCode?: number | null;
  /** The node whose part ended first, when this part was stopped for it (JobFinished.peerEnded). */
  peerEnded?: string;
}

interface AttemptState {
  attemptId: string;
  attempt: number;
  nodeId: string;
  nodes: { nodeId: string; gpuIndices: number[] }[];
  gpuIndices: number[];
  gpuModel: string;
  placedAt: string;
  parts: Map<string, NodePart>;
}

interface OutputsState {
  attemptId: string;
  files: OutputFile[];
  totalBytes: number;
  truncated: boolean;
  logs: { stream: string; sha256: string; size: number }[];
  storedAt: string;
}

/** Everything the store says about one job, as folded so far. */
export interface JobAuditState {
  jobId: string;
  team?: string;
  name?: string;
  submittedAt?: string;
  submittedBy?: string;
  spec?: JobSpec;
  stagedAt?: string;
  inputs: { name: string; sha256: string; size: number }[];
  stagingFailed?: string;
  rejected?: string;
  withdrawn?: { outcome: 'cancelled' | 'deadline'; at: string };
  /** The job's JobEnded: its outcome is the job's. */
  ended?: { outcome: string; at: string; eventId: string };
  requeues: { at: string; nextAttempt: number }[];
  attempts: AttemptState[];
  outputs: OutputsState[];
  usage: UsageRecorded[];
  /** What ran, as the last agent that recorded it (JobStarted.work) said. */
  work?: { kind: 'script' | 'container'; digest: string; runtime?: string };
  timeline: AuditTimelineEntry[];
  /** False in the long-lived projection: lists need no timeline, and one job's audit reads its events from the store. */
  keepTimeline: boolean;
  /** Position of the last event folded in. */
  lastPosition: bigint;
}

/** The job an event belongs to: `data.jobId`, else the metadata's. Undefined for events of no job. */
export function jobIdOf(e: AuditSourceEvent): string | undefined {
  const d = e.data as { jobId?: unknown } | null;
  if (d && typeof d.jobId === 'string') return d.jobId;
  return e.metadata.jobId;
}

/** The jobs an event concerns: its job, or every job of the attempts a NodeLost lists. */
export function jobIdsOf(e: AuditSourceEvent): string[] {
  if (e.type === 'NodeLost') return [...new Set(lostAttempts(e).map((a) => a.jobId))];
  const one = jobIdOf(e);
  return one === undefined ? [] : [one];
}

function lostAttempts(e: AuditSourceEvent): { jobId: string; attemptId: string }[] {
  const list = (e.data as { affectedAttempts?: unknown } | null)?.affectedAttempts;
  return Array.isArray(list) ? (list as { jobId: string; attemptId: string }[]).filter((a) => typeof a?.jobId === 'string') : [];
}

export function emptyJobAudit(jobId: string, options: { timeline?: boolean } = {}): JobAuditState {
  return { jobId, inputs: [], requeues: [], attempts: [], outputs: [], usage: [], timeline: [], keepTimeline: options.timeline ?? true, lastPosition: 0n };
}

type Data = Record<string, unknown>;
const str = (d: Data, k: string): string | undefined => (typeof d[k] === 'string' ? (d[k] as string) : undefined);

/** Folds one event of the job into its record (events of other jobs or already folded are ignored). */
export function evolveJobAudit(state: JobAuditState, e: AuditSourceEvent): JobAuditState {
  if (e.position <= state.lastPosition || !jobIdsOf(e).includes(state.jobId)) return state;
  state.lastPosition = e.position;
  const d = (e.data ?? {}) as Data;
  const attemptId = str(d, 'attemptId') ?? (e.type === 'NodeLost' ? lostAttempts(e).find((a) => a.jobId === state.jobId)?.attemptId : undefined);
  const nodeId = str(d, 'nodeId');
  if (state.keepTimeline) state.timeline.push({
    position: e.position.toString(),
    streamId: e.streamId,
    revision: e.revision.toString(),
    eventId: e.eventId,
    type: e.type,
    producer: e.metadata.producer,
    at: e.metadata.occurredAt,
    recordedAt: e.recordedAt,
    ...(attemptId ? { attemptId } : {}),
    ...(nodeId ? { nodeId } : {}),
  });

  const part = (): NodePart | undefined => {
    const a = state.attempts.find((x) => x.attemptId === attemptId);
    if (!a || !nodeId) return undefined;
    let p = a.parts.get(nodeId);
    if (!p) a.parts.set(nodeId, (p = {}));
    return p;
  };

  switch (e.type) {
    case 'JobSubmitted': {
      state.team = str(d, 'team');
      state.submittedAt = str(d, 'submittedAt');
      const by = str(d, 'submittedBy');
      if (by) state.submittedBy = by;
      state.spec = d.spec as JobSpec;
      const name = (d.spec as { name?: unknown } | undefined)?.name;
      if (typeof name === 'string') state.name = name;
      break;
    }
    case 'JobRejected':
      state.team ??= str(d, 'team');
      state.rejected = str(d, 'rejectedAt') ?? e.metadata.occurredAt;
      break;
    case 'InputsStaged':
      state.stagedAt = str(d, 'stagedAt');
      state.inputs = ((d.inputs ?? []) as { name: string; sha256: string; size: number }[]).map((i) => ({ name: i.name, sha256: i.sha256, size: i.size }));
      break;
    case 'StagingFailed':
      state.stagingFailed = str(d, 'failedAt') ?? e.metadata.occurredAt;
      break;
    case 'JobWithdrawn':
      state.withdrawn = { outcome: d.outcome as 'cancelled' | 'deadline', at: str(d, 'withdrawnAt') ?? e.metadata.occurredAt };
      break;
    case 'JobEnded':
      state.ended ??= { outcome: str(d, 'outcome') ?? 'open', at: str(d, 'endedAt') ?? e.metadata.occurredAt, eventId: e.eventId };
      break;
    case 'JobRequeued':
      state.requeues.push({ at: str(d, 'requeuedAt') ?? e.metadata.occurredAt, nextAttempt: d.nextAttempt as number });
      break;
    case 'JobPlaced': {
      if (!attemptId || state.attempts.some((a) => a.attemptId === attemptId)) break;
      const gpuIndices = (d.gpuIndices ?? []) as number[];
      const nodes = (d.nodes as { nodeId: string; gpuIndices: number[] }[] | undefined) ?? [{ nodeId: nodeId!, gpuIndices }];
      state.attempts.push({
        attemptId,
        attempt: d.attempt as number,
        nodeId: nodeId!,
        nodes: nodes.map((n) => ({ nodeId: n.nodeId, gpuIndices: [...n.gpuIndices] })),
        gpuIndices,
        gpuModel: str(d, 'gpuModel') ?? '',
        placedAt: str(d, 'placedAt') ?? e.metadata.occurredAt,
        parts: new Map(),
      });
      break;
    }
    case 'ComputeHeld': {
      const p = part();
      if (p) {
        p.heldAt = str(d, 'heldAt');
        p.gpus = d.gpus as number;
      }
      break;
    }
    case 'JobStarted': {
      const p = part();
      if (p) p.startedAt = str(d, 'startedAt');
      const work = d.work as { kind: 'script' | 'container'; digest: string; runtime?: string } | undefined;
      if (work && typeof work.digest === 'string') {
        state.work = { kind: work.kind, digest: work.digest, ...(work.runtime ? { runtime: work.runtime } : {}) };
        if (p) p.work = state.work;
      }
      break;
    }
    case 'JobFinished': {
      const p = part();
      if (p) {
        p.finishedAt = str(d, 'finishedAt');
        p.outcome = d.outcome as JobOutcome;
        p.exitCode = (d.exitCode as number | null | undefined) ?? null;
        const peer = str(d, 'peerEnded');
        if (peer !== undefined) p.peerEnded = peer;
      }
      break;
    }
    case 'ComputeReleased': {
      const p = part();
      if (p) p.releasedAt = str(d, 'releasedAt');
      break;
    }
    case 'OutputsStored':
      state.outputs.push({
        attemptId: attemptId ?? '',
        files: ((d.files ?? []) as OutputFile[]).map((f) => ({ path: f.path, sha256: f.sha256, size: f.size })),
        totalBytes: d.totalBytes as number,
        truncated: d.truncated === true,
        logs: ((d.logs ?? []) as { stream: string; sha256: string; size: number }[]).map((l) => ({ stream: l.stream, sha256: l.sha256, size: l.size })),
        storedAt: str(d, 'storedAt') ?? e.metadata.occurredAt,
      });
      break;
    case 'UsageRecorded': {
      const line = d as unknown as UsageRecorded;
      // One line per attempt per node: each part of a multi-node gang is billed on its own.
      if (!state.usage.some((u) => u.attemptId === line.attemptId && u.nodeId === line.nodeId)) state.usage.push(line);
      break;
    }
    default:
      break;
  }
  return state;
}

/** Folds events (of any jobs, in position order) into records by job; `timeline: false` keeps no timelines (lists only). */
export function foldJobAudits(events: Iterable<AuditSourceEvent>, into: Map<string, JobAuditState> = new Map(), options: { timeline?: boolean } = {}): Map<string, JobAuditState> {
  for (const e of events) {
    for (const jobId of jobIdsOf(e)) {
      let s = into.get(jobId);
      if (!s) into.set(jobId, (s = emptyJobAudit(jobId, options)));
      evolveJobAudit(s, e);
    }
  }
  return into;
}

// ── answers ────────────────────────────────────────────────────────────────────────────────

const msOf = (iso: string | undefined): number | undefined => (iso === undefined ? undefined : Date.parse(iso));

/** `to − from` in whole ms, 0 when negative (clocks of two machines); undefined unless both are known. */
function span(from: string | undefined, to: string | undefined): number | undefined {
  const a = msOf(from);
  const b = msOf(to);
  if (a === undefined || b === undefined || Number.isNaN(a) || Number.isNaN(b)) return undefined;
  return Math.max(0, b - a);
}

function add(acc: Partial<Record<keyof AuditDurations, number>>, key: keyof AuditDurations, ms: number | undefined): void {
  if (ms === undefined) return;
  acc[key] = (acc[key] ?? 0) + ms;
}

/** The attempt's times: earliest hold, the rank-0 node's start / finish / outcome, the latest release. */
function attemptTimes(a: AttemptState): {
  heldAt?: string;
  startedAt?: string;
  finishedAt?: string;
  releasedAt?: string;
  outcome?: JobOutcome;
  exitCode?: number | null;
  workDigest?: string;
  gpus: number;
} {
  const parts = [...a.parts.values()];
  const lead = a.parts.get(a.nodeId) ?? parts[0];
  const earliest = (xs: (string | undefined)[]) => xs.filter((x): x is string => x !== undefined).sort()[0];
  const latest = (xs: (string | undefined)[]) => xs.filter((x): x is string => x !== undefined).sort().at(-1);
  // The attempt's outcome is the one every service reads (contracts/gang.ts): decided once every part ended.
  const ends = a.nodes.flatMap(({ nodeId }) => {
    const p = a.parts.get(nodeId);
    return p?.outcome === undefined ? [] : [{ nodeId, outcome: p.outcome, ...(p.peerEnded !== undefined ? { peerEnded: p.peerEnded } : {}) }];
  });
  const verdict = gangOutcome(
    a.nodes.map((n, rank) => ({ ...n, rank })),
    ends,
  );
  const decider = verdict && a.parts.get(verdict.decidedBy);
  const out: ReturnType<typeof attemptTimes> = { gpus: parts.reduce((n, p) => n + (p.gpus ?? 0), 0) };
  const heldAt = earliest(parts.map((p) => p.heldAt));
  const startedAt = lead?.startedAt ?? earliest(parts.map((p) => p.startedAt));
  const finishedAt = lead?.finishedAt ?? latest(parts.map((p) => p.finishedAt));
  // Released when every node that held GPUs let them go.
  const releasedAt = parts.every((p) => p.heldAt === undefined || p.releasedAt !== undefined) ? latest(parts.map((p) => p.releasedAt)) : undefined;
  if (heldAt) out.heldAt = heldAt;
  if (startedAt) out.startedAt = startedAt;
  if (finishedAt) out.finishedAt = finishedAt;
  if (releasedAt) out.releasedAt = releasedAt;
  if (verdict) out.outcome = verdict.outcome;
  const work = lead?.work ?? parts.find((p) => p.work)?.work;
  if (work) out.workDigest = work.digest;
  if (decider?.exitCode !== undefined) out.exitCode = decider.exitCode;
  return out;
}

function attemptDurations(s: JobAuditState, a: AttemptState): AuditDurations {
  const t = attemptTimes(a);
  const stored = s.outputs.find((o) => o.attemptId === a.attemptId);
  const d: Partial<Record<keyof AuditDurations, number>> = {};
  add(d, 'stagingMs', span(a.placedAt, t.heldAt));
  add(d, 'heldMs', span(t.heldAt, t.finishedAt));
  add(d, 'runningMs', span(t.startedAt, t.finishedAt));
  add(d, 'outputMs', stored ? span(t.finishedAt, stored.storedAt) : undefined);
  add(d, 'releaseMs', span(stored?.storedAt ?? t.finishedAt, t.releasedAt));
  return d;
}

/** The job's phase durations, summed over its attempts (see `AuditDurations` for each phase). */
export function jobDurations(s: JobAuditState): AuditDurations {
  const d: Partial<Record<keyof AuditDurations, number>> = {};
  add(d, 'stagingMs', span(s.submittedAt, s.stagedAt));
  const first = s.attempts.find((a) => a.attempt === 1) ?? s.attempts[0];
  add(d, 'queuedMs', span(s.stagedAt, first?.placedAt ?? s.withdrawn?.at));
  for (const r of s.requeues) {
    const next = s.attempts.find((a) => a.attempt === r.nextAttempt);
    add(d, 'queuedMs', span(r.at, next?.placedAt ?? s.withdrawn?.at));
  }
  for (const a of s.attempts) {
    const ad = attemptDurations(s, a);
    for (const k of Object.keys(ad) as (keyof AuditDurations)[]) add(d, k, ad[k]);
  }
  return d;
}

/** How the job ended (or `open`). */
export function jobOutcome(s: JobAuditState): AuditOutcome {
  if (s.rejected) return 'rejected';
  if (s.stagingFailed) return 'staging_failed';
  // The ledger's word, once recorded: it also settles what the attempts alone cannot (a lost attempt withdrawn).
  if (s.ended && (AUDIT_OUTCOMES as readonly string[]).includes(s.ended.outcome)) return s.ended.outcome as AuditOutcome;
  const last = [...s.attempts].sort((a, b) => a.attempt - b.attempt).at(-1);
  const requeuedAfterLast = last !== undefined && s.requeues.some((r) => r.nextAttempt > last.attempt);
  if (s.withdrawn && (!last || requeuedAfterLast)) return s.withdrawn.outcome;
  if (!last || requeuedAfterLast) return 'open';
  const t = attemptTimes(last);
  // A lost attempt that was requeued is not the end; one not (yet) requeued is reported as lost.
  return t.outcome ?? (s.withdrawn ? s.withdrawn.outcome : 'open');
}

function totalsOf(lines: readonly UsageRecorded[]): { totals: { currency: string; amountMicros: number }[]; billableMs: number } {
  const byCurrency = new Map<string, number>();
  let billableMs = 0;
  for (const l of lines) {
    byCurrency.set(l.currency, (byCurrency.get(l.currency) ?? 0) + l.amountMicros);
    billableMs += l.billableMs;
  }
  return { totals: [...byCurrency].map(([currency, amountMicros]) => ({ currency, amountMicros })), billableMs };
}

/** sha256 of the spec as canonical JSON (keys sorted at every level): the same spec, the same digest, whatever stored it. */
export function specDigest(spec: unknown): string {
  return createHash('sha256').update(canonicalJson(spec)).digest('hex');
}

const RECORDED_NOTE =
  '`workDigest` is what the agent ran (JobStarted.work: the script file\'s sha256, or the image digest the runtime resolved); `specSha256` is what was submitted and `inputs` the bytes storage verified.';

const DERIVED_NOTE =
  'No execution event records a work digest for this job: `specSha256` identifies the submitted spec (script or image reference, command, env) and ' +
  '`inputs` the bytes storage verified; together they say what was asked to run, not what the agent executed.';

/** Whether the job has been submitted (a record built only from other services' events has no team). */
export function isSubmitted(s: JobAuditState): s is JobAuditState & { team: string; submittedAt: string; spec: JobSpec } {
  return s.team !== undefined && s.submittedAt !== undefined && s.spec !== undefined;
}

export function jobReport(s: JobAuditState & { team: string; submittedAt: string; spec: JobSpec }): AuditJobReport {
  const attempts: AuditAttempt[] = [...s.attempts]
    .sort((a, b) => a.attempt - b.attempt)
    .map((a) => {
      const t = attemptTimes(a);
      return {
        attemptId: a.attemptId,
        attempt: a.attempt,
        nodeId: a.nodeId,
        nodes: a.nodes,
        gpuIndices: a.gpuIndices,
        gpuModel: a.gpuModel,
        gpus: t.gpus,
        placedAt: a.placedAt,
        ...(t.heldAt ? { heldAt: t.heldAt } : {}),
        ...(t.startedAt ? { startedAt: t.startedAt } : {}),
        ...(t.finishedAt ? { finishedAt: t.finishedAt } : {}),
        ...(t.releasedAt ? { releasedAt: t.releasedAt } : {}),
        ...(t.outcome ? { outcome: t.outcome } : {}),
        ...(t.exitCode !== undefined ? { exitCode: t.exitCode } : {}),
        ...(t.workDigest ? { workDigest: t.workDigest } : {}),
        durations: attemptDurations(s, a),
      };
    });
  const lastOutputs = s.outputs.at(-1);
  const cost = totalsOf(s.usage);
  return {
    jobId: s.jobId,
    team: s.team,
    ...(s.name ? { name: s.name } : {}),
    submittedAt: s.submittedAt,
    ...(s.submittedBy ? { submittedBy: s.submittedBy } : {}),
    outcome: jobOutcome(s),
    work: {
      spec: s.spec,
      specSha256: specDigest(s.spec),
      inputs: s.inputs,
      ...(s.work
        ? { workDigest: s.work.digest, workKind: s.work.kind, ...(s.work.runtime ? { runtime: s.work.runtime } : {}), digestSource: 'recorded' as const, note: RECORDED_NOTE }
        : { digestSource: 'derived' as const, note: DERIVED_NOTE }),
    },
    durations: jobDurations(s),
    attempts,
    ...(lastOutputs ? { outputs: { files: lastOutputs.files, totalBytes: lastOutputs.totalBytes, truncated: lastOutputs.truncated, logs: lastOutputs.logs } } : {}),
    cost: { lines: s.usage, ...cost },
    ...(s.ended ? { ended: { endedAt: s.ended.at, eventId: s.ended.eventId } } : {}),
    timeline: s.timeline,
  };
}

export function jobSummary(s: JobAuditState & { team: string; submittedAt: string; spec: JobSpec }): AuditJobSummary {
  const sorted = [...s.attempts].sort((a, b) => a.attempt - b.attempt);
  const nodes = [...new Set(sorted.flatMap((a) => a.nodes.map((n) => n.nodeId)))];
  const gpuModels = [...new Set(sorted.map((a) => a.gpuModel))];
  const lastOutputs = s.outputs.at(-1);
  const cost = totalsOf(s.usage);
  return {
    jobId: s.jobId,
    team: s.team,
    ...(s.name ? { name: s.name } : {}),
    submittedAt: s.submittedAt,
    outcome: jobOutcome(s),
    attempts: sorted.length,
    nodes,
    gpuModels,
    gpus: s.spec.request.gpus,
    durations: jobDurations(s),
    outputs: { files: lastOutputs?.files.length ?? 0, totalBytes: lastOutputs?.totalBytes ?? 0 },
    billableMs: cost.billableMs,
    totals: cost.totals,
  };
}

/** Whether a submitted job's record passes every field of the filter (and the caller's team scope). */
export function matches(s: JobAuditState & { team: string; submittedAt: string }, filter: Omit<AuditJobsFilter, 'limit' | 'offset'>): boolean {
  if (filter.team !== undefined && s.team !== filter.team) return false;
  const submitted = Date.parse(s.submittedAt);
  if (filter.from !== undefined && submitted < Date.parse(filter.from)) return false;
  if (filter.to !== undefined && submitted >= Date.parse(filter.to)) return false;
  if (filter.nodeId !== undefined && !s.attempts.some((a) => a.nodes.some((n) => n.nodeId === filter.nodeId))) return false;
  if (filter.gpuModel !== undefined && !s.attempts.some((a) => a.gpuModel === filter.gpuModel)) return false;
  if (filter.outcome !== undefined && jobOutcome(s) !== filter.outcome) return false;
  return true;
}

/** The jobs of an audit list: matching records, oldest submission first, `limit` of them from `offset`. */
export function auditList(records: Iterable<JobAuditState>, filter: AuditJobsFilter): { jobs: AuditJobSummary[]; total: number } {
  const hits = [...records]
    .filter(isSubmitted)
    .filter((s) => matches(s, filter))
    .sort((a, b) => (a.submittedAt < b.submittedAt ? -1 : a.submittedAt > b.submittedAt ? 1 : a.jobId < b.jobId ? -1 : 1));
  return { jobs: hits.slice(filter.offset, filter.offset + filter.limit).map(jobSummary), total: hits.length };
}
