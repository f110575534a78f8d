import { querySubject, type ServiceName } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
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
});
