import { computeMetrics } from './metrics.js';
import { gammaCdf, generateLublin } from './lublin.js';
import { replay } from './replay.js';
import { simulate } from './simulate.js';
import { parseSwf } from './swf.js';
import { toWorkload } from './workload.js';

describe('the Lublin–Feitelson generator', () => {
  const text = generateLublin({ jobs: 3000, seed: 7 });
  const jobs = parseSwf(text).jobs;

  it('is deterministic for a seed, and differs between seeds', () => {
    expect(generateLublin({ jobs: 3000, seed: 7 })).toBe(text);
    expect(generateLublin({ jobs: 3000, seed: 8 })).not.toBe(text);
    expect(parseSwf(text).header).toMatchObject({ MaxProcs: '256', MaxNodes: '256' });
  });

  it('has the model\'s shape: about a quarter serial, mostly powers of two, run times within e^12 s, arrivals in order, limits at least the run', () => {
    const serial = jobs.filter((j) => j.requestedProcessors === 1).length / jobs.length;
    expect(serial).toBeGreaterThan(0.15);
    expect(serial).toBeLessThan(0.35);
    const pow2 = jobs.filter((j) => j.requestedProcessors > 1 && (j.requestedProcessors & (j.requestedProcessors - 1)) === 0).length / jobs.filter((j) => j.requestedProcessors > 1).length;
    expect(pow2).toBeGreaterThan(0.55);
    expect(Math.max(...jobs.map((j) => j.requestedProcessors))).toBeLessThanOrEqual(256);
    expect(Math.max(...jobs.map((j) => j.runTime))).toBeLessThanOrEqual(Math.exp(12));
    expect(jobs.every((j, i) => i === 0 || j.submitTime >= jobs[i - 1]!.submitTime)).toBe(true);
    expect(jobs.every((j) => j.requestedTime >= j.runTime)).toBe(true);
    // Larger jobs run longer (the model's negative pa).
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    expect(median(jobs.filter((j) => j.requestedProcessors >= 32).map((j) => j.runTime))).toBeGreaterThan(median(jobs.filter((j) => j.requestedProcessors === 1).map((j) => j.runTime)));
  });

  it('repeats recent work when asked, naming it in the executable field', () => {
    const r = parseSwf(generateLublin({ jobs: 2000, seed: 7, repeatProb: 0.5 })).jobs;
    const works = new Map<number, number>();
    for (const j of r) works.set(j.executable, (works.get(j.executable) ?? 0) + 1);
    expect(works.size).toBeLessThan(1500);
    expect(Math.max(...works.values())).toBeGreaterThan(5);
  });

  it('computes the gamma distribution function', () => {
    expect(gammaCdf(1, 1, 1)).toBeCloseTo(1 - Math.exp(-1), 10);
    expect(gammaCdf(2, 2, 1)).toBeCloseTo(1 - 3 * Math.exp(-2), 10);
    expect(gammaCdf(30, 2, 1)).toBeCloseTo(1, 10);
  });
});

describe('one node or many: the same schedule', () => {
  // 150 jobs of a Lublin trace: one node of 256 GPUs and 256 nodes of one give the same figures
  // (bench:scheduling shows it for every policy over 1,024-job windows).
  const jobs = toWorkload(parseSwf(generateLublin({ jobs: 150, seed: 3 })).jobs).jobs;
  it.each([
    ['default', {}],
    ['fcfs', { backfill: true }],
  ] as const)('%s %j', (policy, plan) => {
    const one = computeMetrics(replay(jobs, { cluster: { nodes: 1, gpusPerNode: 256 }, policy, plan }));
    const many = computeMetrics(replay(jobs, { cluster: { nodes: 256, gpusPerNode: 1 }, policy, plan }));
    expect(many).toEqual(one);
    expect(one.jobs).toBe(150);
  });

  it('reads a MaxNodes-only header as 256 one-GPU nodes without being told', () => {
    const text = generateLublin({ jobs: 50, seed: 3 }).replace(/^; MaxProcs: .*\n/m, '');
    expect(simulate(text).cluster).toEqual({ nodes: 256, gpusPerNode: 1, totalGpus: 256 });
  });
});
