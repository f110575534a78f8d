import type { BaseConfig } from '#service-kit';
import { z } from 'zod';

/** Placement's own environment variables (merged with the kit's); see services/placement/README.md. */
export const PlacementConfig = z.object({
  GPUNET_NODE_LEASE_MS: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe('ms a node may stay silent before it is lost; default 3 × its heartbeat interval, at least 5000'),
  GPUNET_NODE_CHECK_MS: z.coerce.number().int().min(10).default(1_000).describe('ms between checks for silent nodes'),
});
export type PlacementConfig = z.output<typeof PlacementConfig> & BaseConfig;
