import { computeMetrics, percentile } from './metrics.js';
import { replay } from './replay.js';
import { simulate, ClusterSizeUnknownError } from './simulate.js';
import { swfTrace } from './swf-fixtures.js';
import { parseSwf } from './swf.js';
import { toWorkload } from './workload.js';

const s = 1000;

describe('replay through the core, and its metrics (hand-computed)', () => {
  // One node of 2 GPUs. A (2 GPUs, 100 s) at 0; B (1 GPU, 50 s) at 10; C (1 GPU, 5 s) at 20.
  // A runs 0–100; B and C both start at 100 when A releases: B 100–150, C 100–105.
  const trace = swfTrace(2, [
    { job: 1, submit: 0, run: 100, procs: 2, req: 100 },
    { job: 2, submit: 10, run: 50, procs: 1, req: 50 },
    { job: 3, submit: 20, run: 5, procs: 1, req: 5 },
  ]);

  it('starts each job when the core places it, and ends it after its run time', () => {
    const result = replay(toWorkload(parseSwf(trace).jobs).jobs, { cluster: { nodes: 1, gpusPerNode: 2 } });
    // In placement order: the default ranks C (5 s) before B (50 s).
    expect(result.runs.map((r) => [r.jobId, r.startMs, r.endMs])).toEqual([
      ['swf-1', 0, 100 * s],
      ['swf-3', 100 * s, 105 * s],
      ['swf-2', 100 * s, 150 * s],
    ]);
  });

  it('computes wait, bounded slowdown, utilization and the size-split tails', () => {
    const report = simulate(trace, { gpusPerNode: 2 });
    expect(report.cluster).toEqual({ nodes: 1, gpusPerNode: 2, totalGpus: 2 });
    expect(report.metrics).toEqual({
      jobs: 3,
      rejected: 0,
      // waits 0, 90, 80 s
      averageWaitMs: 56_667,
      // A 100/100 = 1; B (90+50)/50 = 2.8; C (80+5)/max(5,10) = 8.5 → 12.3 / 3
      averageBoundedSlowdown: 4.1,
      // 2×100 + 50 + 5 = 255 GPU-s over 2 GPUs × 150 s
      utilization: 0.85,
      // up to the last start (100 s): A held both GPUs all along
      utilizationToLastStart: 1,
      // smaller half by GPU×time: C (5) and B (50), waits 80 and 90 s; nearest-rank p95 of 2 = the 2nd
      p95WaitSmallHalfMs: 90 * s,
      // largest 10 %: ceil(0.3) = 1 job, A, waited 0
      maxWaitLargest10PctMs: 0,
      spanMs: 150 * s,
    });
  });
});

describe('policies', () => {
  // One node of 2 GPUs: A (1 GPU, 100 s) at 0, B (2 GPUs, 10 s) at 1, C (1 GPU, 10 s) at 2.
  const mixed = swfTrace(2, [
    { job: 1, submit: 0, run: 100, procs: 1, req: 100 },
    { job: 2, submit: 1, run: 10, procs: 2, req: 10 },
    { job: 3, submit: 2, run: 10, procs: 1, req: 10 },
  ]);
  const starts = (text: string, policy: 'default' | 'fcfs' | 'sjf', gpusPerNode: number, backfill = true) =>
    replay(toWorkload(parseSwf(text).jobs).jobs, { cluster: { nodes: 1, gpusPerNode }, policy, plan: { backfill } }).runs.map((r) => [r.jobId, r.startMs / s]);

  it('default and EASY let C pass the blocked B (it ends before B can start); strict fcfs makes C wait behind B', () => {
    expect(starts(mixed, 'default', 2)).toEqual([
      ['swf-1', 0],
      ['swf-3', 2],
      ['swf-2', 100],
    ]);
    expect(starts(mixed, 'fcfs', 2)).toEqual([
      ['swf-1', 0],
      ['swf-3', 2],
      ['swf-2', 100],
    ]);
    expect(starts(mixed, 'fcfs', 2, false)).toEqual([
      ['swf-1', 0],
      ['swf-2', 100],
      ['swf-3', 110],
    ]);
  });

  it('sjf starts the shortest requested job first when GPUs free up', () => {
    // One GPU: A 100 s at 0, B 50 s at 1, C 10 s at 2. fcfs: A, B, C; sjf (and the default, which ranks by predicted run time): A, C, B.
    const oneGpu = swfTrace(1, [
      { job: 1, submit: 0, run: 100, procs: 1, req: 100 },
      { job: 2, submit: 1, run: 50, procs: 1, req: 50 },
      { job: 3, submit: 2, run: 10, procs: 1, req: 10 },
    ]);
    expect(starts(oneGpu, 'fcfs', 1)).toEqual([
      ['swf-1', 0],
      ['swf-2', 100],
      ['swf-3', 150],
    ]);
    expect(starts(oneGpu, 'default', 1)).toEqual([
      ['swf-1', 0],
      ['swf-3', 100],
      ['swf-2', 110],
    ]);
    expect(starts(oneGpu, 'sjf', 1)).toEqual([
      ['swf-1', 0],
      ['swf-3', 100],
      ['swf-2', 110],
    ]);
  });
});

