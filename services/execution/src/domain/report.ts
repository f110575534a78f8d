/**
 * The recorder's judgement of one node report, pure: does the control plane record it? The
 * shell (src/recorder/) reads what it needs from the store and hands it in; signature checking
 * is injected (`verify`), so this file knows no crypto and no I/O.
 *
 * A report is recorded only when all of these hold, checked in this order (the first that
 * fails names the refusal): it came on the subject of the node it names; the node is enrolled;
 * the signature is the enrolled key's over the report's exact bytes; it is about this node's own
 * streams and data; it is not older than what the node already reported (`seq` within its
 * journal); the attempt was placed on this node; and it fits what the attempt recorded so far.
 * A report recorded before (same event id, same content) is a duplicate: acknowledged, not
 * recorded again.
 */
import { gangPartOf, type JobPlaced, type ReportRefusalReason, type StoreOutputs } from '#contracts';
import { foldAttempt, needsOutputs, placementOn, RECORDED_ATTEMPT_EVENT_TYPES, type AttemptState, type RecordedAttemptEvent } from './attempt.js';
import { attemptStreamPrefix, nodeStreamId } from './streams.js';

/** Types a node may report on its node stream (`execution-<nodeId>-node`). */
export const NODE_STREAM_EVENT_TYPES = ['NodeRegistered', 'DataRemoved'] as const;

/** A report as the judge sees it (the wire form, parsed). */
export interface JudgedReport {
  readonly nodeId: string;
  readonly journal: string;
  readonly seq: bigint;
  readonly event: { readonly streamId: string; readonly eventId: string; readonly type: string; readonly data: unknown };
  readonly signature: string;
  /** The exact bytes the signature must cover. */
  readonly signedBytes: Uint8Array;
}

/** An event already in the report's stream, as far as the judge needs it. */
export interface StreamEvent {
  readonly eventId: string;
  readonly type: string;
  readonly data: unknown;
  /** `metadata.report.signature` when the recorder recorded it from a report. */
  readonly signature?: string;
}

export interface ReportInput {
  /** The node whose subject the report came on: what the connection may publish, not what the body says. */
  readonly fromNode: string;
  readonly report: JudgedReport;
  /** The node's enrolled public key, if it is enrolled. */
  readonly publicKey: string | undefined;
  readonly verify: (publicKey: string, bytes: Uint8Array, signature: string) => boolean;
  /** Highest `seq` recorded (or refused) for this node's journal so far. */
  readonly highWater: bigint | undefined;
  /** Events already recorded in the report's stream, in order. */
  readonly stream: readonly StreamEvent[];
  /** JobPlaced of the report's attempt (any node), when the report is about an attempt and placement recorded it. */
  readonly placed: JobPlaced | undefined;
}

export type ReportVerdict =
  | { readonly verdict: 'accept'; readonly attemptId?: string; readonly jobId?: string }
  | { readonly verdict: 'duplicate' }
  | { readonly verdict: 'refuse'; readonly reason: ReportRefusalReason; readonly detail: string };

const refuse = (reason: ReportRefusalReason, detail: string): ReportVerdict => ({ verdict: 'refuse', reason, detail });

/** The attempt id of an attempt stream of `nodeId` (exactly `execution-<nodeId>-attempt-<id>`), else undefined. */
function attemptOf(nodeId: string, streamId: string): string | undefined {
  const prefix = attemptStreamPrefix(nodeId);
  return streamId.startsWith(prefix) && streamId.length > prefix.length ? streamId.slice(prefix.length) : undefined;
}

function field(data: unknown, name: string): unknown {
  return data !== null && typeof data === 'object' ? (data as Record<string, unknown>)[name] : undefined;
}

/** JSON equality with sorted keys (the store gives back what was appended, keys maybe reordered). */
function sameJson(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, norm((v as Record<string, unknown>)[k])])) : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

