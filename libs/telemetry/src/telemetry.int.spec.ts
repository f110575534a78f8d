import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { contextFromFields, extractHeaders, inSpan, injectHeaders, Metrics, serveMetrics, startTracing, trace, traceFields, tracingEnabled, type Tracing } from './index.js';

describe('metrics', () => {
  it('serves one registry on /metrics, on loopback, with the process labels on every series', async () => {
    const metrics = new Metrics({ service: 'placement', instance: 'placement-2' });
    metrics.counter({ name: 'gpunet_test_things_total', help: 'things', labelNames: ['kind'] }).inc({ kind: 'a' }, 3);
    const server = await serveMetrics(metrics, { port: 0 });
    try {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${server.url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/plain');
      const text = await res.text();
      expect(text).toContain('gpunet_test_things_total{kind="a",service="placement",instance="placement-2"} 3');
      expect(text).toMatch(/^gpunet_process_cpu_user_seconds_total\{service="placement",instance="placement-2"\} /m);
      expect((await fetch(`${server.url}/other`)).status).toBe(404);
      expect((await fetch(`${server.url}/metrics`, { method: 'POST' })).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('keeps two processes\' registries apart (two services in one test process)', async () => {
    const a = new Metrics({ service: 'a', instance: 'a' }, { processMetrics: false });
    const b = new Metrics({ service: 'b', instance: 'b' }, { processMetrics: false });
    a.gauge({ name: 'gpunet_same_name', help: 'x' }).set(1);
    b.gauge({ name: 'gpunet_same_name', help: 'x' }).set(2);
    expect(await a.text()).toContain('gpunet_same_name{service="a",instance="a"} 1');
    expect(await b.text()).toContain('gpunet_same_name{service="b",instance="b"} 2');
  });
});

describe('tracing', () => {
  let receiver: Server;
  let tracing: Tracing | undefined;
  const received: { name: string; traceId: string; parentSpanId?: string; spanId: string }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans: { scopeSpans: { spans: { name: string; traceId: string; spanId: string; parentSpanId?: string }[] }[] }[] };
        for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) received.push(...ss.spans);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  });

  afterAll(async () => {
    await tracing?.shutdown();
    await new Promise((r) => receiver.close(r));
  });

  it('is off until started: spans record nothing and no context is written', async () => {
    expect(tracingEnabled()).toBe(false);
    const fields = await inSpan('off', {}, () => traceFields());
    expect(fields).toEqual({});
  });

  it('carries one trace through event metadata and NATS headers, and exports it by OTLP/HTTP', async () => {
    tracing = startTracing({ service: 'test', instance: 't', endpoint: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`, scheduledDelayMs: 50 });
    expect(tracingEnabled()).toBe(true);
    const metadata = await inSpan('submit', {}, () => traceFields());
    expect(metadata.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    // The relay hop: from stored metadata into message headers; the consumer continues from them.
    const h = natsHeaders();
    await inSpan('publish', { parent: contextFromFields(metadata) }, () => injectHeaders(h));
    const consumed = await inSpan('process', { parent: extractHeaders(h) }, () => trace.getActiveSpan()!.spanContext());
    expect(consumed.traceId).toBe(metadata.traceparent!.split('-')[1]);
    await tracing.shutdown();
    tracing = undefined;
    expect(tracingEnabled()).toBe(false);
    const byName = new Map(received.map((s) => [s.name, s]));
    expect([...byName.keys()].sort()).toEqual(['process', 'publish', 'submit']);
    expect(new Set(received.map((s) => s.traceId))).toEqual(new Set([consumed.traceId]));
    expect(byName.get('process')!.parentSpanId).toBe(byName.get('publish')!.spanId);
    expect(byName.get('publish')!.parentSpanId).toBe(byName.get('submit')!.spanId);
  });
});
