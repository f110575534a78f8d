/**
 * `LeaderLease.release` against a real nats-server: the key goes at once even when a renewal is
 * on its way at that moment, so a standby takes over without waiting out the lease.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { LeaderLease } from './leadership.js';

/** A nats-server of the describe's own (a test may pause it) and a connection to it. */
function ownServer(): { nats: TestNatsServer; nc: NatsConnection } {
  const own = {} as { nats: TestNatsServer; nc: NatsConnection };
  beforeAll(async () => {
    own.nats = await startNatsServer();
    own.nc = await connect({ servers: own.nats.url });
  }, 60_000);
  afterAll(async () => {
    await own.nc?.close();
    await own.nats?.stop();
  });
  return own;
}

describe('releasing a lease', () => {
  const own = ownServer();

  it('lets a standby take over at once, even when a renewal is in flight when it is released', async () => {
    const logger = pino({ level: 'silent' });
    // A lease far longer than the test: a key left behind would hold the standby for a minute.
    const timing = () => ({ leaseMs: 60_000, renewMs: 1 });
    for (let round = 0; round < 30; round++) {
      const leader = new LeaderLease(own.nc, 'release-test', 'a', timing(), logger);
      await leader.acquire();
      // Renewals every millisecond: one is on its way at almost any moment.
      await new Promise((r) => setTimeout(r, 5 + (round % 7)));
      await leader.release();
      const standby = new LeaderLease(own.nc, 'release-test', 'b', { leaseMs: 60_000, renewMs: 50 }, logger);
      const waited = AbortSignal.timeout(10_000);
      await expect(standby.acquire(waited)).resolves.toBeUndefined();
      await standby.release();
    }
  }, 120_000);
});

describe('a renewal the bus never answers', () => {
  const own = ownServer();

  it('ends the lease when it runs out, not when the request gives up', async () => {
    const leader = new LeaderLease(own.nc, 'paused-bus', 'a', { leaseMs: 1_500, renewMs: 300 }, pino({ level: 'silent' }));
    await leader.acquire();
    // The server stops answering; the client's requests wait for their own timeout (5 s), longer than the lease.
    process.kill(own.nats.pid, 'SIGSTOP');
    try {
      await expect(leader.lost).resolves.toMatch(/the lease ended while its renewal was on its way/);
      expect(leader.held).toBe(false);
    } finally {
      process.kill(own.nats.pid, 'SIGCONT');
    }
    await leader.release();
  }, 60_000);
});
