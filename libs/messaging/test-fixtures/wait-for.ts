/**
 * Polls `condition` until it returns a truthy value (returned) or `timeoutMs` passes (throws,
 * with `what` in the message). For tests and fixtures: await a condition instead of sleeping.
 */
export async function waitFor<T>(condition: () => T | Promise<T>, what: string, timeoutMs = 10_000, intervalMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A promise with its resolve function, to hold a handler until the test lets it go. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
