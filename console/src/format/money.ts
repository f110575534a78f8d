/**
 * Money is integer micro-units (1 unit = 1,000,000 µ). Shown in the currency's own decimals
 * (ISO 4217 minor units), split and rounded with integer arithmetic only (BigInt): never a float.
 */

/** Minor-unit digits of the currencies that do not have two. */
const MINOR_DIGITS: Record<string, number> = { JPY: 0, KRW: 0, CLP: 0, ISK: 0, VND: 0, BHD: 3, KWD: 3, OMR: 3, TND: 3, JOD: 3 };

/** Digits after the point for a currency: 2 unless ISO 4217 says otherwise. */
export function currencyDigits(currency: string): number {
  return MINOR_DIGITS[currency] ?? 2;
}

/**
 * `1234567890, 'EUR'` → `EUR 1,234.57`: rounded half away from zero to the currency's digits,
 * thousands grouped. `precise` keeps all six micro digits (for rates and replays).
 */
export function formatMoney(amountMicros: number | bigint | string, currency: string, options: { precise?: boolean } = {}): string {
  const micros = BigInt(amountMicros);
  const digits = options.precise ? 6 : currencyDigits(currency);
  const negative = micros < 0n;
  const abs = negative ? -micros : micros;
  const step = 10n ** BigInt(6 - digits);
  const rounded = (abs + step / 2n) / step; // half away from zero, in units of 10^-digits
  const scale = 10n ** BigInt(digits);
  const whole = (rounded / scale).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = digits > 0 ? `.${(rounded % scale).toString().padStart(digits, '0')}` : '';
  return `${negative && rounded !== 0n ? '−' : ''}${currency} ${whole}${frac}`;
}

/** Integer bytes as `1.5 MB`-style text (display only: sizes are not money). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[i]}`;
}

/** A duration in ms as `1 h 02 min`, `3 min 05 s`, `4.2 s`, `850 ms`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}
