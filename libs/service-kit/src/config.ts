import { ValidationError, type FieldIssue } from '#errors';
import { z } from 'zod';

/**
 * Environment every service reads. Keys are the variable names, so an error names exactly what
 * to set. Defaults suit a local network started by `gpunet up`.
 */
export const baseConfig = z.object({
  /** NATS server(s), comma-separated. */
  GPUNET_NATS_URL: z.string().min(1).default('nats://127.0.0.1:4222'),
  /** `sqlite:<path>` (embedded default) or `postgres://…`. */
  GPUNET_STORE_URL: z.string().min(1).default('sqlite:.gpunet/events.db'),
  /** pino level. */
  GPUNET_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Instance id: names this process in logs, metrics and its NATS connection (an execution node's: its consumer and streams). Default: the service name (`<service>-p<i>` for a partition). */
  GPUNET_INSTANCE: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, 'letters, digits, _ and - (at most 64), starting with a letter or digit')
    .optional(),
  /**
   * This process's event partition, `i/N` (decision 0030), for a partitioned service (the ledger):
   * it consumes partition i of N on its own durable (`ledger-p<i>`). N must be the topology's
   * `eventPartitions`. Unset: the service's one unpartitioned consumer (N must be 1).
   */
  GPUNET_PARTITION: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,3})\/[1-9][0-9]{0,3}$/, 'i/N, e.g. 0/2 (partition i of N, counted from 0)')
    .transform((text) => {
      const [index, count] = text.split('/').map(Number) as [number, number];
      return { index, count };
    })
    .refine((p) => p.index < p.count, 'i must be below N: the partitions of N are 0 … N-1')
    .optional(),
  /** Topology file to provision; default `deploy/topology.yaml` of this checkout. */
  GPUNET_TOPOLOGY_FILE: z.string().optional(),
  /** Seed file (`<identity>.nk`, mode 0600) this process authenticates to NATS with; unset: no credentials. */
  GPUNET_NATS_NKEY_FILE: z.string().min(1).optional(),
  /** Optional HMAC key for the event store's hash chain. */
  GPUNET_CHAIN_KEY: z.string().min(16).optional(),
  /** Port of this process's Prometheus `/metrics` (0: any free port, logged); unset: not served. */
  GPUNET_METRICS_PORT: z.coerce.number().int().min(0).max(65_535).optional(),
  /** Address `/metrics` listens on. */
  GPUNET_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /** OTLP/HTTP endpoint traces are exported to (e.g. `http://127.0.0.1:4318`); unset: tracing off. */
  GPUNET_OTLP_ENDPOINT: z.url().optional(),
  /** A single-writer part's lease (decision 0029): how long it lasts unrenewed. A standby takes over within about this plus GPUNET_LEASE_RENEW_MS. */
  GPUNET_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(6_000),
  /** How often the leader renews its lease and a standby tries to take it. Below GPUNET_LEASE_MS. */
  GPUNET_LEASE_RENEW_MS: z.coerce.number().int().min(100).max(300_000).default(2_000),
});
export type BaseConfig = z.output<typeof baseConfig>;

/**
 * Reads and validates the environment once at start. Each bad variable becomes one issue that
 * names it and says what to set; nothing starts with a half-valid config.
 */
export function loadConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): BaseConfig & z.output<S> {
  const merged = baseConfig.extend(schema.shape);
  const result = merged.safeParse(env);
  if (result.success) return result.data as BaseConfig & z.output<S>;
  const issues: FieldIssue[] = result.error.issues.map((i) => {
    const name = String(i.path[0] ?? '(environment)');
    const value = env[name];
    return {
      path: name,
      message: `${i.message}${value === undefined ? ' (not set)' : ` (got ${JSON.stringify(value)})`}`,
      fix: `set ${name} in the environment${describeOf(schema, name)}`,
    };
  });
  throw new ValidationError(`invalid configuration: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
}

function describeOf(schema: z.ZodObject, name: string): string {
  const field = (schema.shape as Record<string, z.ZodType | undefined>)[name] ?? (baseConfig.shape as Record<string, z.ZodType | undefined>)[name];
  const text = field?.description;
  return text ? ` (${text})` : '';
}
