import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/** The console's build output (`npm run build:console` writes it), found from this file in src/ or in dist/. */
const consoleDir = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../console' : '../../../dist/console', import.meta.url));

/** Intake's own environment variables (merged with the kit's base config). Defaults in README.md. */
export const IntakeConfig = z.object({
  GPUNET_HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(8080).describe('HTTP port; 0 picks a free one'),
  GPUNET_HTTP_HOST: z.string().min(1).default('127.0.0.1').describe('address to listen on; 0.0.0.0 for every interface'),
  GPUNET_API_KEYS_FILE: z.string().min(1).default('.gpunet/api-keys.yaml').describe('YAML or JSON list of team API keys'),
  GPUNET_CONSOLE_DIR: z.string().min(1).default(consoleDir).describe('directory of the built web console served at /console (default dist/console of the checkout)'),
  GPUNET_UPLOAD_MAX_BYTES: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER).default(64 * 1024 ** 3).describe('largest blob one HTTP upload may create, bytes'),
});
export type IntakeConfig = z.output<typeof IntakeConfig>;
