/**
 * Discrete-event replay of a workload in virtual time through placement's pure core: the same
 * `evolve` folds the same events the services would write (NodeRegistered, JobSubmitted,
 * InputsStaged, JobPlaced, ComputeHeld, JobFinished, ComputeReleased) and the same `decide`
 * places jobs, called with the virtual time as its clock. No I/O, no wall clock.
 *
 * A pass runs at every instant something happens: jobs end (releases first), jobs arrive, or a
 * running job outlives its prediction (the live service's tick runs a pass then too: the plan's
 * picture of the future changes although no event came). Instants at which no GPU is free are
 * skipped: such a pass cannot start anything, whatever the queue.
 */
import { gangParts, type JobSpec } from '#contracts';
import { decide, evolve, initialState, type DecideOptions, type PlacementEvent, type PlacementState, type PlanOptions } from '../domain/index.js';
import { planOptionsFor, type PolicyName } from './policies.js';
import type { SimJob } from './workload.js';

export interface ClusterOptions {
  nodes: number;
  gpusPerNode: number;
  /** Model name of every GPU. Default `sim-gpu`. */
  gpuModel?: string;
}

export interface ReplayOptions {
  cluster: ClusterOptions;
  /** Default `default` (the core's default policy). */
  policy?: PolicyName;
  /** Plan options over the policy's own (backfill, reservation depth, weights, predictions); see `policies.ts`. */
  plan?: PlanOptions;
  /** Virtual epoch: trace time 0 is this instant (epoch ms). Default 2026-01-01T00:00:00Z. */
  epochMs?: number;
}

/** When one job waited and ran, in trace ms. */
export interface JobRun {
  jobId: string;
  team: string;
  gpus: number;
  submitMs: number;
  startMs: number;
  endMs: number;
  runMs: number;
  timeLimitMs: number;
  /** The core's run-time prediction for it when it was submitted (its time limit with predictions off or no history). */
  predictedRunMs: number;
}

export interface ReplayResult {
  runs: JobRun[];
  /** Jobs the core rejected (e.g. more GPUs than any node has), with its message. */
  rejected: { jobId: string; message: string }[];
  totalGpus: number;
  /** Passes of `decide` run. */
  passes?: number;
}

const DEFAULT_EPOCH = Date.parse('2026-01-01T00:00:00.000Z');

type Unpositioned = PlacementEvent extends infer E ? (E extends PlacementEvent ? Omit<E, 'position'> : never) : never;

interface Running {
  endMs: number;
  seq: number;
  run: JobRun;
  attemptId: string;
  /** Every node's part (one for a job that fits a node): each ends and is released like an agent's. */
  parts: { nodeId: string; gpuIndices: number[] }[];
  gpuModel: string;
  timedOut: boolean;
}

