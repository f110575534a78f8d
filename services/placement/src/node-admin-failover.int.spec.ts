/**
 * A cordon outlives placement's fail-over (decision 0031 with 0029), with real processes
 * (`node dist/services/placement/src/main.js`, built by `npm run build`) on one nats-server and one
 * SQLite store: the leader records the operator's cordon of node-a and places on node-b; SIGKILL
 * the leader, and the standby that takes over folds the cordon from the store and places on node-b
 * too; its uncordon brings node-a back. The test plays intake, storage and the recorder through its
 * own writer and relays, and the operator through the command subjects.
 */
import { Commands, Queries, type EventData, type JobSpec, type ListNodeStatesReply, type NodeAdminReply } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay, requestQuery } from '#messaging';
import { EventWriter } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { logged, ServiceProcesses, waitFor, type ServiceProcess } from '../../../test/support/service-process.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/placement/src/main.js');
const quiet = pino({ level: 'silent' });

const spec = (): JobSpec => ({
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
});

describe('a cordon across placement fail-over', () => {
  let nats: TestNatsServer;
  let dir: string;
  let env: Record<string, string>;
  let store: EventStore;
  let writer: EventWriter;
  let relays: OutboxRelay[];
  let nc: NatsConnection;
  const processes = new ServiceProcesses(MAIN, REPO);

  const spawnPlacement = (): ServiceProcess => processes.spawn('placement', env);

  async function submit(jobId: string): Promise<void> {
    await writer.append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team: 'team-a', spec: spec(), submittedAt: new Date().toISOString() } }], { expectedRevision: 'no_stream' });
    await writer.append(`storage-job-${jobId}`, [{ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }]);
  }
  const placedOn = async (jobId: string): Promise<string | undefined> => {
    const placed = (await store.readStream(`placement-job-${jobId}`)).find((e: RecordedEvent) => e.type === 'JobPlaced');
    return placed && (placed.data as EventData<'JobPlaced'>).nodeId;
  };
  const command = <C extends typeof Commands.CordonNode | typeof Commands.UncordonNode>(c: C, body: object) =>
    requestQuery<NodeAdminReply>(nc, c.subject, body, { request: c.schema, response: c.replySchema }, { timeoutMs: 10_000 });

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-cordon-failover-'));
    const storeUrl = `sqlite:${join(dir, 'events.db')}`;
    env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'info', GPUNET_NODE_LEASE_MS: '600000' };
    store = await openEventStore(storeUrl);
    writer = new EventWriter(store, 'test', { now: () => new Date() });
    nc = await connect({ servers: nats.url });
    relays = ['intake-', 'storage-', 'execution-'].map((prefix) => new OutboxRelay(store, nc, { name: `test-${prefix}`, filter: { streamPrefix: prefix }, logger: quiet }));
    for (const r of relays) await r.start();
    for (const nodeId of ['node-a', 'node-b']) {
      await writer.append(`execution-node-${nodeId}`, [
        {
          type: 'NodeRegistered',
          data: { nodeId, hostname: `host-${nodeId}`, gpus: Array.from({ length: 4 }, (_, index) => ({ index, model: 'A100' })), simulated: true, networkIsolation: false, heartbeatIntervalMs: 1_000, registeredAt: new Date().toISOString() },
        },
      ]);
    }
  }, 30_000);

  afterAll(async () => {
    processes.killAll();
    for (const r of relays ?? []) await r.stop();
    await nc?.close();
    await store?.close();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('the standby that takes over keeps node-a cordoned (folded from the store), and its uncordon brings node-a back', async () => {
    const a = spawnPlacement();
    await waitFor('a to lead', () => logged(a, 'service started'));
    const b = spawnPlacement();
    await waitFor('b to wait as a standby', () => logged(b, 'leader: standby, waiting for the lease'));
    await waitFor('both nodes registered with the leader', async () => {
      const list = await requestQuery<ListNodeStatesReply>(nc, Queries.ListNodeStates.subject, {}, { response: Queries.ListNodeStates.replySchema });
      return list.nodes.length === 2;
    });

    const cordoned = await command(Commands.CordonNode, { nodeId: 'node-a', reason: 'GPU 2 ECC errors', by: 'operator int' });
    expect(cordoned).toMatchObject({ changed: true, event: 'NodeCordoned', node: { nodeId: 'node-a', state: 'cordoned', hostname: 'host-node-a' } });
    // The reply and the store come before the process's log line reaches this test: wait for it.
    expect(await waitFor('the cordon logged', () => a.logs.find((l) => typeof l.msg === 'string' && l.msg.startsWith('node node-a (host-node-a) cordoned')))).toMatchObject({ nodeId: 'node-a', nodeHost: 'host-node-a', by: 'operator int', reason: 'GPU 2 ECC errors' });
    await submit('job-1');
    expect(await waitFor('job-1 placed', () => placedOn('job-1'))).toBe('node-b');
    expect(await waitFor('job-1 placed, logged', () => a.logs.find((l) => l.msg === 'job placed' && l.jobId === 'job-1'))).toMatchObject({ nodeId: 'node-b', nodeHost: 'host-node-b' });

    // ── the leader dies; the standby folds the cordon and keeps to it ──
    a.child.kill('SIGKILL');
    await waitFor('b to lead', () => logged(b, 'service started'), 20_000);
    await submit('job-2');
    expect(await waitFor('job-2 placed by b', () => placedOn('job-2'), 20_000)).toBe('node-b');
    const list = await requestQuery<ListNodeStatesReply>(nc, Queries.ListNodeStates.subject, {}, { response: Queries.ListNodeStates.replySchema });
    expect(list.nodes.map((n) => [n.nodeId, n.state, n.admin?.reason])).toEqual([
      ['node-a', 'cordoned', 'GPU 2 ECC errors'],
      ['node-b', 'ready', undefined],
    ]);

    // ── the new leader's uncordon: node-a, first in order, takes the next job ──
    expect(await command(Commands.UncordonNode, { nodeId: 'node-a', by: 'operator int' })).toMatchObject({ changed: true, event: 'NodeUncordoned', node: { state: 'ready' } });
    await submit('job-3');
    expect(await waitFor('job-3 placed by b', () => placedOn('job-3'), 20_000)).toBe('node-a');
    const events = await store.readStream('placement-node-node-a');
    expect(events.map((e) => e.type)).toEqual(['NodeCordoned', 'NodeUncordoned']);
  }, 90_000);
});
