/**
 * The Lublin–Feitelson workload model of rigid parallel jobs (U. Lublin and D. G. Feitelson,
 * "The workload on parallel supercomputers: modeling the characteristics of rigid jobs", JPDC
 * 63(11), 2003), written from the paper's description and published parameters, as SWF text:
 * the workload the scheduling literature samples its benchmark windows from (e.g. RLScheduler,
 * SC'20: 1,024-job windows on 256 processors). Pure and deterministic: the same options give the
 * same text.
 *
 * - **Job types**: batch and interactive jobs arrive as two streams, each with its own parameters;
 *   the next job is the one whose stream's next arrival comes first.
 * - **Size**: serial with probability `serialProb`; else log2(size) from a two-stage uniform
 *   (`[uLow, uMed]` with probability `uProb`, else `[uMed, uHi]`), rounded to an integer (a power
 *   of two) with probability `pow2Prob`; size = round(2^x), at most the machine.
 *   The published parameters are for 128 processors (uHi = 7 batch, 5.5 interactive); for a
 *   machine of P processors uHi and uMed shift by log2(P / 128), as the paper says to set them.
 * - **Run time**: log(run time) is hyper-gamma: gamma(a1, b1) with probability p = pa·size + pb
 *   (clipped to [0, 1]), else gamma(a2, b2); values above 12 (e^12 s ≈ 45 h) are drawn again. The
 *   negative pa makes larger jobs longer.
 * - **Arrivals**: the daily cycle is 48 half-hour buckets weighted by gamma(anum, bnum) (the day
 *   starting at 11:00 in the fit, moved back cyclically); an inter-arrival "budget" exp(g),
 *   g ~ gamma(aarr·arar, barr) (values above 13 drawn again), is paid out bucket by bucket, so
 *   jobs arrive densely in the day and sparsely at night.
 *
 * The model has no user estimates. Requested times follow the modal shape Tsafrir, Etsion and
 * Feitelson found in real traces (JSSPP 2005): users pick a round value (5 min, 15 min, 1 h, 4 h,
 * …); `exactEstimateProb` of them the first round value at least the run time, the others that of
 * the run time times a factor log-uniform in [1, `maxOverestimate`]. So about a fifth of the jobs
 * use most of their limit, and most use a small fraction, as in the archive's logs.
 *
 * Nor does it have users. `repeatProb` adds the locality of real workloads the run-time
 * predictions rely on: a job repeats one of the last `recentWorks` distinct works (same size,
 * same requested time, the executable field naming it, run time that work's times a factor
 * log-normal with σ `repeatSpread`, at most the requested time). 0 (the default) is the pure model.
 */
import { prng } from './generate-trace.js';

export interface LublinOptions {
  /** Jobs to generate. Default 10,000. */
  jobs?: number;
  /** Processors of the machine (the header's MaxProcs). Default 256. */
  maxProcs?: number;
  /** PRNG seed. Default 1. */
  seed?: number;
  /** Share of jobs whose requested time is the first round value at least their run time. Default 0.2. */
  exactEstimateProb?: number;
  /** Largest factor of over-estimation (log-uniform from 1). Default 20. */
  maxOverestimate?: number;
  /** Probability that a job repeats a recent work (see the module comment). Default 0. */
  repeatProb?: number;
  /** How many recent distinct works a repeat picks from. Default 20. */
  recentWorks?: number;
  /** σ of the log-normal factor on a repeat's run time. Default 0.3. */
  repeatSpread?: number;
}

interface StreamParams {
  serialProb: number;
  pow2Prob: number;
  uLow: number;
  uMed: number;
  uHi: number;
  uProb: number;
  a1: number;
  b1: number;
  a2: number;
  b2: number;
  pa: number;
  pb: number;
  aarr: number;
  barr: number;
  anum: number;
  bnum: number;
  arar: number;
}