/** Whether `event` may follow the attempt's recorded state. Undefined when it fits; else why not. */
export function misfit(state: AttemptState, event: RecordedAttemptEvent, placed: JobPlaced): string | undefined {
  const { phase } = state;
  switch (event.type) {
    case 'ComputeHeld': {
      if (phase !== 'placed') return `ComputeHeld while the attempt is ${phase} (only once, before anything else)`;
      const part = gangPartOf(placed, state.placement.nodeId)!;
      const same = part.gpuIndices.length === event.data.gpuIndices.length && part.gpuIndices.every((g, i) => g === event.data.gpuIndices[i]);
      if (!same) return `ComputeHeld holds GPUs ${event.data.gpuIndices.join(',')} but the placement gave ${part.gpuIndices.join(',')}`;
      if (event.data.gpuModel !== placed.gpuModel) return `ComputeHeld names model ${event.data.gpuModel}, the placement ${placed.gpuModel}`;
      if (event.data.gpus !== part.gpuIndices.length) return `ComputeHeld counts ${event.data.gpus} GPUs, the placement ${part.gpuIndices.length}`;
      return undefined;
    }
    case 'JobStarted':
      return phase === 'held' ? undefined : `JobStarted while the attempt is ${phase} (only after ComputeHeld)`;
    case 'JobCheckpointed':
      if (phase !== 'running') return `JobCheckpointed while the attempt is ${phase} (only while running)`;
      return state.lastCheckpoint !== undefined && event.data.sequence <= state.lastCheckpoint ? `checkpoint ${event.data.sequence} is not after ${state.lastCheckpoint}` : undefined;
    case 'JobFinished':
      if (state.finished !== undefined) return `JobFinished for an attempt that finished already (${state.finished.outcome} at ${state.finished.finishedAt})`;
      if (state.heldAt !== undefined && Date.parse(event.data.finishedAt) < Date.parse(state.heldAt)) return `finishedAt ${event.data.finishedAt} is before heldAt ${state.heldAt}`;
      return undefined;
    case 'ComputeReleased':
      return phase === 'finished' ? undefined : `ComputeReleased while the attempt is ${phase} (only after JobFinished, once)`;
  }
}

/** The judgement of one event report. Pure. */
export function judgeReport(input: ReportInput): ReportVerdict {
  const { fromNode, report, publicKey, stream } = input;
  const nodeId = report.nodeId;
  const { streamId, eventId, type, data } = report.event;
  if (nodeId !== fromNode) return refuse('other_node', `a report naming node ${nodeId} came on the subject of node ${fromNode}`);
  if (publicKey === undefined) return refuse('unknown_node', `node ${nodeId} is not enrolled (gpunet nodes enroll ${nodeId} --public-key U…)`);
  if (!input.verify(publicKey, report.signedBytes, report.signature)) return refuse('bad_signature', `the signature is not node ${nodeId}'s enrolled key's (${publicKey.slice(0, 12)}…) over this report`);

  const attemptId = attemptOf(nodeId, streamId);
  const onNodeStream = streamId === nodeStreamId(nodeId);
  if (attemptId === undefined && !onNodeStream) return refuse('other_node', `stream ${streamId} is not one of node ${nodeId}'s (execution-${nodeId}-node or execution-${nodeId}-attempt-<id>)`);
  if (field(data, 'nodeId') !== nodeId) return refuse('other_node', `the event names node ${String(field(data, 'nodeId'))}, the report node ${nodeId}`);
  const allowed: readonly string[] = onNodeStream ? NODE_STREAM_EVENT_TYPES : RECORDED_ATTEMPT_EVENT_TYPES;
  if (!allowed.includes(type)) return refuse('malformed', `${type} is not reported on ${streamId} (only ${allowed.join(', ')})`);

  const earlier = stream.find((e) => e.eventId.toLowerCase() === eventId.toLowerCase());
  if (earlier) {
    if (earlier.type === type && sameJson(earlier.data, data) && earlier.signature === report.signature && (input.highWater === undefined || report.seq >= input.highWater)) return { verdict: 'duplicate' };
    return refuse('replayed', `event ${eventId} is recorded already; this report of it is not the node's latest (seq ${report.seq}${input.highWater !== undefined ? `, the node is at ${input.highWater}` : ''})`);
  }
  if (input.highWater !== undefined && report.seq <= input.highWater) return refuse('replayed', `seq ${report.seq} of journal ${report.journal} is not after ${input.highWater}, the node's last report`);

  if (attemptId === undefined) return { verdict: 'accept' };
  if (field(data, 'attemptId') !== attemptId) return refuse('other_node', `the event is about attempt ${String(field(data, 'attemptId'))}, its stream about ${attemptId}`);
  const placed = input.placed;
  if (!placed || placed.attemptId !== attemptId) return refuse('not_placed', `attempt ${attemptId} was never placed (no JobPlaced of it)`);
  if (field(data, 'jobId') !== placed.jobId) return refuse('not_placed', `attempt ${attemptId} is of job ${placed.jobId}, the event names ${String(field(data, 'jobId'))}`);
  const placement = placementOn(placed, nodeId);
  if (!placement) return refuse('other_node', `attempt ${attemptId} was placed on ${placed.nodes?.map((n) => n.nodeId).join(', ') ?? placed.nodeId}, not on ${nodeId}`);
  const state = foldAttempt(placement, stream.map((e) => ({ type: e.type, data: e.data }) as RecordedAttemptEvent));
  const why = misfit(state, { type, data } as RecordedAttemptEvent, placed);
  if (why) return refuse('state', why);
  return { verdict: 'accept', attemptId, jobId: placed.jobId };
}

