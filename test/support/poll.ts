/** Waiting for a condition across processes: poll with a deadline, never a fixed sleep. */

/** Options of {@link until}. */
export interface UntilOptions {
  /** Give up after this long. Default 30 s. */
  timeoutMs?: number;
  /** Pause between checks. Default 100 ms. */
  intervalMs?: number;
  /** Describes the last value seen, for the timeout message (e.g. counts so far). */
  describe?: () => string;
}

/** The condition was not met in time. */
export class UntilTimeoutError extends Error {
  constructor(what: string, timeoutMs: number, detail: string, options?: { cause?: unknown }) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${detail ? `: ${detail}` : ''}`, options);
    this.name = 'UntilTimeoutError';
  }
}

/**
 * Calls `check` until it returns something other than `undefined`, `null` or `false`, and
 * resolves with that value; rejects with an {@link UntilTimeoutError} naming `what` after the
 * timeout. An error thrown by `check` fails at once (a broken check should not look like a slow one).
 */
export async function until<T>(what: string, check: () => T | Promise<T>, options: UntilOptions = {}): Promise<Exclude<T, undefined | null | false>> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== null && value !== false) return value as Exclude<T, undefined | null | false>;
    if (Date.now() >= deadline) throw new UntilTimeoutError(what, timeoutMs, options.describe?.() ?? '');
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 100));
  }
}
