/**
 * Durations as people write them in a job spec (`2h`, `90m`, `1h30m`, `45s`, `500ms`, `7d`)
 * and as messages carry them (integer milliseconds). Pure, no floats.
 */

/** Units a duration may use, in milliseconds. `ms` is listed first so `10ms` is not read as minutes. */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** One or more `<digits><unit>` parts, unit one of ms, s, m, h, d; e.g. `1h30m`. Exported for JSON Schema. */
export const DURATION_PATTERN = /^(?:\d{1,9}(?:ms|s|m|h|d))+$/;

const PART = /(\d+)(ms|s|m|h|d)/g;

/** Milliseconds in `text`, or undefined when it is not a duration or exceeds the safe integer range. */
export function parseDuration(text: string): number | undefined {
  if (!DURATION_PATTERN.test(text)) return undefined;
  let total = 0;
  for (const [, digits, unit] of text.matchAll(PART)) {
    total += Number(digits) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}

/** The shortest duration text for `ms` (a non-negative integer), e.g. 5_400_000 → `1h30m`, 0 → `0s`. */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`duration must be a non-negative safe integer of ms, got ${ms}`);
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const size = UNIT_MS[unit];
    const count = Math.floor(rest / size);
    if (count > 0) {
      out += `${count}${unit}`;
      rest -= count * size;
    }
  }
  return out;
}
