/** Injection tokens every service module can use. */
export const SERVICE_CONFIG = Symbol('gpunet.SERVICE_CONFIG');
export const SERVICE_CONTEXT = Symbol('gpunet.SERVICE_CONTEXT');
export const LOGGER = Symbol('gpunet.LOGGER');
export const EVENT_STORE = Symbol('gpunet.EVENT_STORE');
export const EVENT_WRITER = Symbol('gpunet.EVENT_WRITER');
export const CLOCK = Symbol('gpunet.CLOCK');
export const NATS_CONNECTION = Symbol('gpunet.NATS_CONNECTION');
/** The process's Prometheus registry (`Metrics` of `#telemetry`): a service registers its own figures on it. */
export const METRICS = Symbol('gpunet.METRICS');
