/**
 * `npm run bench:scheduling`: the scheduling literature's benchmark through placement's core.
 * Windows of 1,024 consecutive jobs sampled (seeded) from traces of the Lublin–Feitelson model on
 * 256 processors (`../src/simulator/lublin.ts`), as RLScheduler (Zhang et al., SC'20) samples
 * them, replayed on one GPU per processor, as 1 node × 256 GPUs and as 256 nodes × 1 GPU, under:
 *
 * - `fcfs`: strict first come, first served (no backfilling);
 * - `easy`: FCFS with EASY backfilling (one reservation, the user's limits as estimates);
 * - `sjf`: shortest requested time first with EASY backfilling;
 * - `default`: the core's default policy, as the service runs it unconfigured (SJF-like ranking by
 *   predicted run time under fair share, EASY, and headroom for short work: decision 0028).
 *
 * Workloads: `lublin-1` and `lublin-4` are the pure model (seeds 1 and 4) with modal user
 * estimates; `lublin-2` (seed 2) adds repeated work (half the jobs repeat one of the last 20 works),
 * which run-time predictions can learn from, and `lublin-3` (seed 3) a third of jobs repeating.
 * The default was chosen on other windows of the same traces (decision 0028). Figures are means over the windows: average bounded slowdown (τ = 10 s), mean
 * wait, utilization to the last start and to the last end, p95 wait of the smaller half of jobs
 * (GPUs × run time), max wait of the largest 10 %. The targets (issue 15): the default's bsld at
 * least 20 % below sjf's (ratio ≤ 0.8), and the largest jobs' max wait at most 2× easy's.
 *
 * Speed: CPU time of the core's replay of one window on 256 × 1 and of a 10,000-job trace, beside
 * a plain reference EASY simulator written here over processor counts (no core, no events): the
 * raw limit of the same work. The reference also checks the core: on 1 × 256 its FCFS-EASY
 * figures must equal the core's `easy` (they are printed side by side).
 *
 * Environment: GPUNET_BENCH_WINDOWS (default 10). Ends with one JSON line per figure, e.g.
 * {"bench":"scheduling.lublin-1.1x256.default.bsld","value":61.2,"unit":"","raw":80.5,"ratio":0.76}
 */
import { computeMetrics, type SimulationMetrics } from '../src/simulator/metrics.js';
import { prng } from '../src/simulator/generate-trace.js';
import { generateLublin, type LublinOptions } from '../src/simulator/lublin.js';
import type { PolicyName } from '../src/simulator/policies.js';
import { replay, type JobRun } from '../src/simulator/replay.js';
import { parseSwf } from '../src/simulator/swf.js';
import { toWorkload, type SimJob } from '../src/simulator/workload.js';
import type { PlanOptions } from '../src/domain/index.js';

const WINDOWS = Number(process.env.GPUNET_BENCH_WINDOWS ?? 10);
const WINDOW_JOBS = 1024;
const PROCS = 256;
const WORKLOADS: { name: string; options: LublinOptions }[] = [
  { name: 'lublin-1', options: { seed: 1 } },
  { name: 'lublin-2', options: { seed: 2, repeatProb: 0.5 } },
  { name: 'lublin-3', options: { seed: 3, repeatProb: 0.3 } },
  { name: 'lublin-4', options: { seed: 4 } },
];
const SHAPES: [number, number][] = [
  [1, PROCS],
  [PROCS, 1],
];
const POLICIES: { name: string; policy: PolicyName; plan: PlanOptions }[] = [
  { name: 'fcfs', policy: 'fcfs', plan: { backfill: false, predictions: false } },
  { name: 'easy', policy: 'fcfs', plan: { backfill: true, predictions: false } },
  { name: 'sjf', policy: 'sjf', plan: { backfill: true, predictions: false } },
  { name: 'default', policy: 'default', plan: {} },
];
const FIGURES = ['averageBoundedSlowdown', 'averageWaitMs', 'utilizationToLastStart', 'utilization', 'p95WaitSmallHalfMs', 'maxWaitLargest10PctMs'] as const;
type Figure = (typeof FIGURES)[number];
const SHORT: Record<Figure, string> = {
  averageBoundedSlowdown: 'bsld',
  averageWaitMs: 'meanWaitS',
  utilizationToLastStart: 'utilToLastStart',
  utilization: 'utilToLastEnd',
  p95WaitSmallHalfMs: 'p95WaitSmallHalfS',
  maxWaitLargest10PctMs: 'maxWaitLargest10PctS',
};

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Windows of 1,024 consecutive jobs at seeded random offsets, each re-based to start at 0. */
function windowsOf(jobs: readonly SimJob[], seed: number): SimJob[][] {
  const rand = prng(seed);
  return Array.from({ length: WINDOWS }, () => {
    const start = Math.floor(rand() * (jobs.length - WINDOW_JOBS));
    const w = jobs.slice(start, start + WINDOW_JOBS).map((j) => ({ ...j }));
    const t0 = w[0]!.submitMs;
    for (const j of w) j.submitMs -= t0;
    return w;
  });
}

