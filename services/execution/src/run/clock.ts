/** Wall-clock source for run timestamps, injected so tests and replays are deterministic. */
export interface Clock {
  /** Milliseconds since the Unix epoch, an integer. */
  now(): number;
}

/** The real clock. */
export const systemClock: Clock = { now: () => Date.now() };
