/**
 * Invoice periods: calendar months in UTC (`YYYY-MM`). UTC because every time the ledger bills
 * by is a UTC instant stamped by an agent, and a team's members may sit in several time zones;
 * one rule for all teams keeps a replay exact. Pure.
 */
import { ValidationError } from '#errors';

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

/** The UTC month of an epoch-ms instant, `YYYY-MM`. */
export function monthOf(epochMs: number): string {
  const d = new Date(epochMs);
  return `${String(d.getUTCFullYear()).padStart(4, '0')}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

function parts(month: string): [number, number] {
  const m = MONTH.exec(month);
  if (!m) throw new ValidationError(`month ${JSON.stringify(month)} is not YYYY-MM`, [{ path: 'month', message: 'must be `YYYY-MM`', fix: 'write e.g. `2025-06`' }]);
  return [Number(m[1]), Number(m[2])];
}

/** Epoch ms of the first instant of the month (UTC). */
export function monthStart(month: string): number {
  const [y, m] = parts(month);
  return Date.UTC(y, m - 1, 1);
}

/** Epoch ms of the first instant of the next month (UTC): the month's exclusive end. */
export function monthEnd(month: string): number {
  const [y, m] = parts(month);
  return Date.UTC(y, m, 1);
}

/** The month after. */
export function nextMonth(month: string): string {
  return monthOf(monthEnd(month));
}
