import { createServer, type Server } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type CounterConfiguration, type GaugeConfiguration, type HistogramConfiguration } from 'prom-client';

/** Interval of the event-loop lag samples (`gpunet_nodejs_eventloop_lag_*`), ms. */
export const EVENT_LOOP_SAMPLE_MS = 100;

/**
 * One process's Prometheus registry. Every metric of a gpunet process is registered here (never
 * on prom-client's global registry), so two services started in one test process keep theirs
 * apart. Names follow Prometheus conventions: `gpunet_` prefix, base units in the name
 * (`_seconds`, `_bytes`, `_milliseconds` where the domain keeps integer milliseconds), `_total`
 * on counters; label values come from small fixed sets (service, consumer, reason, team, model,
 * node), never from job or attempt ids.
 */
export class Metrics {
  readonly registry: Registry;

  constructor(labels: { service: string; instance: string }, options: { processMetrics?: boolean } = {}) {
    this.registry = new Registry();
    this.registry.setDefaultLabels({ service: labels.service, instance: labels.instance });
    // The event-loop lag histogram samples with a timer of its own: prom-client's default of 10 ms
    // woke every process 100 times a second with nothing to do (about 5 CPU-ms per second each, most
    // of what an idle process used). At 100 ms a stall of 100 ms or more is always seen, shorter
    // ones in proportion to their length.
    if (options.processMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: 'gpunet_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
  }

  counter<L extends string>(config: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return new Counter({ ...config, registers: [this.registry] });
  }

  gauge<L extends string>(config: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return new Gauge({ ...config, registers: [this.registry] });
  }

  histogram<L extends string>(config: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return new Histogram({ ...config, registers: [this.registry] });
  }

  /** The exposition text (what `/metrics` answers). */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/** Buckets for in-process latencies: 0.5 ms … 10 s. */
export const LATENCY_BUCKETS_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A running `/metrics` endpoint. */
export interface MetricsServer {
  /** `http://host:port` */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `GET /metrics` (and `GET /` as the same) from `registry` on `host:port`; port 0 picks a
 * free one. Bound to loopback unless told otherwise: the figures name teams and nodes, which is
 * the operator's business, so exposing them is a deliberate choice.
 */
export async function serveMetrics(metrics: Metrics, options: { port: number; host?: string }): Promise<MetricsServer> {
  const host = options.host ?? '127.0.0.1';
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || (path !== '/metrics' && path !== '/')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    metrics.text().then(
      (body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`cannot collect metrics: ${(err as Error).message}\n`),
    );
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type { Counter, Gauge, Histogram, Registry } from 'prom-client';
