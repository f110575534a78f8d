/**
 * A network made before storage had two durables (decision 0054): its `storage` durable takes
 * every event. Provisioning storage's part of deploy/topology.yaml, as storage does at start,
 * makes `storage-released` first and then narrows `storage`: a ComputeReleased that `storage` was
 * still to be given is given to `storage-released`, with the other durables done with it already.
 * (nats-server 2.9 does not take a narrowed durable's interest back, so there the other order
 * keeps it too; a server that did would drop it in the other order, and the file's order is for that.)
 * Real nats-server, the real topology file.
 */
import { provision } from '#messaging';
import { topologyFor, defaultTopologyFile } from '#service-kit';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { RELEASED_CONSUMER, STORAGE_CONSUMER } from './consumers.js';

const logger = pino({ level: 'silent' });

describe('storage\'s durables on a network made before decision 0054', () => {
  let nats: TestNatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connect({ servers: nats.url });
  });
  afterAll(async () => {
    await nc?.close();
    await nats?.stop();
  });

  it('gives the events `storage` still held to `storage-released` when its filter narrows: nothing is lost, and JobSubmitted stays with `storage`', async () => {
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);
    const topology = await topologyFor(defaultTopologyFile(), 'storage', [STORAGE_CONSUMER, RELEASED_CONSUMER]);
    const events = topology.streams.filter((s) => s.name === 'GPUNET_EVENTS');
    // As before: the interest stream, and `storage` on the whole stream beside placement and the ledger.
    await provision(jsm, { streams: events, consumers: [] }, { serverVersion: nc.info?.version, logger });
    for (const durable of ['storage', 'placement', 'ledger']) {
      await jsm.consumers.add('GPUNET_EVENTS', { durable_name: durable, ack_policy: AckPolicy.Explicit, filter_subject: 'gpunet.evt.>' });
    }
    await js.publish('gpunet.evt.ComputeReleased.team-a.job-1', '{"n":1}', { msgID: 'released-1' });
    await js.publish('gpunet.evt.JobSubmitted.team-a.job-2', '{"n":2}', { msgID: 'submitted-2' });
    await js.publish('gpunet.evt.JobFinished.team-a.job-3', '{"n":3}', { msgID: 'finished-3' });
    // Placement and the ledger are done with all three; storage with none.
    for (const durable of ['placement', 'ledger']) {
      const batch = await (await js.consumers.get('GPUNET_EVENTS', durable)).fetch({ max_messages: 3, expires: 2_000 });
      for await (const m of batch) await m.ackAck();
    }

    // Storage starts with this version: its consumers as the topology file has them, in its order.
    const report = await provision(jsm, { streams: events, consumers: topology.consumers }, { serverVersion: nc.info?.version, logger });
    expect(report.consumers.map((c) => [c.durable, c.action])).toEqual([
      [RELEASED_CONSUMER, 'created'],
      [STORAGE_CONSUMER, 'updated'],
    ]);

    const given = async (durable: string) => {
      const out: string[] = [];
      const batch = await (await js.consumers.get('GPUNET_EVENTS', durable)).fetch({ max_messages: 10, expires: 1_000 });
      for await (const m of batch) {
        out.push(m.subject);
        await m.ackAck();
      }
      return out;
    };
    expect(await given(RELEASED_CONSUMER)).toEqual(['gpunet.evt.ComputeReleased.team-a.job-1']);
    expect(await given(STORAGE_CONSUMER)).toEqual(['gpunet.evt.JobSubmitted.team-a.job-2']);
    // Nothing of storage's is left unhandled. (nats-server 2.9 keeps the JobFinished that the old
    // `storage` was still to be given: the narrowing does not take its interest back. The operator's
    // upgrade note in docs/operations.md says so.)
    const left = (await jsm.streams.info('GPUNET_EVENTS', { subjects_filter: '>' })).state.subjects ?? {};
    expect(Object.keys(left).filter((s) => /^gpunet\.evt\.(JobSubmitted|ComputeReleased)\./.test(s))).toEqual([]);
  }, 30_000);
});