export interface OutputsInput {
  readonly fromNode: string;
  readonly nodeId: string;
  readonly outputs: StoreOutputs;
  readonly signature: string;
  readonly signedBytes: Uint8Array;
  readonly publicKey: string | undefined;
  readonly verify: (publicKey: string, bytes: Uint8Array, signature: string) => boolean;
  readonly placed: JobPlaced | undefined;
  /** The team of the job (intake's JobSubmitted). */
  readonly team: string | undefined;
  /** Recorded events of the attempt's stream on this node. */
  readonly stream: readonly StreamEvent[];
}

export type OutputsVerdict =
  | { readonly verdict: 'accept' }
  /** The attempt's end is not recorded yet (its report may be on its way): ask again later. */
  | { readonly verdict: 'not_yet'; readonly detail: string }
  | { readonly verdict: 'refuse'; readonly reason: ReportRefusalReason; readonly detail: string };

/** The judgement of an outputs report: the node ran this attempt, it ran and ended, it is not released, the team is the job's. Pure. */
export function judgeOutputs(input: OutputsInput): OutputsVerdict {
  const { fromNode, nodeId, outputs, publicKey } = input;
  if (nodeId !== fromNode || outputs.nodeId !== nodeId) return refuse('other_node', `outputs naming node ${outputs.nodeId} (report ${nodeId}) came on the subject of node ${fromNode}`) as OutputsVerdict;
  if (publicKey === undefined) return refuse('unknown_node', `node ${nodeId} is not enrolled`) as OutputsVerdict;
  if (!input.verify(publicKey, input.signedBytes, input.signature)) return refuse('bad_signature', `the signature is not node ${nodeId}'s enrolled key's over these outputs`) as OutputsVerdict;
  const placed = input.placed;
  if (!placed || placed.attemptId !== outputs.attemptId || placed.jobId !== outputs.jobId) return refuse('not_placed', `attempt ${outputs.attemptId} of job ${outputs.jobId} was never placed`) as OutputsVerdict;
  const placement = placementOn(placed, nodeId);
  if (!placement) return refuse('other_node', `attempt ${outputs.attemptId} was not placed on ${nodeId}`) as OutputsVerdict;
  if (input.team === undefined || outputs.team !== input.team) return refuse('other_team', `job ${outputs.jobId} is not of team ${outputs.team}`) as OutputsVerdict;
  const state = foldAttempt(placement, input.stream.map((e) => ({ type: e.type, data: e.data }) as RecordedAttemptEvent));
  if (state.phase === 'released') return refuse('state', `attempt ${outputs.attemptId} on ${nodeId} is released: its outputs step is over`) as OutputsVerdict;
  if (state.finished === undefined) return { verdict: 'not_yet', detail: `the end of attempt ${outputs.attemptId} on ${nodeId} is not recorded yet` };
  if (!needsOutputs(state)) return refuse('state', `attempt ${outputs.attemptId} on ${nodeId} has no outputs (it never ran, was lost, or is not rank 0 of its gang)`) as OutputsVerdict;
  return { verdict: 'accept' };
}
