/**
 * Deadlines as people write them, resolved to an instant in the team's time zone. Pure: the clock
 * and the zone are arguments; offsets come from `Intl.DateTimeFormat` (the IANA data Node ships),
 * so no time-zone library is needed.
 *
 * Accepted forms (case-insensitive; a leading `by ` is ignored, so `by tonight` = `tonight`):
 * - an ISO-8601 time with offset, `2026-07-01T18:00:00Z`, taken as written;
 * - an ISO-8601 local time without offset, `2026-07-01T18:00` or `2026-07-01 18:00`, in the team's zone;
 * - `+<duration>` or `in <duration>` from now, e.g. `+6h`, `in 90m`, `in 1h30m` (units ms s m h d);
 * - `tonight`, `end of day`, `eod`: today 23:59 local, or tomorrow's 23:59 once that has passed;
 * - `tomorrow`: tomorrow 23:59 local; `tomorrow HH:MM`, `today HH:MM`: that local time;
 * - `end of week`, `eow`: Friday 23:59 local of this week (work weeks end on Friday; on a Saturday,
 *   a Sunday, or a Friday after 23:59 it is the next Friday's).
 * Local times that fall into a daylight-saving gap move forward by the gap (02:30 on a spring-forward
 * night is 03:30); a local time that occurs twice (autumn) is the earlier one. (`Temporal`'s
 * `compatible` disambiguation.) A deadline that is not in the future is refused.
 */

/** The time zone of a team without one: UTC. */
export const DEFAULT_TIME_ZONE = 'UTC';

/** One problem with the deadline, shaped like the contracts' FieldIssue. */
export interface DeadlineIssue {
  path: string;
  message: string;
  fix: string;
}

export type DeadlineResolution = { ok: true; at: Date } | { ok: false; issue: DeadlineIssue };

export interface DeadlineContext {
  /** The submit time. */
  now: Date;
  /** IANA zone of the team (API key `timeZone`). Default {@link DEFAULT_TIME_ZONE}. */
  timeZone?: string | undefined;
}

/** Field the issues name. */
const PATH = 'request.deadline';
/** What to write instead, listed in every issue. */
export const DEADLINE_FORMS =
  'an ISO time (`2026-07-01T18:00:00Z`, or `2026-07-01 18:00` in your team\'s time zone), `+6h` / `in 90m`, `tonight`, `end of day`, `tomorrow`, `tomorrow 09:00`, `today 18:00` or `end of week`';

const DAY_MS = 86_400_000;
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: DAY_MS } as const;
const DURATION = /^(?:\d{1,9}(?:ms|s|m|h|d))+$/;
const DURATION_PART = /(\d+)(ms|s|m|h|d)/g;
const LOCAL_ISO = /^(\d{4})-(\d{2})-(\d{2})[t ](\d{2}):(\d{2})(?::(\d{2}))?$/;
const DAY_AT = /^(today|tomorrow) (\d{1,2}):(\d{2})$/;

/** Resolves `text` against `now` in the team's zone. Never throws for bad input: returns the issue. */
export function resolveDeadline(text: string, context: DeadlineContext): DeadlineResolution {
  const { now } = context;
  const zone = context.timeZone ?? DEFAULT_TIME_ZONE;
  const phrase = text.trim().toLowerCase().replace(/\s+/g, ' ').replace(/^by /, '');
  const ms = instantOf(phrase, now, zone);
  if (ms === undefined) return fail(`is not a deadline: \`${text}\``);
  if (!(ms > now.getTime())) return fail(`has already passed (${new Date(ms).toISOString()})`);
  return { ok: true, at: new Date(ms) };
}

function fail(message: string): DeadlineResolution {
  return { ok: false, issue: { path: PATH, message, fix: `write ${DEADLINE_FORMS}` } };
}

