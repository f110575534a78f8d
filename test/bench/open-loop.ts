/**
 * An open-loop offer, for the benches that load a network at a fixed rate (bench:soak, and
 * bench:e2e's `--rate`): the i-th submit is due at `start + i / perSecond` and leaves then
 * whether or not the earlier ones are answered, so a network that falls behind meets a growing
 * backlog instead of slowing the offer down (a closed loop would measure only what it completes).
 */

/** Options of {@link openLoop}. */
export interface OpenLoopOptions {
  /** Submits due per second. */
  perSecond: number;
  /** Submits to offer. Without it the offer runs until `durationMs`. */
  count?: number;
  /** Offer only the submits due less than this long after `start`. */
  durationMs?: number;
  /**
   * Submits awaiting their answer at once; a submit due while this many are open is not sent
   * and counted in `cut` (the bench's own sockets and memory stay bounded). Default: no cap.
   */
  maxInFlight?: number;
  /** When the schedule starts, on the `performance.now()` clock. Default: now. */
  start?: number;
}

/** What became of the offer so far; the counts move as submits are sent and answered. */
export interface OpenLoopTally {
  /** Submits due so far (sent or cut). */
  offered: number;
  /** Sent and answered without error. */
  accepted: number;
  /** Sent and answered with an error. */
  failed: number;
  /** The first of those errors. */
  firstError?: unknown;
  /** Due while `maxInFlight` submits were open, so not sent. */
  cut: number;
  /** Sent and not yet answered. */
  inFlight: number;
}

/** A running open-loop offer. */
export interface OpenLoop {
  /** The live counts (read them while the offer runs, e.g. at each sample). */
  readonly tally: OpenLoopTally;
  /** Resolves once the last submit is due (sent or cut); submits sent may still be open. */
  readonly scheduled: Promise<OpenLoopTally>;
  /** Resolves once the last submit is due and every submit sent is answered. */
  readonly answered: Promise<OpenLoopTally>;
}

/**
 * Calls `send` on the open-loop schedule of `options` (at least one of `count` and `durationMs`).
 * A rejected `send` is counted in `failed`, never thrown: the caller decides what a failure means.
 */
export function openLoop(send: () => Promise<unknown>, options: OpenLoopOptions): OpenLoop {
  if (options.count === undefined && options.durationMs === undefined) throw new Error('openLoop needs count or durationMs: an offer without either never ends');
  if (!(options.perSecond > 0)) throw new Error(`openLoop perSecond must be above 0, got ${options.perSecond}`);
  const start = options.start ?? performance.now();
  const maxInFlight = options.maxInFlight ?? Infinity;
  const tally: OpenLoopTally = { offered: 0, accepted: 0, failed: 0, cut: 0, inFlight: 0 };
  let allAnswered: (() => void) | undefined;
  let scheduleDone = false;
  const answer = () => {
    tally.inFlight--;
    if (scheduleDone && tally.inFlight === 0) allAnswered?.();
  };

  const scheduled = (async () => {
    for (let i = 0; options.count === undefined || i < options.count; i++) {
      const dueIn = (i * 1000) / options.perSecond;
      if (options.durationMs !== undefined && dueIn >= options.durationMs) break;
      const wait = start + dueIn - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      tally.offered++;
      if (tally.inFlight >= maxInFlight) {
        tally.cut++;
        continue;
      }
      tally.inFlight++;
      send().then(
        () => tally.accepted++,
        (err: unknown) => {
          if (tally.failed++ === 0) tally.firstError = err;
        },
      ).finally(answer);
    }
    scheduleDone = true;
    return tally;
  })();
  const answered = scheduled.then(
    () =>
      new Promise<OpenLoopTally>((resolve) => {
        if (tally.inFlight === 0) resolve(tally);
        else allAnswered = () => resolve(tally);
      }),
  );
  return { tally, scheduled, answered };
}
