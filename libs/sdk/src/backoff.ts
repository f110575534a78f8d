/**
 * How long to wait between polls: quick at first (most short jobs change state within a second),
 * then slower so a long job does not cost the API a request every few hundred ms.
 */

/** Options of {@link pollDelayMs}. */
export interface PollBackoff {
  /** First delay. Default 200 ms. */
  initialMs?: number;
  /** Largest delay. Default 2000 ms. */
  maxMs?: number;
  /** Growth per poll without change. Default 1.5. */
  factor?: number;
}

export const DEFAULT_POLL_BACKOFF: Required<PollBackoff> = { initialMs: 200, maxMs: 2_000, factor: 1.5 };

/**
 * Delay before poll number `unchanged + 1`, where `unchanged` counts the polls in a row that saw
 * nothing new (0 right after a change, so the next poll comes quickly again). Whole ms.
 */
export function pollDelayMs(unchanged: number, backoff: PollBackoff = {}): number {
  const { initialMs, maxMs, factor } = { ...DEFAULT_POLL_BACKOFF, ...backoff };
  const n = Math.max(0, Math.floor(unchanged));
  // Capped exponent: factor^n overflows to Infinity long before n matters, but min() handles it.
  return Math.round(Math.min(maxMs, initialMs * factor ** Math.min(n, 64)));
}
