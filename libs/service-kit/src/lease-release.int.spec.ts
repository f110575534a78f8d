/**
 * `LeaderLease.release` against a real nats-server: the key goes at once even when a renewal is
 * on its way at that moment, so a standby takes over without waiting out the lease.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { LeaderLease } from './leadership.js';

describe('releasing a lease', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  }, 60_000);
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it('lets a standby take over at once, even when a renewal is in flight when it is released', async () => {
    const logger = pino({ level: 'silent' });
    // A lease far longer than the test: a key left behind would hold the standby for a minute.
    const timing = () => ({ leaseMs: 60_000, renewMs: 1 });
    for (let round = 0; round < 30; round++) {
      const leader = new LeaderLease(nc, 'release-test', 'a', timing(), logger);
      await leader.acquire();
      // Renewals every millisecond: one is on its way at almost any moment.
      await new Promise((r) => setTimeout(r, 5 + (round % 7)));
      await leader.release();
      const standby = new LeaderLease(nc, 'release-test', 'b', { leaseMs: 60_000, renewMs: 50 }, logger);
      const waited = AbortSignal.timeout(10_000);
      await expect(standby.acquire(waited)).resolves.toBeUndefined();
      await standby.release();
    }
  }, 120_000);
});

describe('a renewal the bus never answers', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  }, 60_000);
  afterAll(async () => {
    process.kill(nats.pid, 'SIGCONT');
    await nc?.close();
    await nats?.stop();
  });

  it('ends the lease when it runs out, not when the request gives up', async () => {
    const leader = new LeaderLease(nc, 'paused-bus', 'a', { leaseMs: 1_500, renewMs: 300 }, pino({ level: 'silent' }));
    await leader.acquire();
    // The server stops answering; the client's requests wait for their own timeout (5 s), longer than the lease.
    process.kill(nats.pid, 'SIGSTOP');
    await expect(leader.lost).resolves.toMatch(/the lease ended while its renewal was on its way/);
    expect(leader.held).toBe(false);
    process.kill(nats.pid, 'SIGCONT');
    await leader.release();
  }, 60_000);
});
