import type { BaseConfig } from '#service-kit';
import { z } from 'zod';

/** The recorder's own environment variables (merged with the kit's); see services/execution/README.md. */
export const RecorderConfig = z.object({
  GPUNET_ENROLL_NODES: z
    .string()
    .optional()
    .describe('nodes to enroll at start, `<nodeId>=<public key>` comma-separated (what `gpunet up` passes for its agents); an enrollment already recorded is not repeated'),
  GPUNET_STORE_OUTPUTS_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000).describe('milliseconds to wait for storage to answer one StoreOutputs'),
});

export type RecorderConfig = BaseConfig & z.output<typeof RecorderConfig>;
