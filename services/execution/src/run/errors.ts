import { GpunetError } from '#errors';

/**
 * The agent was asked to apply resource limits it cannot apply on this machine (no `prlimit`).
 * Terminal: the node should not offer limits it cannot enforce, so this is raised before any
 * process starts rather than silently running the job without them.
 */
export class ResourceLimitsUnavailableError extends GpunetError {
  readonly code = 'resource_limits_unavailable';
  readonly retryable = false;
}

/**
 * `nvidia-smi` exists but did not answer usefully (driver not loaded, timeout, unreadable output).
 * Retryable: drivers come up late after boot; the agent decides whether to fall back to declared slots.
 */
export class GpuDetectionError extends GpunetError {
  readonly code = 'gpu_detection_failed';
  readonly retryable = true;
}