/** Epoch ms of a normalized phrase, or undefined when it is none of the accepted forms. */
function instantOf(phrase: string, now: Date, zone: string): number | undefined {
  const relative = /^(?:\+|in )(.+)$/.exec(phrase)?.[1]?.replace(/ /g, '');
  if (relative !== undefined) {
    const d = durationMs(relative);
    return d === undefined ? undefined : now.getTime() + d;
  }
  const today = localDate(now.getTime(), zone);
  switch (phrase) {
    case 'tonight':
    case 'end of day':
    case 'eod': {
      const t = zonedToEpoch(today, 23, 59, zone);
      return t > now.getTime() ? t : zonedToEpoch(addDays(today, 1), 23, 59, zone);
    }
    case 'tomorrow':
      return zonedToEpoch(addDays(today, 1), 23, 59, zone);
    case 'end of week':
    case 'eow': {
      // weekday: 0 = Sunday … 5 = Friday, 6 = Saturday
      const weekday = new Date(Date.UTC(today.y, today.m - 1, today.d)).getUTCDay();
      const t = zonedToEpoch(addDays(today, (5 - weekday + 7) % 7), 23, 59, zone);
      return t > now.getTime() ? t : zonedToEpoch(addDays(today, ((5 - weekday + 7) % 7) + 7), 23, 59, zone);
    }
  }
  const dayAt = DAY_AT.exec(phrase);
  if (dayAt) {
    const [h, min] = [Number(dayAt[2]), Number(dayAt[3])];
    if (h > 23 || min > 59) return undefined;
    return zonedToEpoch(dayAt[1] === 'today' ? today : addDays(today, 1), h, min, zone);
  }
  const local = LOCAL_ISO.exec(phrase);
  if (local) {
    const [y, m, d, h, min, s] = local.slice(1).map((v) => Number(v ?? 0)) as [number, number, number, number, number, number];
    const probe = new Date(Date.UTC(y, m - 1, d, h, min, s));
    if (probe.getUTCMonth() !== m - 1 || probe.getUTCDate() !== d || h > 23 || min > 59 || s > 59) return undefined;
    return zonedToEpoch({ y, m, d }, h, min, zone, s);
  }
  // An ISO time with an offset (Date.parse also takes other shapes: require the ISO one).
  if (/^\d{4}-\d{2}-\d{2}t\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:\d{2})$/.test(phrase)) {
    const t = Date.parse(phrase.toUpperCase());
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}

function durationMs(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, digits, unit] of text.matchAll(DURATION_PART)) total += Number(digits) * UNIT_MS[unit as keyof typeof UNIT_MS];
  return Number.isSafeInteger(total) ? total : undefined;
}

interface LocalDate {
  y: number;
  /** 1–12 */
  m: number;
  d: number;
}

function addDays(date: LocalDate, days: number): LocalDate {
  const t = new Date(Date.UTC(date.y, date.m - 1, date.d + days));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock of `epochMs` in `zone`, as if it were UTC (epoch ms, whole seconds). */
function wallClock(epochMs: number, zone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(new Date(epochMs))) if (part.type !== 'literal') p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

function localDate(epochMs: number, zone: string): LocalDate {
  const t = new Date(wallClock(epochMs, zone));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}

/** Offset of `zone` from UTC at `epochMs`, in ms (Berlin in summer: +7_200_000). */
function offsetAt(epochMs: number, zone: string): number {
  const whole = epochMs - (((epochMs % 1000) + 1000) % 1000);
  return wallClock(whole, zone) - whole;
}

/**
 * The instant a local wall-clock time names in `zone`. Candidates use the offsets a day before and
 * a day after (no zone changes twice within two days): both valid → the earlier (autumn overlap);
 * neither valid → the time lies in a spring gap and is shifted forward by it.
 */
export function zonedToEpoch(date: LocalDate, hour: number, minute: number, zone: string, second = 0): number {
  const wall = Date.UTC(date.y, date.m - 1, date.d, hour, minute, second);
  const before = wall - offsetAt(wall - DAY_MS, zone);
  const after = wall - offsetAt(wall + DAY_MS, zone);
  const valid = [before, after].filter((t) => wallClock(t, zone) === wall);
  if (valid.length > 0) return Math.min(...valid);
  return before;
}