/** The paper's parameters for batch and interactive jobs on 128 processors. */
const BATCH: StreamParams = { serialProb: 0.2927, pow2Prob: 0.6686, uLow: 1.2, uMed: 5, uHi: 7, uProb: 0.875, a1: 6.57, b1: 0.823, a2: 639.1, b2: 0.0156, pa: -0.003, pb: 0.6986, aarr: 6.0415, barr: 0.8531, anum: 6.1271, bnum: 5.274, arar: 1.0519 };
const INTERACTIVE: StreamParams = { serialProb: 0.1541, pow2Prob: 0.625, uLow: 1, uMed: 3, uHi: 5.5, uProb: 0.705, a1: 3.8351, b1: 0.6605, a2: 7.073, b2: 0.6856, pa: -0.0118, pb: 0.9156, aarr: 6.551, barr: 0.6621, anum: 8.9186, bnum: 3.668, arar: 0.9797 };

const BUCKETS = 48;
const BUCKET_S = (24 * 3600) / BUCKETS;
const DAY_START_BUCKET = 11;
const MAX_LOG_RUN = 12;
const MAX_LOG_ARRIVAL = 13;

/** Round values users pick for requested times, in seconds. */
const ROUND_LIMITS_S = [60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400, 7200, 10800, 14400, 18000, 21600, 28800, 36000, 43200, 64800, 86400, 129600, 172800, 259200];

/** The workload as SWF text (header comments, then one line per job). */
export function generateLublin(options: LublinOptions = {}): string {
  const jobs = options.jobs ?? 10_000;
  const procs = options.maxProcs ?? 256;
  const seed = options.seed ?? 1;
  const exact = options.exactEstimateProb ?? 0.2;
  const maxOver = options.maxOverestimate ?? 20;
  const repeatProb = options.repeatProb ?? 0;
  const recentWorks = options.recentWorks ?? 20;
  const spread = options.repeatSpread ?? 0.3;
  const rand = prng(seed);
  const shift = Math.log2(procs / 128);
  const streams = [BATCH, INTERACTIVE].map((p) => ({ ...p, uHi: Math.min(Math.log2(procs), p.uHi + shift), uMed: p.uMed + shift }));
  const arrivals = streams.map((p) => new ArrivalStream(p, rand));

  const lines = [
    '; Version: 2.2',
    `; Computer: Lublin-Feitelson model (JPDC 2003), ${procs} processors (services/placement/src/simulator/lublin.ts)`,
    `; Note: seed ${seed}; requested times modal (exact ${exact}, over-estimate up to ${maxOver}x); repeats ${repeatProb}`,
    `; MaxJobs: ${jobs}`,
    `; MaxProcs: ${procs}`,
    `; MaxNodes: ${procs}`,
    '; UnixStartTime: 1767225600',
  ];
  const recent: { work: number; size: number; runS: number; requestedS: number }[] = [];
  let works = 0;
  for (let n = 1; n <= jobs; n++) {
    const type = arrivals[0]!.next <= arrivals[1]!.next ? 0 : 1;
    const submit = Math.floor(arrivals[type]!.take());
    const p = streams[type]!;
    let size: number;
    let runS: number;
    let requestedS: number;
    let work: number;
    if (recent.length > 0 && rand() < repeatProb) {
      const r = recent[Math.floor(rand() * recent.length)]!;
      size = r.size;
      requestedS = r.requestedS;
      work = r.work;
      runS = Math.max(1, Math.min(requestedS, Math.round(r.runS * Math.exp(spread * normal(rand)))));
    } else {
      size = jobSize(p, procs, rand);
      runS = runTime(p, size, rand);
      requestedS = requested(runS, exact, maxOver, rand);
      work = repeatProb > 0 ? ++works : -1;
      if (repeatProb > 0) {
        recent.push({ work, size, runS, requestedS });
        if (recent.length > recentWorks) recent.shift();
      }
    }
    const fields = [n, submit, -1, runS, size, -1, -1, size, requestedS, -1, 1, -1, -1, work, type === 0 ? 1 : 0, -1, -1, -1];
    lines.push(fields.join(' '));
  }
  return `${lines.join('\n')}\n`;
}

function jobSize(p: StreamParams, procs: number, rand: () => number): number {
  const u = rand();
  if (u <= p.serialProb) return 1;
  let x = rand() <= p.uProb ? p.uLow + (p.uMed - p.uLow) * rand() : p.uMed + (p.uHi - p.uMed) * rand();
  if (u <= p.serialProb + p.pow2Prob) x = Math.round(x);
  return Math.max(1, Math.min(procs, Math.round(2 ** x)));
}

