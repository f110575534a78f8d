import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { ProvisioningError, TopologyError } from '../errors.js';
import { autoReplicas, commonWildcard, provision } from './provision.js';
import type { TopologyDefinition } from './topology.js';
import { loadTopologyFile } from './topology-file.js';

const logger = pino({ level: 'silent' });

const topology: TopologyDefinition = {
  streams: [
    { name: 'EVT', subjects: ['t.evt.>'], maxAge: '1d', duplicateWindow: '2m' },
    { name: 'DLQ', subjects: ['t.dlq.>'], maxAge: '30d', maxMsgs: 10_000, discard: 'old' },
  ],
  consumers: [{ stream: 'EVT', durable: 'ledger', filterSubjects: ['t.evt.A', 't.evt.B'], ackWait: '10s', maxAckPending: 50 }],
};

describe('provision (nats-server)', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('creates streams and a durable pull consumer with explicit ack, then changes nothing on a second run', async () => {
    const first = await provision(jsm, topology, { serverVersion: nc.info?.version, logger });
    expect(first.streams.map((s) => s.action)).toEqual(['created', 'created']);
    expect(first.consumers[0]).toMatchObject({ action: 'created' });

    const second = await provision(jsm, topology, { serverVersion: nc.info?.version, logger });
    expect(second.streams.map((s) => s.action)).toEqual(['unchanged', 'unchanged']);
    expect(second.consumers.map((c) => c.action)).toEqual(['unchanged']);

    const names: string[] = [];
    for await (const n of jsm.streams.names()) names.push(n);
    expect(names.sort()).toEqual(['DLQ', 'EVT']);
    const consumers: string[] = [];
    for await (const c of jsm.consumers.list('EVT')) consumers.push(c.name);
    expect(consumers).toEqual(['ledger']);

    const ci = await jsm.consumers.info('EVT', 'ledger');
    expect(ci.config).toMatchObject({ ack_policy: 'explicit', ack_wait: 10_000_000_000, max_ack_pending: 50, durable_name: 'ledger' });
    const dlq = await jsm.streams.info('DLQ');
    expect(dlq.config).toMatchObject({ max_msgs: 10_000, max_age: 30 * 86_400_000 * 1_000_000, retention: 'limits' });
  });

  it('keeps several filter subjects on 2.10+, and collapses them to their common wildcard on older servers', async () => {
    const report = await provision(jsm, topology, { serverVersion: nc.info?.version, logger });
    const ci = await jsm.consumers.info('EVT', 'ledger');
    if (nc.info!.version.startsWith('2.9')) {
      expect(report.consumers[0]).toMatchObject({ degraded: true, filterSubjects: ['t.evt.>'] });
      expect(ci.config.filter_subject).toBe('t.evt.>');
    } else {
      expect(ci.config.filter_subjects?.sort()).toEqual(['t.evt.A', 't.evt.B']);
    }
    expect(commonWildcard(['a.b.c', 'a.b.d.e'])).toBe('a.b.>');
    expect(commonWildcard(['x.y', 'z.y'])).toBeUndefined();
  });

  it('updates what the server allows to change and names the fields it changed', async () => {
    const changed: TopologyDefinition = {
      streams: [{ ...topology.streams![0]!, maxAge: '2d' }, topology.streams![1]!],
      consumers: [{ ...topology.consumers![0]!, ackWait: '20s', maxAckPending: 80 }],
    };
    const report = await provision(jsm, changed, { serverVersion: nc.info?.version, logger });
    expect(report.streams[0]).toMatchObject({ action: 'updated', changed: ['max_age'] });
    expect(report.consumers[0]).toMatchObject({ action: 'updated' });
    expect(report.consumers[0]!.changed.sort()).toEqual(['ack_wait', 'max_ack_pending']);
    const ci = await jsm.consumers.info('EVT', 'ledger');
    expect(ci.config).toMatchObject({ ack_wait: 20_000_000_000, max_ack_pending: 80 });
    expect((await jsm.streams.info('EVT')).config.max_age).toBe(2 * 86_400_000 * 1_000_000);
    const again = await provision(jsm, changed, { serverVersion: nc.info?.version, logger });
    expect([...again.streams, ...again.consumers].every((r) => r.action === 'unchanged')).toBe(true);
  });

  it('refuses a change the server cannot make, naming the field, and leaves the resource intact', async () => {
    const storageChange: TopologyDefinition = { streams: [{ ...topology.streams![0]!, maxAge: '2d', storage: 'memory' }] };
    const err = await provision(jsm, storageChange, { logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProvisioningError);
    expect((err as ProvisioningError).fields).toContain('storage');
    expect((await jsm.streams.info('EVT')).config.storage).toBe('file');
  });

  it('makes an interest stream\'s standing durables with it, keeps each message until every one of them acknowledged it, and then holds nothing', async () => {
    const standing = [
      { stream: 'INT', durable: 'a', filterSubjects: ['t.int.>'] },
      { stream: 'INT', durable: 'b', filterSubjects: ['t.int.>'] },
    ];
    // A process that consumes neither (as intake): it makes the stream and both durables.
    const first = await provision(jsm, { streams: [{ name: 'INT', subjects: ['t.int.>'], retention: 'interest' }], standing }, { logger });
    expect(first.consumers.map((c) => [c.durable, c.action])).toEqual([
      ['a', 'created'],
      ['b', 'created'],
    ]);
    const js = jetstream(nc);
    // One subject per message, as the events' job ids make them.
    for (let i = 0; i < 20; i++) await js.publish(`t.int.job${i}`, `m${i}`);
    expect((await jsm.streams.info('INT')).state.messages).toBe(20);

    async function drain(durable: string): Promise<string[]> {
      const consumer = await js.consumers.get('INT', durable);
      const got: string[] = [];
      while (got.length < 20) {
        const m = await consumer.next({ expires: 5_000 });
        if (!m) continue;
        got.push(m.string());
        await m.ackAck();
      }
      return got;
    }
    expect(await drain('a')).toHaveLength(20);
    // `b` has not acknowledged them: every message stays.
    expect((await jsm.streams.info('INT')).state.messages).toBe(20);
    // `b`'s owner provisions its own durable later, with its own settings: it gets all twenty.
    await provision(jsm, { streams: [{ name: 'INT', subjects: ['t.int.>'], retention: 'interest' }], consumers: [{ ...standing[1]!, ackWait: '5s' }], standing }, { logger });
    expect(await drain('b')).toHaveLength(20);
    const info = await jsm.streams.info('INT', { subjects_filter: '>' });
    expect(info.state.messages).toBe(0);
    expect(info.state.num_subjects ?? 0).toBe(0);

    // Another process's provisioning never changes a durable that exists.
    await provision(jsm, { streams: [{ name: 'INT', subjects: ['t.int.>'], retention: 'interest' }], standing }, { logger });
    expect((await jsm.consumers.info('INT', 'b')).config.ack_wait).toBe(5_000_000_000);
  });

  it('keeps the retention of an existing stream, which the server cannot change, with a warning that says how to apply the new one', async () => {
    await provision(jsm, { streams: [{ name: 'OLD', subjects: ['t.old.>'] }] }, { logger });
    const warnings: string[] = [];
    const capture = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const report = await provision(jsm, { streams: [{ name: 'OLD', subjects: ['t.old.>'], retention: 'interest', maxAge: '1d' }] }, { logger: capture });
    expect(report.streams[0]).toMatchObject({ name: 'OLD', action: 'updated', changed: ['max_age'], kept: ['retention'], serverRetention: 'limits' });
    const config = (await jsm.streams.info('OLD')).config;
    expect(config.retention).toBe('limits');
    expect(config.max_age).toBe(86_400_000 * 1_000_000);
    expect(warnings.join('\n')).toMatch(/stream OLD keeps its retention .*Recreating a stream/);
  });

  it('makes a `replicas: auto` stream R1 on a server alone, and means 3 only where the server names a cluster', async () => {
    expect(nc.info?.cluster).toBeUndefined();
    await provision(jsm, { streams: [{ name: 'AUTO', subjects: ['t.auto.>'], replicas: 'auto' }] }, { serverInfo: nc.info, logger });
    expect((await jsm.streams.info('AUTO')).config.num_replicas).toBe(1);
    // Told the server is in a cluster, the same file asks it for three copies.
    const clustered = await provision(jsm, { streams: [{ name: 'AUTO', subjects: ['t.auto.>'], replicas: 'auto' }] }, { serverInfo: { cluster: 'gpunet' }, logger });
    expect(clustered.streams[0]).toMatchObject({ action: 'updated', changed: ['num_replicas'] });
    expect(autoReplicas({ cluster: 'gpunet' })).toBe(3);
    expect(autoReplicas(undefined)).toBe(1);
  });

  it('fails on a consumer whose stream does not exist', async () => {
    const err = await provision(jsm, { consumers: [{ stream: 'NOPE', durable: 'x' }] }, { logger }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProvisioningError);
    expect((err as Error).message).toMatch(/stream NOPE does not exist/);
  });

  it('loads a topology from YAML and JSON files, naming the bad field of an invalid one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-topology-'));
    try {
      await writeFile(
        join(dir, 'ok.yaml'),
        ['streams:', '  - name: EVT2', '    subjects: ["u.evt.>"]', 'consumers:', '  - stream: EVT2', '    durable: svc', '    ackWait: 5s', ''].join('\n'),
      );
      const t = await loadTopologyFile(join(dir, 'ok.yaml'));
      expect(t.consumers[0]).toMatchObject({ ackWait: 5000, maxAckPending: 1000, deliverPolicy: 'all' });
      const report = await provision(jsm, t, { logger });
      expect(report.streams[0]!.action).toBe('created');

      await writeFile(join(dir, 'bad.json'), JSON.stringify({ streams: [{ name: 'X', subjects: ['x.>'] }], consumers: [{ stream: 'X', durable: 'a.b', ackWait: 'soon' }] }));
      const err = await loadTopologyFile(join(dir, 'bad.json')).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TopologyError);
      const paths = (err as TopologyError).issues.map((i) => i.path);
      expect(paths).toEqual(expect.arrayContaining(['consumers[0].durable', 'consumers[0].ackWait']));
      expect((err as Error).message).toContain('bad.json');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