/** Replays `jobs` (ascending submitMs) on the cluster; deterministic for the same input. */
export function replay(jobs: readonly SimJob[], options: ReplayOptions): ReplayResult {
  const { nodes, gpusPerNode } = options.cluster;
  if (!Number.isInteger(nodes) || nodes < 1) throw new RangeError(`nodes must be a positive integer, got ${nodes}`);
  if (!Number.isInteger(gpusPerNode) || gpusPerNode < 1) throw new RangeError(`gpusPerNode must be a positive integer, got ${gpusPerNode}`);
  const model = options.cluster.gpuModel ?? 'sim-gpu';
  const epoch = options.epochMs ?? DEFAULT_EPOCH;
  const planOptions = planOptionsFor(options.policy ?? 'default', options.plan);
  const predictions = planOptions.predictions ?? true;
  const decideOptions: DecideOptions = { plan: planOptions };
  // Many events share an instant: its text is made once.
  let isoAt = NaN;
  let isoText = '';
  const iso = (ms: number) => (ms === isoAt ? isoText : ((isoAt = ms), (isoText = new Date(epoch + ms).toISOString())));
  const totalGpus = nodes * gpusPerNode;

  const state: PlacementState = initialState();
  let position = 0n;
  const apply = (e: Unpositioned) => {
    position += 1n;
    evolve(state, { ...e, position } as PlacementEvent);
  };

  for (let n = 0; n < nodes; n++) {
    apply({
      type: 'NodeRegistered',
      data: { nodeId: `node-${String(n).padStart(4, '0')}`, gpus: Array.from({ length: gpusPerNode }, (_, index) => ({ index, model })), simulated: true, networkIsolation: false, heartbeatIntervalMs: 1000, registeredAt: iso(0) },
    });
  }

  const byId = new Map(jobs.map((j) => [j.jobId, j]));
  const running = new MinHeap<Running>((a, b) => a.endMs - b.endMs || a.seq - b.seq);
  /** Instants at which a running job outlives its prediction. */
  const wakeups = new MinHeap<number>((a, b) => a - b);
  const runs: JobRun[] = [];
  const rejected: ReplayResult['rejected'] = [];
  let next = 0;
  let seq = 0;
  let busy = 0;
  let passes = 0;
  let queued = 0;

  for (;;) {
    const arrival = jobs[next]?.submitMs;
    const finish = running.peek()?.endMs;
    const wake = wakeups.peek();
    const t = Math.min(arrival ?? Infinity, finish ?? Infinity, wake ?? Infinity);
    if (t === Infinity) break;
    if (arrival !== undefined && next > 0 && arrival < jobs[next - 1]!.submitMs) throw new RangeError('jobs must be sorted by submitMs');
    while (wakeups.peek() === t) wakeups.pop();

    // Releases first: GPUs freed at t are free for jobs submitted at t.
    while (running.peek()?.endMs === t) {
      const r = running.pop()!;
      for (const { nodeId } of r.parts) {
        apply({ type: 'JobFinished', data: { jobId: r.run.jobId, attemptId: r.attemptId, nodeId, outcome: r.timedOut ? 'timeout' : 'completed', exitCode: r.timedOut ? null : 0, signal: null, finishedAt: iso(t) } });
      }
      for (const { nodeId, gpuIndices } of r.parts) apply({ type: 'ComputeReleased', data: { jobId: r.run.jobId, attemptId: r.attemptId, nodeId, gpuIndices, releasedAt: iso(t) } });
      busy -= r.run.gpus;
    }
    while (jobs[next]?.submitMs === t) {
      const j = jobs[next++]!;
      apply({ type: 'JobSubmitted', data: { jobId: j.jobId, team: j.team, spec: specOf(j), submittedAt: iso(t) } });
      apply({ type: 'InputsStaged', data: { jobId: j.jobId, inputs: [], totalBytes: 0, stagedAt: iso(t) } });
      queued++;
    }
    // No GPU free: nothing can start (a rejection, the only other decision here, waits for the next pass).
    if (busy >= totalGpus || queued === 0) continue;

    passes++;
    for (const d of decide(state, new Date(epoch + t), decideOptions)) {
      apply(d);
      if (d.type === 'JobRejected') {
        rejected.push({ jobId: d.data.jobId, message: d.data.message });
        queued--;
        continue;
      }
      if (d.type !== 'JobPlaced') continue;
      queued--;
      const j = byId.get(d.data.jobId)!;
      const { attemptId, gpuModel } = d.data;
      const parts = gangParts(d.data).map((p) => ({ nodeId: p.nodeId, gpuIndices: [...p.gpuIndices] }));
      for (const { nodeId, gpuIndices } of parts) apply({ type: 'ComputeHeld', data: { jobId: j.jobId, attemptId, nodeId, gpuIndices, gpuModel, gpus: gpuIndices.length, heldAt: iso(t) } });
      const predictedRunMs = state.jobs.get(j.jobId)!.predictedRunMs ?? j.timeLimitMs;
      const run: JobRun = { jobId: j.jobId, team: j.team, gpus: j.gpus, submitMs: j.submitMs, startMs: t, endMs: t + j.runMs, runMs: j.runMs, timeLimitMs: j.timeLimitMs, predictedRunMs };
      runs.push(run);
      busy += j.gpus;
      running.push({ endMs: run.endMs, seq: seq++, run, attemptId, parts, gpuModel, timedOut: j.timedOut });
      // It outlives its prediction: the plan changes then, so a pass runs then.
      if (predictions && predictedRunMs < j.runMs) wakeups.push(t + predictedRunMs);
    }
  }
  // A job still waiting with nothing running and nothing to arrive would wait forever: a policy that strands work is a defect, never a figure.
  if (queued > 0) {
    const ran = new Set([...runs.map((r) => r.jobId), ...rejected.map((r) => r.jobId)]);
    const stranded = jobs.filter((j) => !ran.has(j.jobId));
    throw new Error(`${stranded.length} job(s) never started: the policy left them waiting with nothing running and nothing left to arrive (first: ${stranded[0]!.jobId}, ${stranded[0]!.gpus} GPUs)`);
  }
  return { runs, rejected, totalGpus, passes };
}

function specOf(j: SimJob): JobSpec {
  return {
    name: j.work,
    work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
    data: { inputs: [] },
    request: { gpus: j.gpus, timeLimitMs: j.timeLimitMs, network: false },
    outputs: { globs: ['**'] },
  };
}

/** A small binary min-heap: the running jobs by end time. */
class MinHeap<T> {
  private readonly items: T[] = [];
  constructor(private readonly less: (a: T, b: T) => number) {}

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const a = this.items;
    a.push(item);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(a[i]!, a[p]!) >= 0) break;
      [a[i], a[p]] = [a[p]!, a[i]!];
      i = p;
    }
  }

  pop(): T | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l]!, a[m]!) < 0) m = l;
        if (r < a.length && this.less(a[r]!, a[m]!) < 0) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top;
  }
}