function mean(ms: SimulationMetrics[]): Record<Figure, number> {
  const out = {} as Record<Figure, number>;
  for (const f of FIGURES) out[f] = ms.reduce((a, m) => a + m[f], 0) / ms.length;
  return out;
}

/**
 * The reference: FCFS with EASY backfilling over processor counts, as the literature's
 * simulators do it (a queue, the running jobs' expected ends from their limits, the head's
 * shadow time and extra processors). Same instants, same tie rules as the replay.
 */
function referenceEasy(jobs: readonly SimJob[], procs: number): JobRun[] {
  const runs: JobRun[] = [];
  const queue: SimJob[] = [];
  let running: { end: number; expected: number; procs: number }[] = [];
  let free = procs;
  let next = 0;
  for (;;) {
    const arrival = jobs[next]?.submitMs ?? Infinity;
    let finish = Infinity;
    for (const r of running) if (r.end < finish) finish = r.end;
    const t = Math.min(arrival, finish);
    if (t === Infinity) break;
    running = running.filter((r) => {
      if (r.end !== t) return true;
      free += r.procs;
      return false;
    });
    while (jobs[next]?.submitMs === t) queue.push(jobs[next++]!);
    const start = (j: SimJob) => {
      free -= j.gpus;
      running.push({ end: t + j.runMs, expected: Math.max(t + 1, t + j.timeLimitMs), procs: j.gpus });
      runs.push({ jobId: j.jobId, team: j.team, gpus: j.gpus, submitMs: j.submitMs, startMs: t, endMs: t + j.runMs, runMs: j.runMs, timeLimitMs: j.timeLimitMs, predictedRunMs: j.timeLimitMs });
    };
    while (queue.length > 0 && queue[0]!.gpus <= free) start(queue.shift()!);
    if (queue.length === 0) continue;
    const head = queue[0]!;
    const ends = running.map((r) => ({ at: Math.max(t + 1, r.expected), procs: r.procs })).sort((a, b) => a.at - b.at);
    let avail = free;
    let shadow = Infinity;
    for (const e of ends) {
      avail += e.procs;
      if (avail >= head.gpus) {
        shadow = e.at;
        break;
      }
    }
    // Processors free at the shadow time beyond the head's: work may run past the shadow on them.
    let extra = avail - head.gpus;
    for (let i = 1; i < queue.length; i++) {
      const j = queue[i]!;
      if (j.gpus > free) continue;
      const endsBefore = t + j.timeLimitMs <= shadow;
      if (!endsBefore && j.gpus > Math.min(extra, free)) continue;
      if (!endsBefore) extra -= j.gpus;
      start(j);
      queue.splice(i--, 1);
    }
  }
  return runs;
}

