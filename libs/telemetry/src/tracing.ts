import { context, propagation, trace, SpanKind, SpanStatusCode, type Context, type Span, type TextMapGetter, type TextMapSetter, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** The tracer every gpunet span comes from. A no-op until `startTracing` registers a provider. */
export function tracer(): Tracer {
  return trace.getTracer('gpunet');
}

let enabled = false;

export interface Tracing {
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Turns tracing on for this process: spans go by OTLP/HTTP (JSON) to `endpoint`
 * (`http://collector:4318`, `/v1/traces` appended unless the URL has a path), batched; W3C trace
 * context (`traceparent`, `tracestate`) is what crosses process boundaries. Off by default: without
 * this call every span is a no-op of the OpenTelemetry API and costs next to nothing.
 */
export function startTracing(options: { service: string; instance: string; endpoint: string; scheduledDelayMs?: number }): Tracing {
  const url = new URL(options.endpoint);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/v1/traces';
  const exporter = new OTLPTraceExporter({ url: url.toString() });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': options.service, 'service.instance.id': options.instance }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: options.scheduledDelayMs ?? 1_000 })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  return {
    shutdown: async () => {
      await provider.forceFlush().catch(() => undefined);
      await provider.shutdown().catch(() => undefined);
      enabled = false;
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/** Anything with `get(name)` / `set(name, value)`: NATS message headers, `Headers`. */
interface HeaderLike {
  get(name: string): string | null | undefined;
  set(name: string, value: string): void;
}

const headerGetter: TextMapGetter<HeaderLike | undefined> = {
  get: (carrier, key) => carrier?.get(key) || undefined,
  keys: () => ['traceparent', 'tracestate'],
};
const headerSetter: TextMapSetter<HeaderLike> = { set: (carrier, key, value) => carrier.set(key, value) };
const recordGetter: TextMapGetter<Readonly<Record<string, unknown>> | undefined> = {
  get: (carrier, key) => {
    const v = carrier?.[key];
    return typeof v === 'string' ? v : Array.isArray(v) && typeof v[0] === 'string' ? v[0] : undefined;
  },
  keys: (carrier) => Object.keys(carrier ?? {}),
};
const recordSetter: TextMapSetter<Record<string, unknown>> = { set: (carrier, key, value) => (carrier[key] = value) };

/** Writes the trace context of `ctx` (default: the active one) into headers; nothing when no span is recording. */
export function injectHeaders(headers: HeaderLike, ctx: Context = context.active()): void {
  propagation.inject(ctx, headers, headerSetter);
}

/** The context carried by headers (`traceparent`, `tracestate`), on top of the active one. */
export function extractHeaders(headers: HeaderLike | undefined): Context {
  return propagation.extract(context.active(), headers, headerGetter);
}

/** The trace context as plain fields (`{ traceparent, tracestate? }`), e.g. for event metadata; `{}` when none. */
export function traceFields(ctx: Context = context.active()): { traceparent?: string; tracestate?: string } {
  const out: Record<string, unknown> = {};
  propagation.inject(ctx, out, recordSetter);
  return out as { traceparent?: string; tracestate?: string };
}

/** The context carried by plain fields (event metadata, HTTP request headers). */
export function contextFromFields(fields: Readonly<Record<string, unknown>> | undefined): Context {
  return propagation.extract(context.active(), fields, recordGetter);
}

/** Whether a provider is registered (tracing on). Lets hot paths skip building span names. */
export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Runs `fn` inside a span named `name`, child of `parent` (default: the active context); the span
 * ends when `fn` settles, with an error status if it threw.
 */
export async function inSpan<T>(name: string, options: { parent?: Context; kind?: SpanKind; attributes?: Record<string, string | number | boolean | undefined> }, fn: (span: Span) => Promise<T> | T): Promise<T> {
  const attributes = Object.fromEntries(Object.entries(options.attributes ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string | number | boolean>;
  const span = tracer().startSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes }, options.parent ?? context.active());
  try {
    return await context.with(trace.setSpan(options.parent ?? context.active(), span), () => fn(span));
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}

export { SpanKind, context, trace, type Context, type Span };
