/**
 * Quotes kept honest: the start times placement quotes (the expected start `gpunet status`
 * shows, an estimate of a submitted job), recorded with the job, and how far off they were.
 * Pure: `now` is an argument.
 *
 * A job's first quote is recorded when it is given: in its JobSubmitted, the estimate the submit
 * named (`gpunet estimate`, then `gpunet submit --estimate`) or else the one its deadline was
 * accepted on; else the first start shown for it in a JobQuoted ({@link quotesToRecord}).
 * Its first JobPlaced repeats it (`quote`), so its error, actual start − quoted start, is in the
 * job's record from the moment it starts. {@link quoteAccuracy} sums up a recent window
 * for `gpunet capacity`: median and p90 of the start errors, of the end errors where an end was
 * quoted (the estimates recorded in JobSubmitted), and how many jobs with an accepted deadline
 * (intake refuses a deadline the plan cannot meet) finished by it.
 */
import type { EventData } from '#contracts';
import { currentAttempt, type JobRecord, type PlacementState, type QuoteSample } from './state.js';
import type { Plan } from './plan.js';

/** Default window of {@link quoteAccuracy}: the last 7 days. */
export const QUOTE_WINDOW_MS = 7 * 24 * 3_600_000;

/**
 * The quotes to record for the waiting jobs `shown` (by id) with an expected start in `plan`:
 * a JobQuoted for each that has no quote yet and never ran. Recorded before the answer is given
 * (the scheduler's `recordQuotes`), so every start shown is in the job's record.
 */
export function quotesToRecord(state: PlacementState, plan: Plan, shown: ReadonlySet<string>): { type: 'JobQuoted'; data: EventData<'JobQuoted'> }[] {
  const out: { type: 'JobQuoted'; data: EventData<'JobQuoted'> }[] = [];
  for (const p of plan.jobs) {
    const job = state.jobs.get(p.job.jobId);
    if (p.expectedStart === undefined || !shown.has(p.job.jobId) || !job || job.quote || job.attempts.length > 0) continue;
    out.push({ type: 'JobQuoted', data: { jobId: p.job.jobId, expectedStart: new Date(p.expectedStart).toISOString(), quotedAt: new Date(plan.now).toISOString() } });
  }
  return out;
}

/** Recent quote accuracy; see the module comment. Errors in integer ms. */
export interface QuoteAccuracy {
  since: number;
  started: number;
  medianStartErrorMs?: number;
  p90StartErrorMs?: number;
  /** Jobs that completed in the window with an end quoted before (the estimate submitted on or a deadline accepted on, from JobSubmitted). */
  ended: number;
  /** Median of actual end − quoted end: negative when jobs ended earlier than quoted (a quoted end runs to the time limit). */
  medianEndErrorMs?: number;
  p90EndErrorMs?: number;
  deadlinesAccepted: number;
  deadlinesMet: number;
}

/**
 * What `job`'s quotes came to so far (see {@link QuoteSample}); undefined when it has nothing to
 * say: never quoted, no deadline, or not yet started or ended.
 */
export function quoteSampleOf(job: JobRecord): QuoteSample | undefined {
  const sample: QuoteSample = {};
  const first = job.attempts[0];
  if (first?.quote) {
    sample.startedAt = Date.parse(first.placedAt);
    sample.startErrorMs = sample.startedAt - first.quote.expectedStart;
  }
  const quotedEnd = job.quote?.expectedEnd;
  const last = currentAttempt(job);
  if (quotedEnd !== undefined && job.phase === 'ended' && last?.outcome === 'completed' && last.finishedAt !== undefined) {
    sample.endedAt = Date.parse(last.finishedAt);
    sample.endErrorMs = sample.endedAt - quotedEnd;
  }
  if (job.deadlineAt !== undefined && job.phase === 'ended' && job.end !== 'rejected' && !job.cancelRequested) {
    const endedAt = last?.finishedAt !== undefined ? Date.parse(last.finishedAt) : job.end === 'withdrawn' ? job.deadlineAt : undefined;
    if (endedAt !== undefined) sample.deadline = { endedAt, met: last?.outcome === 'completed' && endedAt <= job.deadlineAt };
  }
  return sample.startedAt === undefined && sample.endedAt === undefined && sample.deadline === undefined ? undefined : sample;
}

/**
 * Keeps a forgotten job's sample for {@link quoteAccuracy}, and lets go of those older than the
 * default window before the newest time this sample names: a sample leaves memory once no query
 * of the last {@link QUOTE_WINDOW_MS} can read it (placement's clock not behind the jobs' own).
 * So what is kept grows with the quoted jobs of a week, never with the whole history.
 */
export function keepQuoteSample(state: PlacementState, sample: QuoteSample): void {
  const samples = state.quoteSamples;
  samples.push(sample);
  const horizon = latestOf(sample) - QUOTE_WINDOW_MS;
  let stale = 0;
  while (stale < samples.length - 1 && latestOf(samples[stale]!) < horizon) stale++;
  if (stale > 0) samples.splice(0, stale);
}

function latestOf(s: QuoteSample): number {
  return Math.max(s.startedAt ?? -Infinity, s.endedAt ?? -Infinity, s.deadline?.endedAt ?? -Infinity);
}

/**
 * How honest the quotes of jobs that started (or ended, for deadlines) since `now − windowMs`
 * were: the jobs placement still knows and the samples of those it forgot.
 */
export function quoteAccuracy(state: PlacementState, now: number, windowMs = QUOTE_WINDOW_MS): QuoteAccuracy {
  const since = now - windowMs;
  const errors: number[] = [];
  const endErrors: number[] = [];
  let deadlinesAccepted = 0;
  let deadlinesMet = 0;
  const count = (s: QuoteSample | undefined) => {
    if (!s) return;
    if (s.startedAt !== undefined && s.startedAt >= since) errors.push(s.startErrorMs!);
    if (s.endedAt !== undefined && s.endedAt >= since) endErrors.push(s.endErrorMs!);
    if (s.deadline && s.deadline.endedAt >= since) {
      deadlinesAccepted++;
      if (s.deadline.met) deadlinesMet++;
    }
  };
  for (const job of state.jobs.values()) count(quoteSampleOf(job));
  for (const s of state.quoteSamples) count(s);
  const rank = (xs: number[], p: number) => xs[Math.max(0, Math.ceil((p / 100) * xs.length) - 1)]!;
  const median = (xs: number[]) => Math.round(rank([...xs].sort((a, b) => a - b), 50));
  const p90abs = (xs: number[]) => Math.round(rank(xs.map(Math.abs).sort((a, b) => a - b), 90));
  return {
    since,
    started: errors.length,
    ...(errors.length > 0 ? { medianStartErrorMs: median(errors), p90StartErrorMs: p90abs(errors) } : {}),
    ended: endErrors.length,
    ...(endErrors.length > 0 ? { medianEndErrorMs: median(endErrors), p90EndErrorMs: p90abs(endErrors) } : {}),
    deadlinesAccepted,
    deadlinesMet,
  };
}
