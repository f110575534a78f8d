import { isAbsolute, relative } from 'node:path';

/**
 * Text for people: money, durations, sizes, times, tables. Pure. Money and billing time are
 * integers (micro-units, ms) and are formatted with integer arithmetic only: a float would
 * print 0.1 + 0.2 as 0.30000000000000004 and, worse, round a bill.
 */

const MICROS_PER_UNIT = 1_000_000n;

/**
 * Integer micro-units as units with 6 decimals, e.g. `1234567` → `1.234567`, `-5` → `-0.000005`.
 * Takes a number (must be a safe integer), a bigint or decimal text.
 */
export function formatMicros(micros: number | bigint | string): string {
  const value = toBigInt(micros, 'micros');
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = abs / MICROS_PER_UNIT;
  const fraction = (abs % MICROS_PER_UNIT).toString().padStart(6, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

/** Sum of integer micro amounts, exactly (bigint, so no safe-integer ceiling on totals). */
export function sumMicros(amounts: Iterable<number | bigint | string>): bigint {
  let total = 0n;
  for (const a of amounts) total += toBigInt(a, 'micros');
  return total;
}

function toBigInt(value: number | bigint | string, what: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new RangeError(`${what} must be a safe integer, got ${value}`);
    return BigInt(value);
  }
  if (!/^-?\d+$/.test(value)) throw new RangeError(`${what} must be an integer, got ${JSON.stringify(value)}`);
  return BigInt(value);
}

/** Whole milliseconds as seconds with 3 decimals, e.g. `4444` → `4.444 s`; from an hour on, `1h 02m 03.004s`. */
export function formatMs(ms: number): string {
  if (!Number.isSafeInteger(ms)) throw new RangeError(`ms must be a safe integer, got ${ms}`);
  const negative = ms < 0;
  let rest = Math.abs(ms);
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const sign = negative ? '-' : '';
  if (rest < 3600) return `${sign}${rest}.${String(millis).padStart(3, '0')} s`;
  const s = rest % 60;
  const m = ((rest - s) / 60) % 60;
  const h = (rest - s - m * 60) / 3600;
  return `${sign}${h}h ${String(m).padStart(2, '0')}m ${String(s).padStart(2, '0')}.${String(millis).padStart(3, '0')}s`;
}

/** A whole-ms duration in the units people write in a job file, e.g. `300000` → `5m`, `5400500` → `1h30m500ms`. */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`ms must be a safe integer ≥ 0, got ${ms}`);
  if (ms === 0) return '0s';
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000], ['ms', 1]];
  let rest = ms;
  let out = '';
  for (const [unit, size] of units) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return out;
}

/**
 * A wait as people read it: {@link formatDuration} rounded to whole seconds once it is a second or
 * more (`1m49s`, not `1m49s283ms`); below a second, in ms. For predictions, whose ms mean nothing.
 */
export function formatWait(ms: number): string {
  return formatDuration(ms >= 1000 ? Math.round(ms / 1000) * 1000 : Math.max(0, Math.round(ms)));
}

/** Bytes with a binary unit, e.g. `1536` → `1.5 KiB`. For display only. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** A UTC ISO time as `HH:MM:SS.mmm` (the date is shown once where it matters). */
export function clockTime(iso: string): string {
  return /T(\d\d:\d\d:\d\d(?:\.\d+)?)/.exec(iso)?.[1]?.padEnd(12, '0').slice(0, 12) ?? iso;
}

/** Whole ms between two ISO times, or undefined when either is missing or unreadable. */
export function msBetween(from: string | undefined, to: string | undefined): number | undefined {
  if (!from || !to) return undefined;
  const a = Date.parse(from);
  const b = Date.parse(to);
  return Number.isNaN(a) || Number.isNaN(b) ? undefined : b - a;
}

/** `+1.234 s` offset of `at` from `start`, for timelines. */
export function offset(start: string, at: string): string {
  const ms = msBetween(start, at);
  return ms === undefined ? '' : `+${formatMs(ms)}`;
}

/** Left-aligned columns separated by two spaces; `align` marks columns to right-align (numbers, money). */
export function table(header: readonly string[], rows: readonly (readonly string[])[], align: readonly ('l' | 'r')[] = []): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (align[i] === 'r' ? c.padStart(widths[i]!) : i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A path as people want to read it: relative when it is under `cwd`, absolute otherwise. */
export function displayPath(cwd: string, path: string): string {
  const rel = relative(cwd, path);
  if (rel === '') return '.';
  return rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}
