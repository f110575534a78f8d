/**
 * Fifty execution agents on one network: an agent receives only its own node's work, so what one
 * agent handles depends on the jobs placed on it, never on how many nodes the network has. The
 * recorder copies each node's work onto `gpunet.work.<nodeId>.<type>` and each agent's durable
 * consumer (`execution-<nodeId>`) filters its own subjects; here the JetStream figures of all fifty
 * consumers and the work published per node (seen on the subjects) are compared with where
 * placement put each job. The stream is a work queue: what the agents acknowledged leaves it.
 */
import type { JobPlaced } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure } from '../support/network.js';
import { until } from '../support/poll.js';

const AGENTS = 50;
const JOBS = 30;

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

/** Messages each node's consumer has had delivered (its stream sequence of deliveries). */
async function deliveredPerNode(): Promise<Map<string, number>> {
  const jsm = await jetstreamManager(await network().nats());
  const out = new Map<string, number>();
  for (const nodeId of network().nodeIds) out.set(nodeId, (await jsm.consumers.info('GPUNET_WORK', `execution-${nodeId}`)).delivered.consumer_seq);
  return out;
}

beforeAll(async () => {
  // One GPU each, so thirty one-GPU jobs spread over many nodes when they overlap. Fifty agents take
  // a while to start on two cores (about 1.5 CPU-s each): `up` waits for as long as agents keep
  // answering their health query, and gives up only when none has for two minutes. On a machine
  // busy with other work that can take many minutes; the hook's limit only stops a run that hangs.
  // Script jobs only: no agent asks the container runtime whether it answers (`podman info`, about
  // half a second of CPU each, fifty times over).
  net = await TestNetwork.start({ agents: AGENTS, gpus: 1, startTimeoutMs: 120_000, env: { GPUNET_CONTAINER_RUNTIME: 'off' } });
}, 1_200_000);

afterAll(async () => {
  await net?.stop();
}, 120_000);

describe(`${AGENTS} agents on one network`, () => {
  it(
    "delivers each agent only its own node's work: what an agent handles follows the jobs placed on it, not the number of nodes",
    e2e(async () => {
      expect(network().nodeIds).toHaveLength(AGENTS);
      const before = await deliveredPerNode();
      // The work published for each node, as anyone allowed to read the subjects sees it go by.
      const nc = await network().nats();
      const published = new Map<string, number>();
      const sub = nc.subscribe('gpunet.work.>', {
        callback: (_err, m) => {
          const nodeId = m.subject.split('.')[2]!;
          published.set(nodeId, (published.get(nodeId) ?? 0) + 1);
        },
      });
      await nc.flush();
      const client = network().client();
      // Each job runs until all have been submitted, so several overlap and spread over nodes.
      const jobIds: string[] = [];
      for (let i = 0; i < JOBS; i++) jobIds.push((await client.submit(scriptJob('sleep 1; echo done', { name: `many-${i}` }))).jobId);
      const { views } = await settle(network(), jobIds, { timeoutMs: 180_000 });
      expect([...views.values()].map((v) => v.state)).toEqual(jobIds.map(() => 'completed'));

      // Where placement put each attempt.
      const attemptsOn = new Map<string, number>();
      for (const e of await jobEvents(network(), jobIds, ['JobPlaced'])) {
        const { nodeId } = e.data as JobPlaced;
        attemptsOn.set(nodeId, (attemptsOn.get(nodeId) ?? 0) + 1);
      }
      expect([...attemptsOn.values()].reduce((a, b) => a + b, 0)).toBe(JOBS);

      // Every agent has acknowledged its work: the work queue holds none of it any more.
      const jsm = await jetstreamManager(nc);
      await until('the agents\' work to leave the stream', async () => (await jsm.streams.info('GPUNET_WORK')).state.messages === 0, { timeoutMs: 60_000 });
      sub.unsubscribe();
      // Every work message names a node that had an attempt placed on it.
      expect([...published.keys()].filter((n) => !attemptsOn.has(n))).toEqual([]);

      const after = await deliveredPerNode();
      const delivered = new Map(network().nodeIds.map((n) => [n, after.get(n)! - before.get(n)!]));
      const idle = network().nodeIds.filter((n) => !attemptsOn.has(n));
      const busy = [...attemptsOn.keys()];
      // Every agent was delivered exactly its own node's messages: none for a node without work,
      // however much the other forty-odd ran …
      expect(idle.length).toBeGreaterThan(0);
      expect(idle.filter((n) => delivered.get(n) !== 0)).toEqual([]);
      for (const n of busy) expect({ node: n, delivered: delivered.get(n) }).toEqual({ node: n, delivered: published.get(n) ?? 0 });
      // … and no message went to more than one agent: what was published is the agents' total.
      const total = [...delivered.values()].reduce((a, b) => a + b, 0);
      expect(total).toBe([...published.values()].reduce((a, b) => a + b, 0));
      // The same number of messages per attempt on every node: a constant of the job, not of the network.
      const perAttempt = new Set(busy.map((n) => delivered.get(n)! / attemptsOn.get(n)!));
      expect(perAttempt.size).toBe(1);
      const [messagesPerAttempt] = [...perAttempt];
      expect(messagesPerAttempt).toBeGreaterThan(0);
      process.stdout.write(
        `${AGENTS} agents, ${JOBS} jobs on ${busy.length} nodes: ${messagesPerAttempt} work messages per attempt, ${total} in all; ${idle.length} agents with no job received 0\n`,
      );
    }),
    300_000,
  );
});
