/**
 * Pricing: versioned price lists and the one rounding rule. Pure: no I/O, no clock, no floats.
 *
 * Money is integer micro-units (1 unit = 1,000,000 micros); time is integer milliseconds.
 * charge = gpus × billableMs × ratePerGpuHour / 3,600,000, computed exactly in bigint, then
 * rounded once per attempt line, half up (0.5 micro rounds away from zero). Nothing else rounds.
 */
import { ROUNDING_RULE_PER_LINE_HALF_UP } from '#contracts';
import { IllegalStateError } from '#errors';

export const MS_PER_HOUR = 3_600_000n;

/** The rounding rule's name, recorded on every usage line so a replay can tell which rule applied. */
export const ROUNDING_RULE = ROUNDING_RULE_PER_LINE_HALF_UP;

/** One version of the price list: rates per GPU model, in force from `effectiveFrom` on. */
export interface PriceListVersion {
  version: number;
  /** ISO 4217 code of every rate of this version (e.g. `EUR`). */
  currency: string;
  /** Epoch ms from which this version applies (inclusive). */
  effectiveFrom: number;
  /** Micro-units per GPU per hour, keyed by GPU model name (e.g. `A100-80GB`). */
  ratesMicrosPerGpuHour: Readonly<Record<string, number>>;
  /** Rate for models the list does not name; absent means such models cannot be priced. */
  defaultRateMicrosPerGpuHour?: number;
  /** Least amount of a charged line (billableMs > 0, not waived); absent means no minimum. */
  minimumChargeMicros?: number;
}

export interface Rate {
  priceListVersion: number;
  rateMicrosPerGpuHour: number;
  currency: string;
  /** The version's minimum charge per line, when it has one. */
  minimumChargeMicros?: number;
}

/**
 * No version covers the time, or the version in force has no rate for the model and no default.
 * Terminal: retrying cannot help until someone publishes a price list that covers it.
 */
export class NoPriceError extends IllegalStateError {
  constructor(
    readonly gpuModel: string,
    readonly at: number,
  ) {
    super(`no price for GPU model ${gpuModel} at ${new Date(at).toISOString()}: publish a price list that names it or has a default rate`);
  }
}

/**
 * The rate in force for `gpuModel` at `at`: the latest version whose effectiveFrom ≤ at
 * (ties: the higher version number wins, so a republished list supersedes).
 */
export function rateAt(versions: readonly PriceListVersion[], gpuModel: string, at: number): Rate {
  let best: PriceListVersion | undefined;
  for (const v of versions) {
    if (v.effectiveFrom > at) continue;
    if (!best || v.effectiveFrom > best.effectiveFrom || (v.effectiveFrom === best.effectiveFrom && v.version > best.version)) best = v;
  }
  const rate = best?.ratesMicrosPerGpuHour[gpuModel] ?? best?.defaultRateMicrosPerGpuHour;
  if (!best || rate === undefined) throw new NoPriceError(gpuModel, at);
  const found: Rate = { priceListVersion: best.version, rateMicrosPerGpuHour: rate, currency: best.currency };
  if (best.minimumChargeMicros !== undefined) found.minimumChargeMicros = best.minimumChargeMicros;
  return found;
}

/**
 * The highest rate in force at `at` over every model the version names and its default: the
 * worst case of a job that may land on any model (budgets reserve it). NoPriceError when no
 * version covers the time or the version has no rate at all.
 */
export function highestRateAt(versions: readonly PriceListVersion[], at: number): Rate {
  let best: PriceListVersion | undefined;
  for (const v of versions) {
    if (v.effectiveFrom > at) continue;
    if (!best || v.effectiveFrom > best.effectiveFrom || (v.effectiveFrom === best.effectiveFrom && v.version > best.version)) best = v;
  }
  const rates = best ? [...Object.values(best.ratesMicrosPerGpuHour), ...(best.defaultRateMicrosPerGpuHour !== undefined ? [best.defaultRateMicrosPerGpuHour] : [])] : [];
  if (!best || rates.length === 0) throw new NoPriceError('(any model)', at);
  const found: Rate = { priceListVersion: best.version, rateMicrosPerGpuHour: Math.max(...rates), currency: best.currency };
  if (best.minimumChargeMicros !== undefined) found.minimumChargeMicros = best.minimumChargeMicros;
  return found;
}

/** Exact charge in micros for one attempt line, rounded half up. All inputs are non-negative integers. */
export function chargeMicros(gpus: number, billableMs: number, rateMicrosPerGpuHour: number): number {
  for (const [name, v] of [
    ['gpus', gpus],
    ['billableMs', billableMs],
    ['rateMicrosPerGpuHour', rateMicrosPerGpuHour],
  ] as const) {
    if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative safe integer, got ${v}`);
  }
  const numerator = BigInt(gpus) * BigInt(billableMs) * BigInt(rateMicrosPerGpuHour);
  const amount = (numerator * 2n + MS_PER_HOUR) / (MS_PER_HOUR * 2n);
  if (amount > BigInt(Number.MAX_SAFE_INTEGER)) throw new RangeError('charge exceeds the safe integer range of micro-units');
  return Number(amount);
}

/** The amount of one charged line and whether the minimum charge set it. */
export interface LineAmount {
  amountMicros: number;
  minimumApplied: boolean;
}

/**
 * The amount of one attempt line: the exact charge rounded once, half up (`chargeMicros`), then
 * raised to the minimum charge when the line is charged at all (billableMs > 0 and gpus > 0) and
 * rounds below it. A line of 0 ms costs 0 whatever the minimum: nothing was held.
 */
export function lineAmountMicros(gpus: number, billableMs: number, rateMicrosPerGpuHour: number, minimumChargeMicros?: number): LineAmount {
  const amount = chargeMicros(gpus, billableMs, rateMicrosPerGpuHour);
  if (minimumChargeMicros !== undefined && billableMs > 0 && gpus > 0 && amount < minimumChargeMicros) {
    return { amountMicros: minimumChargeMicros, minimumApplied: true };
  }
  return { amountMicros: amount, minimumApplied: false };
}

/** Billable time of one attempt: held → finished as stamped by the same agent; never negative. */
export function billableMs(heldAt: number, finishedAt: number): number {
  return Math.max(0, finishedAt - heldAt);
}
