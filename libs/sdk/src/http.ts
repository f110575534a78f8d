/**
 * The HTTP side of the client: bearer auth, JSON bodies, the one mapping of failures to errors
 * ({@link GpunetApiError}, {@link GpunetUnreachableError}, {@link GpunetProtocolError}), reply
 * validation against the contracts, and retries of requests that are safe to repeat.
 */
import { formatIssues, type FieldIssue } from '#contracts';
import { context, propagation } from '@opentelemetry/api';
import type { z } from 'zod';
import { GpunetApiError, GpunetProtocolError, GpunetUnreachableError } from './errors.js';

/** Options of {@link HttpTransport}. */
export interface HttpTransportOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:8080`; a path prefix is kept. */
  baseUrl: string;
  /** Team API key, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** A request without an answer for this long fails as unreachable. Default 30 000 ms. */
  timeoutMs?: number;
  /** Extra tries of a request that is safe to repeat, after a retryable failure. Default 2. */
  retries?: number;
  /** First delay between tries, doubled each time. Default 250 ms. */
  retryDelayMs?: number;
  /** The fetch to use (tests, proxies). Default the global `fetch`. */
  fetch?: typeof fetch;
  /** Sent as `User-Agent`. Default `gpunet-sdk`. */
  userAgent?: string;
}

/** One request. */
export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  /** Path under the base URL, e.g. `/v1/jobs/job_1`; segments already encoded. */
  path: string;
  query?: Record<string, string | readonly string[] | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Safe to send again after a failure (GETs, submits with an idempotency key, cancels). Default: GET only. */
  idempotent?: boolean;
  /** Overrides the transport's timeout; `0`: none (long-lived streams). */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const DEFAULTS = { timeoutMs: 30_000, retries: 2, retryDelayMs: 250, userAgent: 'gpunet-sdk' };

export class HttpTransport {
  private readonly base: URL;
  private readonly o: typeof DEFAULTS & { apiKey?: string; fetch: typeof fetch };

  constructor(options: HttpTransportOptions) {
    try {
      this.base = new URL(options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    } catch (err) {
      throw new GpunetUnreachableError(options.baseUrl, `not a URL: ${options.baseUrl} (write e.g. http://127.0.0.1:8080)`, { cause: err });
    }
    this.o = {
      timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
      retries: options.retries ?? DEFAULTS.retries,
      retryDelayMs: options.retryDelayMs ?? DEFAULTS.retryDelayMs,
      userAgent: options.userAgent ?? DEFAULTS.userAgent,
      fetch: options.fetch ?? globalThis.fetch,
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    };
  }

  /** The base URL, with a trailing `/`. */
  get baseUrl(): string {
    return this.base.href;
  }

  /** Sends a request and returns its JSON body, checked against `schema` when given. */
  async json<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<z.output<S>>;
  async json(spec: RequestSpec): Promise<unknown>;
  async json(spec: RequestSpec, schema?: z.ZodType): Promise<unknown> {
    const response = await this.send(spec);
    const text = await response.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch (err) {
      throw new GpunetProtocolError(`${spec.method} ${spec.path}: the answer is not JSON: ${snippet(text)}`, [], { cause: err });
    }
    if (!schema) return body;
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issues = formatIssues(parsed.error);
      throw new GpunetProtocolError(
        `${spec.method} ${spec.path}: the answer does not match the contract (client and server versions differ?): ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
        issues,
      );
    }
    return parsed.data;
  }

  /** Sends a request and returns the successful response unread (downloads, NDJSON streams). */
  async send(spec: RequestSpec): Promise<Response> {
    const idempotent = spec.idempotent ?? spec.method === 'GET';
    const tries = 1 + (idempotent ? this.o.retries : 0);
    let delay = this.o.retryDelayMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(spec);
      } catch (err) {
        const retryable = err instanceof GpunetUnreachableError || (err instanceof GpunetApiError && err.retryable);
        if (!retryable || attempt >= tries || spec.signal?.aborted) throw err;
        await sleep(delay);
        delay *= 2;
      }
    }
  }

  private url(spec: RequestSpec): URL {
    const url = new URL(spec.path.replace(/^\/+/, ''), this.base);
    for (const [key, value] of Object.entries(spec.query ?? {})) {
      if (value === undefined) continue;
      for (const v of typeof value === 'string' ? [value] : value) url.searchParams.append(key, v);
    }
    return url;
  }

  private async once(spec: RequestSpec): Promise<Response> {
    const url = this.url(spec);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.o.userAgent, ...spec.headers };
    if (this.o.apiKey) headers.authorization = `Bearer ${this.o.apiKey}`;
    if (spec.body !== undefined) headers['content-type'] = 'application/json';
    // A caller that traces with OpenTelemetry gets intake's spans in its own trace (`traceparent`);
    // without a registered propagator this adds nothing.
    propagation.inject(context.active(), headers);
    const timeoutMs = spec.timeoutMs ?? this.o.timeoutMs;
    const signals = [spec.signal, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined);
    let response: Response;
    try {
      response = await this.o.fetch(url, {
        method: spec.method,
        headers,
        ...(spec.body !== undefined ? { body: JSON.stringify(spec.body) } : {}),
        ...(signals.length > 0 ? { signal: AbortSignal.any(signals) } : {}),
      });
    } catch (err) {
      if (spec.signal?.aborted) throw err;
      throw unreachable(url, timeoutMs, err);
    }
    if (response.ok) return response;
    throw await apiError(spec, response);
  }
}

/** The error a non-2xx response stands for: the server's `{ error }` body when it has one. */
async function apiError(spec: RequestSpec, response: Response): Promise<GpunetApiError> {
  const text = await response.text().catch(() => '');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = (body as { error?: unknown } | undefined)?.error;
  if (error && typeof error === 'object') {
    const e = error as { code?: unknown; message?: unknown; issues?: unknown; retryable?: unknown };
    const issues: FieldIssue[] = Array.isArray(e.issues)
      ? e.issues.filter((i): i is FieldIssue => !!i && typeof i === 'object' && typeof (i as FieldIssue).message === 'string').map((i) => ({
          path: typeof i.path === 'string' ? i.path : '',
          message: i.message,
          ...(typeof i.fix === 'string' ? { fix: i.fix } : {}),
        }))
      : [];
    return new GpunetApiError(
      response.status,
      typeof e.code === 'string' ? e.code : `http_${response.status}`,
      typeof e.message === 'string' ? e.message : `${spec.method} ${spec.path} answered ${response.status}`,
      issues,
      typeof e.retryable === 'boolean' ? { retryable: e.retryable } : undefined,
    );
  }
  return new GpunetApiError(response.status, `http_${response.status}`, `${spec.method} ${spec.path} answered ${response.status} ${response.statusText}${text ? `: ${snippet(text)}` : ''}`);
}

function unreachable(url: URL, timeoutMs: number, err: unknown): GpunetUnreachableError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const base = `${url.protocol}//${url.host}`;
  if (e?.name === 'TimeoutError') return new GpunetUnreachableError(base, `no answer from ${base} within ${timeoutMs} ms`, { cause: err });
  const why = e?.cause?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  return new GpunetUnreachableError(base, `cannot reach the gpunet API at ${base} (${why}); is the network up? Start a local one with \`gpunet up\``, { cause: err });
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
