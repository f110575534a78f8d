/**
 * Placement's state: the node inventory (GPUs, which attempt holds which GPU, liveness) and the
 * queue (jobs in submit order with their request and where they stand). Folded from events by
 * `evolve`; read by `decide` and by queries. Pure data: no clock, no I/O.
 *
 * The state is mutable and owned by one caller: `evolve` updates it in place (folding a long
 * history must not copy the whole inventory per event); `decide` only reads it.
 */

import type { BudgetAccount, PartEnd } from '#contracts';
import type { LocalInput } from './locality.js';

/** What a job asks for. Priority inputs sit beside it, not inside it. */
export interface GpuRequest {
  /** GPUs, all of one model: on one node, or over whole nodes when no node has that many. */
  gpus: number;
  /** Required model; absent: any model (still one model per job). */
  gpuModel?: string;
  /** Longest one attempt may run once started, in ms; reservations will be computed from it. */
  timeLimitMs: number;
}

/** One GPU of a node. */
export interface NodeGpu {
  index: number;
  model: string;
}

/** A node as placement knows it. */
export interface NodeRecord {
  nodeId: string;
  /** False while the node is known only from a placement or a heartbeat (its NodeRegistered not yet applied). */
  registered: boolean;
  /** Registration order, the first-fit scan order; stable across re-registrations. */
  order: number;
  /** Every GPU the node offers, ascending index. */
  gpus: NodeGpu[];
  /** Attempt id → the GPU indices it holds here, from JobPlaced until ComputeReleased. */
  holds: Map<string, readonly number[]>;
  /**
   * GPU index → number of attempts holding it. 1 normally; more would break the invariant, and
   * is still counted (the GPU stays busy until every holder released it) rather than hidden.
   */
  busy: Map<number, number>;
  heartbeatIntervalMs?: number;
  registeredAt?: string;
  /** Placement clock (epoch ms) when the last heartbeat arrived; node-loss detection reads it. */
  lastHeartbeatAt?: number;
  /** Sequence of the last heartbeat, so gaps are visible. */
  lastHeartbeatSequence?: number;
  /** Agent clock of the last heartbeat (its `sentAt`): NodeLost's `lastSeenAt`. */
  lastHeartbeatSentAt?: string;
  /** Placement clock (epoch ms) when this placement process learned of the registration: a lease counts from here until a heartbeat comes. */
  registrationSeenAt?: number;
  /** `detectedAt` of the NodeLost that took the node out of service (until it registers again). */
  lostAt?: string;
  /** Container runtimes the node's agent registered (`docker`, `podman`); empty: scripts only. */
  containerRuntimes?: readonly string[];
  /** `<team>/<sha256>` of the blobs in the node's input cache, from its last heartbeat (see `locality.ts`). */
  cachedData?: ReadonlySet<string>;
  /** Host name from its NodeRegistered, for people and logs. */
  hostname?: string;
  /**
   * The operator's cordon or drain in force (`node-admin.ts`): while set, nothing new is placed on
   * the node. It outlives a loss and a new registration; only NodeUncordoned takes it back.
   */
  admin?: NodeAdmin;
  /** Store position of the last cordon / drain / uncordon applied: an older one seen again (its echo on the bus) changes nothing. */
  adminPosition?: bigint;
}

/** A cordon or drain in force on a node, from NodeCordoned / NodeDrainRequested (and NodeDrained). */
export interface NodeAdmin {
  kind: 'cordoned' | 'draining';
  by: string;
  reason: string;
  /** Placement clock of the event that set it (a drain's NodeDrained names it as `requestedAt`). */
  at: string;
  /** From NodeDrained: the drain is complete. */
  drainedAt?: string;
  /** From NodeDrained: it completed because the node was lost, not because its work ended. */
  afterLoss?: boolean;
}

