/**
 * gpunet telemetry: one Prometheus registry per process served on `/metrics` (prom-client), and
 * OpenTelemetry tracing exported by OTLP/HTTP when configured, with W3C trace context carried in
 * NATS and HTTP headers and in event metadata. See docs/observability.md.
 */
export * from './metrics.js';
export * from './tracing.js';