function main(): void {
  const rows: string[] = [];
  const json: string[] = [];
  const line = (bench: string, value: number, unit: string, raw: number) => json.push(JSON.stringify({ bench, value: +value.toFixed(4), unit, raw: +raw.toFixed(4), ratio: raw === 0 ? 0 : +(value / raw).toFixed(4) }));
  const verdicts: string[] = [];

  for (const w of WORKLOADS) {
    const all = toWorkload(parseSwf(generateLublin({ jobs: 10_000, maxProcs: PROCS, ...w.options })).jobs).jobs;
    const windows = windowsOf(all, 1000 + (w.options.seed ?? 1));
    for (const [nodes, gpusPerNode] of SHAPES) {
      const shape = `${nodes}x${gpusPerNode}`;
      const results = new Map<string, Record<Figure, number>>();
      for (const p of POLICIES) {
        const metrics = windows.map((jobs) => computeMetrics(replay(jobs, { cluster: { nodes, gpusPerNode }, policy: p.policy, plan: p.plan })));
        results.set(p.name, mean(metrics));
      }
      const reference = mean(windows.map((jobs) => computeMetrics({ runs: referenceEasy(jobs, PROCS), rejected: [], totalGpus: PROCS })));
      rows.push(`\n${w.name} on ${shape} (${WINDOWS} windows of ${WINDOW_JOBS} jobs)`);
      rows.push(`${'policy'.padEnd(12)}${FIGURES.map((f) => SHORT[f].padStart(22)).join('')}`);
      const fmt = (f: Figure, v: number) => (f.endsWith('Ms') ? (v / 1000).toFixed(0) : v.toFixed(f === 'averageBoundedSlowdown' ? 2 : 4));
      for (const [name, r] of [...results, ['reference-easy', reference] as const]) rows.push(`${name.padEnd(12)}${FIGURES.map((f) => fmt(f, r[f]).padStart(22)).join('')}`);
      const sjf = results.get('sjf')!;
      const easy = results.get('easy')!;
      for (const [name, r] of results) {
        for (const f of FIGURES) {
          const v = f.endsWith('Ms') ? r[f] / 1000 : r[f];
          // Slowdown and waits beside SJF-with-EASY's (the figure to beat), utilization beside EASY's.
          const base = f === 'maxWaitLargest10PctMs' ? easy : f.startsWith('utilization') ? easy : sjf;
          line(`scheduling.${w.name}.${shape}.${name}.${SHORT[f]}`, v, f.endsWith('Ms') ? 's' : '', f.endsWith('Ms') ? base[f] / 1000 : base[f]);
        }
      }
      const d = results.get('default')!;
      const bsldRatio = d.averageBoundedSlowdown / sjf.averageBoundedSlowdown;
      const bigRatio = d.maxWaitLargest10PctMs / easy.maxWaitLargest10PctMs;
      verdicts.push(`${w.name} ${shape}: default bsld / sjf ${bsldRatio.toFixed(3)} (target ≤ 0.8: ${bsldRatio <= 0.8 ? 'met' : 'NOT met'}); largest 10 % max wait / easy ${bigRatio.toFixed(3)} (target ≤ 2: ${bigRatio <= 2 ? 'met' : 'NOT met'}); reference EASY bsld ${reference.averageBoundedSlowdown.toFixed(2)} vs core easy ${easy.averageBoundedSlowdown.toFixed(2)}`);
    }
  }

  // Speed: one window on 256 × 1 and the whole 10,000-job trace, the core against the reference.
  const trace = toWorkload(parseSwf(generateLublin({ jobs: 10_000, maxProcs: PROCS, seed: 1 })).jobs).jobs;
  const window = windowsOf(trace, 1001)[0]!;
  const time = (f: () => unknown): number => {
    const c = cpuMs();
    f();
    return cpuMs() - c;
  };
  const speed: [string, SimJob[], number][] = [
    ['simulator.window1024.256x1', window, 1000],
    ['simulator.trace10000.256x1', trace, 10_000],
  ];
  for (const [name, jobs, target] of speed) {
    const core = time(() => replay(jobs, { cluster: { nodes: PROCS, gpusPerNode: 1 }, policy: 'default' }));
    const raw = time(() => referenceEasy(jobs, PROCS));
    rows.push(`${name}: ${core.toFixed(0)} CPU-ms (target ≤ ${target}), reference EASY ${raw.toFixed(0)} CPU-ms`);
    line(name, core, 'ms', raw);
  }

  process.stdout.write(`${rows.join('\n')}\n\n${verdicts.join('\n')}\n\n${json.join('\n')}\n`);
}

main();
