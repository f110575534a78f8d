import { parseDuration } from '#contracts';
import { BLOB_BUCKET } from '#blobs';
import type { BaseConfig } from '#service-kit';
import { z } from 'zod';

const duration = (fallback: string, help: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const ms = parseDuration(text);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: 'custom', message: `is not a duration above 0 (${help})` });
        return z.NEVER;
      }
      return ms;
    })
    .describe(help);

/** Storage's own environment variables (merged with the kit's base ones). */
export const StorageConfig = z.object({
  /** Object Store bucket of the blobs; created at start when missing. */
  GPUNET_BLOB_BUCKET: z
    .string()
    .regex(/^[-\w]+$/, 'letters, digits, _ and -')
    .default(BLOB_BUCKET)
    .describe(`Prefix of the Object Store buckets (team T's blobs are in <prefix>-T), e.g. ${BLOB_BUCKET}`),
  /** How often inputs whose keep has passed are looked for and removed. */
  GPUNET_STORAGE_SWEEP_INTERVAL: duration('1m', 'how often to remove inputs whose keep has passed, e.g. 1m'),
  /**
   * Deliveries of one event before a retryable failure gives up; on the last one, an object store
   * that still does not answer fails the job's staging (`storage_error`) instead of retrying.
   */
  GPUNET_STORAGE_MAX_DELIVERIES: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(5)
    .describe('deliveries of an event before giving up, 1–100, e.g. 5'),
});

/** The whole typed configuration a storage process reads once at start. */
export type StorageConfig = BaseConfig & z.output<typeof StorageConfig>;
