/**
 * A `leader` service in the kit (decision 0029), in-process against a real nats-server and a
 * SQLite store: a second process waits as a standby until the first lets go; a leader whose term
 * the store has moved past (it was paused while another took over) gets nothing appended, and
 * its term ends.
 */
import { FencedError, openEventStore, type EventStore } from '#event-store';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { Module } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { elect, EventWriter, LEASE_BUCKET, leadershipStreamId, NotLeaderError, startService, systemClock, type RunningService } from './index.js';

@Module({})
class NothingModule {}

describe('service kit: leader and standby', () => {
  let nats: TestNatsServer;
  let dir: string;
  let store: EventStore;
  const running: RunningService[] = [];
  const LEASE_MS = 3_000;
  const RENEW_MS = 300;
  const definition = () => ({
    name: 'storage' as const,
    module: NothingModule,
    consumers: () => [],
    leader: { role: 'storage' as const },
    env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`, GPUNET_LOG_LEVEL: 'silent', GPUNET_LEASE_MS: String(LEASE_MS), GPUNET_LEASE_RENEW_MS: String(RENEW_MS) },
  });
  const elected = { type: 'LeaderElected' as const, data: { role: 'storage' as const, holder: 'test', term: 99, leaseMs: 1500, electedAt: new Date().toISOString() } };

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-leader-'));
    store = await openEventStore(`sqlite:${join(dir, 'events.db')}`);
  });
  afterAll(async () => {
    for (const r of running) await r.stop().catch(() => undefined);
    await store?.close();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a standby starts only once the leader lets go, in a new term', async () => {
    const first = await startService(definition());
    running.push(first);
    expect(first.leadership?.term).toBe(1);
    let secondStarted = false;
    const second = startService(definition()).then((s) => {
      secondStarted = true;
      running.push(s);
      return s;
    });
    // Longer than one lease: only renewals keep the first leading, and the second still waits.
    // Counted in renewals seen on the lease's key, not in wall-clock time: more of them than fit
    // in one lease. (A 3 s lease renewed every 300 ms: the leader's renewals may lag 2.7 s on a
    // loaded machine before the standby may rightly take over.)
    await first.ctx.writer.append('storage-probe', [elected]);
    const nc = await connect({ servers: nats.url });
    try {
      const kv = await new Kvm(jetstream(nc)).open(LEASE_BUCKET);
      const from = (await kv.get('storage'))!.revision;
      const enough = LEASE_MS / RENEW_MS + 1;
      const end = Date.now() + 30_000;
      while ((await kv.get('storage'))!.revision < from + enough) {
        if (Date.now() > end) throw new Error(`the leader renewed its lease fewer than ${enough} times in 30 s`);
        await new Promise((r) => setTimeout(r, 50));
      }
    } finally {
      await nc.close();
    }
    expect(secondStarted).toBe(false);
    await first.stop();
    const s = await second;
    expect(s.leadership?.term).toBe(2);
    expect((await first.leadership!.lost)).toBe('released');
    await s.ctx.writer.append('storage-probe', [elected]);
    expect(await store.readStream('storage-probe')).toHaveLength(2);
  }, 30_000);

  it('a leader the store has moved past appends nothing and its term ends', async () => {
    const leader = running[running.length - 1]!;
    const term = leader.leadership!.term;
    // What a standby does on taking over, while this leader is paused: a new term in the store.
    await elect(store, new EventWriter(store, 'storage', systemClock), 'storage', 'the-next-leader', 1500, systemClock);
    const before = await store.readStream('storage-probe');
    const err = await leader.ctx.writer.append('storage-probe', [elected]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotLeaderError);
    expect((err as NotLeaderError).retryable).toBe(true); // the message in hand goes back to the bus, for the new leader
    expect((err as Error).cause).toBeInstanceOf(FencedError);
    expect(await leader.leadership!.lost).toMatch(/store refused an append/);
    expect(await store.readStream('storage-probe')).toEqual(before);
    // Deposed: refused at once, without asking the store.
    await expect(leader.ctx.writer.append('storage-probe', [elected])).rejects.toBeInstanceOf(NotLeaderError);
    const terms = await store.readStream(leadershipStreamId('storage'));
    expect(terms.map((t) => (t.data as { term: number }).term)).toEqual([1, 2, term + 1]);
  }, 30_000);
});
