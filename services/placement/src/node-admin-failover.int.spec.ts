/**
 * A cordon outlives placement's fail-over (decision 0031 with 0029), with real processes
 * (`node dist/services/placement/src/main.js`, built by `npm run build`) on one nats-server and one
 * SQLite store: the leader records the operator's cordon of node-a and places on node-b; SIGKILL
 * the leader, and the standby that takes over folds the cordon from the store and places on node-b
 * too; its uncordon brings node-a back. The test plays intake, storage and the recorder through its
 * own writer and relays, and the operator through the command subjects.
 */
import { Commands, Queries, type ListNodeStatesReply, type NodeAdminReply } from '#contracts';
import { requestQuery } from '#messaging';
import { logged, waitFor } from '../../../test/support/service-process.js';
import { PlacementWorld } from '../test-fixtures/placement-world.js';

describe('a cordon across placement fail-over', () => {
  let world: PlacementWorld;
  const spawnPlacement = () => world.spawnPlacement('placement');
  const submit = (jobId: string) => world.submit(jobId);
  const placedOn = async (jobId: string) => (await world.placed(jobId))?.data.nodeId;
  const command = <C extends typeof Commands.CordonNode | typeof Commands.UncordonNode>(c: C, body: object) =>
    requestQuery<NodeAdminReply>(world.nc, c.subject, body, { request: c.schema, response: c.replySchema }, { timeoutMs: 10_000 });

  beforeAll(async () => {
    world = await PlacementWorld.start([
      { nodeId: 'node-a', gpus: 4, hostname: 'host-node-a' },
      { nodeId: 'node-b', gpus: 4, hostname: 'host-node-b' },
    ]);
  }, 30_000);

  afterAll(async () => {
    await world?.stop();
  });

  it('the standby that takes over keeps node-a cordoned (folded from the store), and its uncordon brings node-a back', async () => {
    const a = spawnPlacement();
    await waitFor('a to lead', () => logged(a, 'service started'));
    const b = spawnPlacement();
    await waitFor('b to wait as a standby', () => logged(b, 'leader: standby, waiting for the lease'));
    await waitFor('both nodes registered with the leader', async () => {
      const list = await requestQuery<ListNodeStatesReply>(world.nc, Queries.ListNodeStates.subject, {}, { response: Queries.ListNodeStates.replySchema });
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
    const list = await requestQuery<ListNodeStatesReply>(world.nc, Queries.ListNodeStates.subject, {}, { response: Queries.ListNodeStates.replySchema });
    expect(list.nodes.map((n) => [n.nodeId, n.state, n.admin?.reason])).toEqual([
      ['node-a', 'cordoned', 'GPU 2 ECC errors'],
      ['node-b', 'ready', undefined],
    ]);

    // ── the new leader's uncordon: node-a, first in order, takes the next job ──
    expect(await command(Commands.UncordonNode, { nodeId: 'node-a', by: 'operator int' })).toMatchObject({ changed: true, event: 'NodeUncordoned', node: { state: 'ready' } });
    await submit('job-3');
    expect(await waitFor('job-3 placed by b', () => placedOn('job-3'), 20_000)).toBe('node-a');
    const events = await world.store.readStream('placement-node-node-a');
    expect(events.map((e) => e.type)).toEqual(['NodeCordoned', 'NodeUncordoned']);
  }, 90_000);
});
