import { querySubject, type ServiceName } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createConnection, createServer, type Socket } from 'node:net';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { HealthTimeoutError, waitHealthy } from './health.js';

let server: TestNatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

/** Answers `service`'s health query as healthy once `from()` says so; until then, nothing answers. */
function answer(service: ServiceName, from: () => boolean): () => void {
  const sub = nc.subscribe(querySubject(service, 'Health'), {
    callback: (_err, msg) => {
      if (!from()) return;
      const at = new Date().toISOString();
      msg.respond(JSON.stringify({ ok: true, data: { service, status: 'ok', startedAt: at, uptimeMs: 0, checks: [], checkedAt: at } }));
    },
  });
  return () => sub.unsubscribe();
}

describe('waitHealthy', () => {
  it('goes on waiting while processes keep becoming healthy, past the timeout counted from the start', async () => {
    const timeoutMs = 5_000;
    const started = Date.now();
    const elapsed = () => Date.now() - started;
    // storage answers at once, ledger from 3 s on, placement from 6 s on: more than the timeout
    // after the start, never more than it after the last one became healthy.
    const stops = [answer('storage', () => true), answer('ledger', () => elapsed() >= 3_000), answer('placement', () => elapsed() >= 6_000)];
    try {
      const rounds: string[][] = [];
      await waitHealthy(server.url, { services: ['storage', 'ledger', 'placement'], agents: [] }, { timeoutMs, onRound: (missing) => rounds.push(missing) });
      expect(elapsed()).toBeGreaterThanOrEqual(6_000);
      expect(rounds.at(-1)).toEqual([]);
      expect(rounds.some((missing) => missing.length === 1 && missing[0] === 'placement')).toBe(true);
    } finally {
      for (const stop of stops) stop();
    }
  }, 30_000);

  it('gives up once none has become healthy for the timeout, naming the ones missing', async () => {
    const stop = answer('intake', () => true);
    try {
      const started = Date.now();
      const err = await waitHealthy(server.url, { services: ['intake', 'ledger'], agents: [] }, { timeoutMs: 1_500 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(HealthTimeoutError);
      expect((err as HealthTimeoutError).missing).toEqual(['ledger']);
      expect((err as Error).message).toBe('none became healthy for 1500 ms: ledger');
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    } finally {
      stop();
    }
  }, 30_000);

  it('opens its connection again when a handshake stalls, instead of waiting out the whole timeout on it', async () => {
    // A listener in front of the server that holds its first connection silent (a server too
    // busy to answer one handshake) and passes every later one through.
    const port = Number(new URL(server.url.replace('nats://', 'http://')).port);
    const held: Socket[] = [];
    const piped: Socket[] = [];
    const proxy = createServer((client) => {
      if (held.length === 0) {
        held.push(client);
        return;
      }
      const upstream = createConnection({ host: '127.0.0.1', port });
      piped.push(client, upstream);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const address = proxy.address();
    if (address === null || typeof address === 'string') throw new Error('no proxy port');
    const stop = answer('storage', () => true);
    try {
      const started = Date.now();
      await waitHealthy(`nats://127.0.0.1:${address.port}`, { services: ['storage'], agents: [] }, { timeoutMs: 20_000, connectAttemptMs: 1_000 });
      expect(held).toHaveLength(1);
      // Well inside the timeout: the stalled attempt was given up after its own second.
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      stop();
      for (const s of [...held, ...piped]) s.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  }, 60_000);
});