describe('simulate', () => {
  it('counts jobs no node can hold as rejected by the core, and says so', () => {
    const report = simulate(swfTrace(2, [{ job: 1, submit: 0, run: 10, procs: 3 }, { job: 2, submit: 0, run: 10, procs: 1 }]), { gpusPerNode: 2 });
    expect(report.metrics.jobs).toBe(1);
    expect(report.metrics.rejected).toBe(1);
    expect(report.notes).toEqual(["cluster from the header's MaxProcs: 1 node(s) × 2 GPU(s)", '1 job(s) rejected by the core (first: swf-1: the job asks for 3 GPUs of one model, but all nodes together have at most 2 (largest node: node-0000, 2 × sim-gpu))']);
  });

  it('sizes the cluster from MaxProcs (else MaxNodes) mapped to GPUs unless given: one GPU per node by default', () => {
    const trace = swfTrace(64, [{ job: 1, submit: 0, run: 10, procs: 1 }]);
    expect(simulate(trace, { procsPerGpu: 4, gpusPerNode: 4 }).cluster).toEqual({ nodes: 4, gpusPerNode: 4, totalGpus: 16 });
    expect(simulate(trace, { nodes: 4 }).cluster).toEqual({ nodes: 4, gpusPerNode: 16, totalGpus: 64 });
    expect(simulate(trace).cluster).toEqual({ nodes: 64, gpusPerNode: 1, totalGpus: 64 });
    const lublin = trace.replace('; MaxProcs: 64', '; MaxNodes: 256');
    expect(simulate(lublin).cluster).toEqual({ nodes: 256, gpusPerNode: 1, totalGpus: 256 });
    expect(simulate(lublin).notes).toEqual(["cluster from the header's MaxNodes: 256 node(s) × 1 GPU(s)"]);
    expect(() => simulate('1 0 -1 10 1 -1 -1 1 -1 -1 1 1 -1 -1 -1 -1 -1 -1')).toThrow(ClusterSizeUnknownError);
  });

  it('passes --backfill to every policy: EASY for fcfs and sjf, strict order without', () => {
    // One node of 2 GPUs: A (1 GPU, 100 s) at 0, B (2 GPUs, 10 s) at 1, C (1 GPU, 10 s) at 2.
    // With backfill C runs in the gap before B's reservation at 100; without, B blocks C.
    const trace = swfTrace(2, [
      { job: 1, submit: 0, run: 100, procs: 1, req: 100 },
      { job: 2, submit: 1, run: 10, procs: 2, req: 10 },
      { job: 3, submit: 2, run: 10, procs: 1, req: 10 },
    ]);
    for (const policy of ['default', 'fcfs', 'sjf'] as const) {
      const on = simulate(trace, { gpusPerNode: 2, backfill: true, policy });
      const off = simulate(trace, { gpusPerNode: 2, backfill: false, policy });
      expect([policy, on.backfill, off.backfill]).toEqual([policy, 'on', 'off']);
      // Waits: on A 0, B 99, C 0 → 33 s; off A 0, B 99, C 108 → 69 s (sjf: B and C both 10 s, B first).
      expect([policy, on.metrics.averageWaitMs, off.metrics.averageWaitMs]).toEqual([policy, 33_000, 69_000]);
    }
    expect(simulate(trace, { gpusPerNode: 2, policy: 'fcfs' }).reservationDepth).toBe(1);
    expect(simulate(trace, { gpusPerNode: 2, policy: 'sjf', weights: { age: 5 } }).notes).toContain('weights ignored: sjf ranks by run time, not by priority');
  });

  it('takes the reservation depth, predictions and weights from the options', () => {
    const trace = swfTrace(2, [{ job: 1, submit: 0, run: 10, procs: 1, req: 100 }]);
    const r = simulate(trace, { gpusPerNode: 2, reservationDepth: 3, predictions: false, weights: { runTime: 0 } });
    expect([r.reservationDepth, r.predictions]).toEqual([3, 'off']);
  });
});

describe('metrics', () => {
  it('nearest-rank percentile', () => {
    expect(percentile([], 95)).toBe(0);
    expect(percentile([5], 95)).toBe(5);
    expect(percentile(Array.from({ length: 20 }, (_, i) => 20 - i), 95)).toBe(19);
    expect(percentile(Array.from({ length: 100 }, (_, i) => i + 1), 95)).toBe(95);
  });

  it('all zero when nothing ran', () => {
    expect(computeMetrics({ runs: [], rejected: [], totalGpus: 8 })).toMatchObject({ jobs: 0, averageWaitMs: 0, utilization: 0 });
  });
});

describe('simulate: jobs larger than a node', () => {
  // Two nodes of 2 GPUs; two 3-GPU jobs at 0 (10 s each): each needs both nodes, so they run one after the other.
  const wide = swfTrace(4, [
    { job: 1, submit: 0, run: 10, procs: 3, req: 10 },
    { job: 2, submit: 0, run: 10, procs: 3, req: 10 },
  ]);
  it.each(['default', 'fcfs', 'sjf'] as const)('%s runs them over whole nodes, the second once every part of the first is released', (policy) => {
    const runs = replay(toWorkload(parseSwf(wide).jobs).jobs, { cluster: { nodes: 2, gpusPerNode: 2 }, policy }).runs;
    expect(runs.map((r) => [r.jobId, r.startMs / 1000])).toEqual([
      ['swf-1', 0],
      ['swf-2', 10],
    ]);
  });
});
