const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+)(ms|s|m|h|d)$/;

/**
 * Parses a duration written for people (`500ms`, `30s`, `2m`, `1h`, `30d`) or a plain number of
 * milliseconds. Returns integer milliseconds; throws RangeError on anything else.
 */
export function parseDurationMs(value: string | number): number {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`duration must be a non-negative integer of ms, got ${value}`);
    return value;
  }
  const m = DURATION.exec(value.trim());
  if (!m) throw new RangeError(`duration "${value}" must look like 500ms, 30s, 2m, 1h or 30d`);
  return Number(m[1]) * UNIT_MS[m[2]!]!;
}

/** Milliseconds to the nanoseconds the JetStream API expects. */
export function msToNanos(ms: number): number {
  return ms * 1_000_000;
}