/** Where a job stands, as far as placement is concerned. */
export type JobPhase =
  /** Submitted; its inputs are not staged yet. */
  | 'waiting_inputs'
  /** Staged (or requeued): placeable. */
  | 'queued'
  /** An attempt is placed; the agent runs it. */
  | 'placed'
  /** The attempt ended `node_lost`: it goes back to the queue (JobRequeued). */
  | 'lost'
  /** Nothing more to place: finished, withdrawn, rejected, or staging failed. */
  | 'ended';

/** One run attempt as placement records it. */
export interface AttemptRecord {
  attemptId: string;
  attempt: number;
  /** Rank 0's node and GPUs (the only ones for a one-node attempt). */
  nodeId: string;
  gpuIndices: readonly number[];
  /** Every part, rank order: one per node of a multi-node gang, else just rank 0. */
  parts: { nodeId: string; gpuIndices: readonly number[] }[];
  /** Each part's JobFinished so far; the attempt ends (`outcome`) once every part has one (see `gangOutcome`). */
  ends: PartEnd[];
  gpuModel: string;
  placedAt: string;
  /** Agent clock, from ComputeHeld. */
  heldAt?: string;
  /** From JobFinished. */
  outcome?: string;
  /** Exit code of the attempt's deciding process, from JobFinished (the retry policy reads it). */
  exitCode?: number | null;
  /** Exit code per node of a gang's parts so far. */
  partExitCodes?: Record<string, number | null>;
  finishedAt?: string;
  /** From ComputeReleased: the GPUs are free again. */
  released?: boolean;
  /** From JobPlaced: the start (and end, when one was quoted) quoted before it (epoch ms) and when. */
  quote?: Quote;
  /** From JobPlaced: placed past its team's concurrent GPU quota, on idle GPUs (`quotas.ts`). */
  borrowed?: boolean;
}

/** Why a job left placement's hands. */
export type JobEnd = 'finished' | 'withdrawn' | 'rejected' | 'staging_failed';

/** A job as placement knows it. */
export interface JobRecord {
  jobId: string;
  team: string;
  /** Store position of JobSubmitted: the queue order. */
  submitPosition: bigint;
  submittedAt: string;
  /** Cache of `submittedAt` as epoch ms and the text it was parsed from (see {@link submittedMsOf}). */
  submittedMs?: number;
  submittedMsOf?: string;
  request: GpuRequest;
  /** What identifies its work for run-time predictions (`predict.ts`); absent: no history is kept. */
  workKey?: string;
  /** Its predicted run time in ms (`predict.ts`), made when it was submitted; ≤ its time limit. Absent: the time limit. */
  predictedRunMs?: number;
  phase: JobPhase;
  staged: boolean;
  cancelRequested: boolean;
  /** Attempts placed so far, oldest first. */
  attempts: AttemptRecord[];
  /** Set once phase is `ended`. */
  end?: JobEnd;
  /** The spec's deadline (epoch ms), resolved by intake; a queued job still waiting then is withdrawn (`deadlines.ts`). */
  deadlineAt?: number;
  /** The spec's retry policy: a failure with one of its exit codes goes back to the queue (`JobRequeued` reason `retry`). */
  retry?: { exitCodes: readonly number[]; maxAttempts: number };
  /** The spec's inputs by address, for data locality (`locality.ts`); absent when it has none. */
  inputs?: readonly LocalInput[];
  /** `kind: container` work: only a node with a container runtime can run it. */
  needsContainer?: boolean;
  /** Why a job in phase `lost` goes back to the queue. */
  requeueReason?: 'node_lost' | 'retry';
  /**
   * The first start placement quoted for it (epoch ms) and when: the estimate it was submitted on
   * or its deadline accepted on (JobSubmitted), else the first start `gpunet status` showed. Written into its
   * JobPlaced (`quotes.ts`).
   */
  quote?: Quote;
}

/** A quote: expected start, expected end when one was given (an estimate recorded in JobSubmitted), when it was given; epoch ms. */
export interface Quote {
  expectedStart: number;
  expectedEnd?: number;
  quotedAt: number;
}