function runTime(p: StreamParams, size: number, rand: () => number): number {
  const mix = Math.min(1, Math.max(0, p.pa * size + p.pb));
  let x: number;
  do x = rand() <= mix ? gamma(p.a1, p.b1, rand) : gamma(p.a2, p.b2, rand);
  while (x > MAX_LOG_RUN);
  return Math.max(1, Math.floor(Math.exp(x)));
}

function requested(runS: number, exact: number, maxOver: number, rand: () => number): number {
  const factor = rand() < exact ? 1 : Math.exp(rand() * Math.log(maxOver));
  const want = runS * factor;
  return ROUND_LIMITS_S.find((v) => v >= want) ?? Math.max(runS, ROUND_LIMITS_S[ROUND_LIMITS_S.length - 1]!);
}

/** One stream's arrivals: the daily cycle's bucket weights and the budget paid out over them. */
class ArrivalStream {
  /** Seconds from the start of the trace of this stream's next job. */
  next = 0;
  private bucket = 0;
  private remainder = 0;
  private readonly weights: number[];

  constructor(
    private readonly p: StreamParams,
    private readonly rand: () => number,
  ) {
    const w = new Array<number>(BUCKETS).fill(0);
    for (let i = DAY_START_BUCKET; i < BUCKETS + DAY_START_BUCKET; i++) w[(i - 1) % BUCKETS] = gammaCdf(i + 0.5, p.anum, p.bnum) - gammaCdf(i - 0.5, p.anum, p.bnum);
    const mean = w.reduce((a, b) => a + b, 0) / BUCKETS;
    this.weights = w.map((x) => x / mean);
    this.advance();
  }

  /** The next arrival, and draws the one after it. */
  take(): number {
    const t = this.next;
    this.advance();
    return t;
  }

  private advance(): void {
    let g: number;
    do g = gamma(this.p.aarr * this.p.arar, this.p.barr, this.rand);
    while (g > MAX_LOG_ARRIVAL);
    let points = Math.exp(g) / BUCKET_S + this.remainder * this.weights[this.bucket]!;
    let dt = -this.remainder * BUCKET_S;
    while (points > this.weights[this.bucket]!) {
      points -= this.weights[this.bucket]!;
      this.bucket = (this.bucket + 1) % BUCKETS;
      dt += BUCKET_S;
    }
    this.remainder = points / this.weights[this.bucket]!;
    dt += this.remainder * BUCKET_S;
    this.next += dt;
  }
}

/** A standard normal variate (Box–Muller). */
function normal(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}

/** A gamma(shape, scale) variate (Marsaglia & Tsang 2000; shape < 1 by the boost u^(1/shape)). */
function gamma(shape: number, scale: number, rand: () => number): number {
  if (shape < 1) return gamma(shape + 1, scale, rand) * Math.pow(1 - rand(), 1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(rand);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rand();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v * scale;
  }
}

/** The gamma(shape, scale) distribution function: the regularized lower incomplete gamma P(shape, x / scale). */
export function gammaCdf(x: number, shape: number, scale: number): number {
  const z = x / scale;
  if (z <= 0) return 0;
  const lnPrefix = -z + shape * Math.log(z) - logGamma(shape);
  if (z < shape + 1) {
    // Series: P = e^{-z} z^a / Γ(a) · Σ z^n / (a (a+1) … (a+n)).
    let term = 1 / shape;
    let sum = term;
    for (let n = 1; n < 1000 && term > sum * 1e-15; n++) {
      term *= z / (shape + n);
      sum += term;
    }
    return sum * Math.exp(lnPrefix);
  }
  // Continued fraction for Q = 1 − P (modified Lentz).
  let b = z + 1 - shape;
  let c = 1 / 1e-300;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - shape);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (Math.abs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return 1 - Math.exp(lnPrefix) * h;
}

/** ln Γ(x) for x > 0 (Lanczos, g = 7). */
function logGamma(x: number): number {
  const g = 7;
  const c = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - logGamma(1 - x);
  const y = x - 1;
  let a = c[0]!;
  const t = y + g + 0.5;
  for (let i = 1; i < g + 2; i++) a += c[i]! / (y + i);
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
}
