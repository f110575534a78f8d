/**
 * A deterministic synthetic SWF trace: many small, short jobs and a few large, long ones arriving
 * as a Poisson stream, with over-estimated requested times as real users write them. Pure: the
 * same options give the same text, byte for byte (`examples/traces/small.swf` is its output).
 */

export interface TraceOptions {
  /** Jobs to generate. Default 300. */
  jobs?: number;
  /** PRNG seed. Default 4. */
  seed?: number;
  /** Processors of the traced machine (the header's MaxProcs). Default 64. */
  maxProcs?: number;
  /** Mean seconds between submissions. Default 90. */
  meanInterarrivalS?: number;
}

/** Mulberry32: small, fast, and the same on every platform (no Math.random). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** The trace as SWF text (header comments, then one line per job, integer fields). */
export function generateTrace(options: TraceOptions = {}): string {
  const jobs = options.jobs ?? 300;
  const seed = options.seed ?? 4;
  const maxProcs = options.maxProcs ?? 64;
  const mean = options.meanInterarrivalS ?? 90;
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const between = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));

  const lines = [
    '; Version: 2.2',
    '; Computer: gpunet synthetic mixed workload (services/placement/src/simulator/generate-trace.ts)',
    `; Note: deterministic, seed ${seed}; ~85% small short jobs, ~12% medium, ~3% whole-node long jobs`,
    `; MaxJobs: ${jobs}`,
    `; MaxProcs: ${maxProcs}`,
    '; UnixStartTime: 1767225600',
  ];
  let submit = 0;
  for (let n = 1; n <= jobs; n++) {
    submit += Math.round(-Math.log(1 - rand()) * mean);
    const kind = rand();
    let procs: number;
    let run: number;
    if (kind < 0.85) {
      procs = pick([1, 1, 1, 2, 2, 4]);
      run = between(30, 1_800);
    } else if (kind < 0.97) {
      procs = pick([4, 8]);
      run = between(1_800, 3 * 3_600);
    } else {
      procs = 8;
      run = between(4 * 3_600, 8 * 3_600);
    }
    // Users over-ask: 1–3× the run time, rounded up to whole minutes; some jobs hit their limit.
    const requested = rand() < 0.05 ? Math.max(60, Math.floor(run / 120) * 60) : Math.ceil((run * (1 + 2 * rand())) / 60) * 60;
    const runTime = Math.min(run, requested + between(0, 30));
    const user = between(1, 12);
    const group = 1 + (user % 4);
    const fields = [n, submit, -1, runTime, procs, -1, -1, procs, requested, -1, 1, user, group, -1, 1, -1, -1, -1];
    lines.push(fields.join(' '));
  }
  return `${lines.join('\n')}\n`;
}