/** Fair-share usage of one team: GPU-ms of its ended attempts, decayed to `asOf` (epoch ms). */
export interface TeamUsage {
  /** Decayed GPU-ms (a float: a priority input, never billed). */
  gpuMs: number;
  asOf: number;
}

/** An attempt holding GPUs (JobPlaced until ComputeReleased): the timeline's running work and fair share's running usage. */
export interface LiveAttempt {
  attemptId: string;
  jobId: string;
  /** Undefined when the attempt's job is unknown to placement (its JobSubmitted not applied). */
  team?: string;
  gpus: number;
  /** Epoch ms of JobPlaced. */
  placedAt: number;
  /** Epoch ms of ComputeHeld (agent clock), once known. */
  heldAt?: number;
  /** The job's time limit; undefined when the job is unknown: its end cannot be predicted. */
  timeLimitMs?: number;
  /** The job's predicted run time (≤ its time limit); the plan expects it to end then, and at its limit once it outlives it. */
  predictedRunMs?: number;
  /** JobFinished applied: its usage is folded, its GPUs wait only for the release. */
  finished: boolean;
  /** The model of its GPUs, from JobPlaced (quotas count GPUs per team and model). */
  gpuModel?: string;
  /** Placed past its team's concurrent GPU quota (`quotas.ts`). */
  borrowed?: boolean;
}

/** A team's GPU quota for one model, from its latest QuotaSet (`quotas.ts`). */
export interface QuotaRecord {
  /** GPUs held at once; null: no limit. */
  gpus: number | null;
  /** GPU-hours per calendar month (UTC); null: no limit. */
  gpuHours: number | null;
  /** May borrow idle GPUs past `gpus`. */
  borrow: boolean;
  setAt: string;
}

/** Default fair-share decay half-life: usage a week old counts half. */
export const DEFAULT_USAGE_HALF_LIFE_MS = 7 * 24 * 3_600_000;

/** The whole state. Create with {@link initialState}. */
export interface PlacementState {
  nodes: Map<string, NodeRecord>;
  jobs: Map<string, JobRecord>;
  /** Jobs not placed and not ended (waiting_inputs, queued, lost), ascending submitPosition. */
  queue: JobRecord[];
  /** Attempt id → ids of the nodes where it holds GPUs, until each ComputeReleased (several for a multi-node gang). */
  holders: Map<string, string[]>;
  /** Highest store position applied. */
  position: bigint;
  /** Team → decayed GPU-ms of its ended attempts (fair share). */
  usage: Map<string, TeamUsage>;
  /** Attempt id → the attempt while it holds GPUs. */
  live: Map<string, LiveAttempt>;
  /** Half-life of fair-share usage, ms. */
  usageHalfLifeMs: number;
  /** History key → the last run times (ms) of similar jobs, for predictions (`predict.ts`). */
  runHistory: Map<string, number[]>;
  /** The last {@link RECENT_SUBMITS} submissions' predicted run and submit time (ms), oldest first: is short work flowing (`plan.ts` headroom)? */
  recentSubmits: { runMs: number; atMs: number }[];
  /** Registered nodes in first-fit order, cached until a registration or a loss changes them. */
  registeredCache?: NodeRecord[];
  /** Team → GPU model → its quota (`quotas.ts`). */
  quotas: Map<string, Map<string, QuotaRecord>>;
  /** `team\0model\0YYYY-MM` → GPU-ms its ended attempts held in that month (integer; `quotas.ts`). */
  heldMs: Map<string, number>;
  /** Team → its budget account, folded from intake's budget events (`budget.ts`). */
  budgets: Map<string, BudgetAccount>;
  /**
   * Ended jobs whose records left `jobs` ({@link forgetEnded}, decision 0043): the store keeps
   * them, placement decides nothing more about them.
   */
  forgottenJobs: number;
  /** What forgotten jobs' quotes came to, for `quoteAccuracy` (`quotes.ts`); only the window it reads is kept. */
  quoteSamples: QuoteSample[];
}

