import { Currency, GpuModel, Micros, parseDuration } from '#contracts';
import type { BaseConfig } from '#service-kit';
import { z } from 'zod';
import { DEFAULT_CURRENCY, DEFAULT_PRICES } from './domain/index.js';

const pricesHelp = 'JSON of micro-units per GPU-hour by GPU model, `default` for unnamed models, e.g. {"default": 2000000, "A100": 3500000}';

/** `GPUNET_PRICES`: JSON text → a non-empty map of GPU model → micros per GPU-hour. */
const Prices = z
  .string()
  .default(JSON.stringify(DEFAULT_PRICES))
  .transform((text, ctx) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: `is not JSON: ${pricesHelp}` });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .record(GpuModel, Micros)
      .refine((prices) => Object.keys(prices).length > 0, `names no price: ${pricesHelp}`),
  )
  .describe(pricesHelp);

/** A duration as text (`72h`, `30s`, `1d12h`) → ms. */
function duration(fallback: string, help: string) {
  return z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text.trim());
      if (ms === undefined) {
        ctx.addIssue({ code: 'custom', message: `is not a duration: write e.g. \`${fallback}\` (units ms, s, m, h, d)` });
        return z.NEVER;
      }
      return ms;
    })
    .describe(help);
}

/** The ledger's own environment variables (merged with the kit's base ones). */
export const LedgerConfig = z.object({
  /** Prices of the first price list, published once when `ledger-pricelist` is empty. */
  GPUNET_PRICES: Prices,
  /** Currency of the first price list. */
  GPUNET_CURRENCY: Currency.default(DEFAULT_CURRENCY).describe('ISO 4217 code of the first price list, e.g. EUR'),
  /** How long after a month ends its invoices stay drafts, taking late events; then they are finalized. */
  GPUNET_INVOICE_CUTOFF: duration('72h', 'late-event cutoff: invoices of a month are finalized this long after the month ends (UTC)'),
  /** How often the ledger looks for invoices to finalize and corrections to issue. */
  GPUNET_INVOICE_CHECK_INTERVAL: duration('30s', 'how often invoices past their cutoff are finalized and credit notes issued'),
  /**
   * The network signing key (an NKey seed file, 0600): with it this ledger is the notary that signs
   * the chain heads. Give it to one central ledger only, never to another service or a node.
   */
  GPUNET_SIGNING_KEY_FILE: z.string().min(1).optional().describe('path of the network signing key (NKey seed file, mode 0600); without it no chain heads are signed'),
  /**
   * How long a start may fold the audit table up to the store's head before the ledger gives up
   * (its progress is kept: the next start goes on from there). The first start on a large store
   * folds all of it: about 15,000 events/s on a busy 2-core machine (decision 0034).
   */
  GPUNET_AUDIT_CATCH_UP: duration('10m', 'how long a start may fold the audit table up to the store head before the ledger gives up (what it folded is kept)'),
  /** How often the notary signs the chain heads, when the store moved since the last digest. */
  GPUNET_DIGEST_INTERVAL: duration('5m', 'how often the chain heads are signed (only when the store moved since the last digest)'),
});

/** The whole typed configuration a ledger process reads once at start. */
export type LedgerConfig = BaseConfig & z.output<typeof LedgerConfig>;
