import { GpunetError, IssuesError, isRetryable, type FieldIssue } from '#errors';

/** How failures of one consumer are retried. */
export interface RetryPolicy {
  /** Deliveries (the first one included) before a retryable failure is dead-lettered. Default 5. */
  maxDeliveries: number;
  /** Redelivery delay after the first failure; doubles with each delivery. Default 1000 ms. */
  backoffBaseMs: number;
  /** Upper bound of the redelivery delay. Default 30000 ms (kept below the consumer's ack wait). */
  backoffMaxMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxDeliveries: 5, backoffBaseMs: 1000, backoffMaxMs: 30_000 };

/** Why a message went to the dead-letter stream. */
export interface DeadLetterReason {
  /** Error code: `validation_failed`, `malformed_message`, a GpunetError code, or `error` for anything else. */
  code: string;
  /** Error class name, e.g. `ValidationError`. */
  name?: string;
  message: string;
  issues?: readonly FieldIssue[];
  /** True when the message was retried `maxDeliveries` times; false when the failure was terminal at once. */
  exhausted: boolean;
  deliveryCount: number;
}

/** What happens to a message once its handler has run (or could not run). */
export type Outcome =
  | { kind: 'ack'; reason: 'handled' | 'duplicate' | 'unhandled_type' }
  | { kind: 'retry'; delayMs: number; code: string; message: string }
  | { kind: 'dead_letter'; reason: DeadLetterReason };

/** Redelivery delay after `deliveryCount` deliveries: base · 2^(n-1), at most max. Integer ms. */
export function backoffDelayMs(deliveryCount: number, policy: RetryPolicy): number {
  const exponent = Math.max(0, Math.min(deliveryCount - 1, 30));
  // Never 0: a nak without delay is mishandled by nats-server 2.9 (see HAND_BACK_DELAY_MS).
  return Math.max(1, Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** exponent));
}

/**
 * THE mapping from a failure to its fate on the bus (one place, per STYLE.md): terminal errors,
 * malformed bodies and schema failures are dead-lettered at once; retryable ones are redelivered
 * with exponential backoff until `maxDeliveries`, then dead-lettered. Unknown errors count as
 * retryable (see `isRetryable`), bounded by `maxDeliveries`.
 */
export function failureOutcome(err: unknown, deliveryCount: number, policy: RetryPolicy): Outcome {
  const code = err instanceof GpunetError ? err.code : 'error';
  const message = err instanceof Error ? err.message : String(err);
  const issues = err instanceof IssuesError ? err.issues : undefined;
  const name = err instanceof Error ? { name: err.name } : {};
  if (!isRetryable(err)) {
    return { kind: 'dead_letter', reason: { code, ...name, message, ...(issues ? { issues } : {}), exhausted: false, deliveryCount } };
  }
  if (deliveryCount >= policy.maxDeliveries) {
    return { kind: 'dead_letter', reason: { code, ...name, message, exhausted: true, deliveryCount } };
  }
  return { kind: 'retry', delayMs: backoffDelayMs(deliveryCount, policy), code, message };
}