/**
 * What one job's quotes came to, in epoch ms (`quotes.ts`): the start error once it started,
 * the end error once it completed with an end quoted, and whether an accepted deadline was met.
 */
export interface QuoteSample {
  startedAt?: number;
  startErrorMs?: number;
  endedAt?: number;
  endErrorMs?: number;
  deadline?: { endedAt: number; met: boolean };
}

export interface StateOptions {
  /** Half-life of fair-share usage in ms. Default {@link DEFAULT_USAGE_HALF_LIFE_MS} (7 days). */
  usageHalfLifeMs?: number;
}

/** How many submissions {@link PlacementState.recentSubmits} keeps. */
export const RECENT_SUBMITS = 64;

/** An empty state: no nodes, no jobs, no usage. */
export function initialState(options: StateOptions = {}): PlacementState {
  return {
    nodes: new Map(),
    jobs: new Map(),
    queue: [],
    holders: new Map(),
    position: 0n,
    usage: new Map(),
    live: new Map(),
    usageHalfLifeMs: options.usageHalfLifeMs ?? DEFAULT_USAGE_HALF_LIFE_MS,
    runHistory: new Map(),
    recentSubmits: [],
    quotas: new Map(),
    heldMs: new Map(),
    budgets: new Map(),
    forgottenJobs: 0,
    quoteSamples: [],
  };
}

/** `gpuMs` at `from` decayed to `to` (≥ from) with half-life `halfLifeMs`. */
export function decayed(gpuMs: number, from: number, to: number, halfLifeMs: number): number {
  return to <= from ? gpuMs : gpuMs * Math.pow(2, -(to - from) / halfLifeMs);
}

/** A team's decayed usage of ended attempts as of `now` (epoch ms). */
export function teamUsageAt(state: PlacementState, team: string, now: number): number {
  const u = state.usage.get(team);
  return u ? decayed(u.gpuMs, u.asOf, now, state.usageHalfLifeMs) : 0;
}

/** GPU indices of a node held by no attempt, ascending. */
export function freeGpuIndices(node: NodeRecord): number[] {
  const free: number[] = [];
  for (const gpu of node.gpus) if (!node.busy.has(gpu.index)) free.push(gpu.index);
  return free;
}

/** Is this GPU held by some attempt now? */
export function isBusy(state: PlacementState, nodeId: string, index: number): boolean {
  return state.nodes.get(nodeId)?.busy.has(index) ?? false;
}

/** `job.submittedAt` as epoch ms, parsed once (priority reads it for every job in every pass). */
export function submittedMsOf(job: JobRecord): number {
  if (job.submittedMsOf !== job.submittedAt || job.submittedMs === undefined) {
    job.submittedMs = Date.parse(job.submittedAt);
    job.submittedMsOf = job.submittedAt;
  }
  return job.submittedMs;
}

/** The job's predicted run time: its prediction, else its time limit. */
export const predictedRunOf = (job: JobRecord): number => job.predictedRunMs ?? job.request.timeLimitMs;

/** The attempt that currently represents the job (the latest one), if any. */
export function currentAttempt(job: JobRecord): AttemptRecord | undefined {
  return job.attempts[job.attempts.length - 1];
}

/** Registered nodes in first-fit order. */
export function registeredNodes(state: PlacementState): NodeRecord[] {
  return registeredView(state).slice();
}

/**
 * Registered nodes in first-fit order, shared: the same array until a registration or a loss
 * changes the set (evolve drops it then), so per-pass work can be cached against it. Never modify it.
 */
export function registeredView(state: PlacementState): readonly NodeRecord[] {
  return (state.registeredCache ??= [...state.nodes.values()].filter((n) => n.registered).sort((a, b) => a.order - b.order));
}
