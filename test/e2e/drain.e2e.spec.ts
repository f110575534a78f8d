/**
 * Cordon, drain and uncordon with real processes (decision 0031), driven by the operator's
 * `gpunet nodes` commands: node A cordoned takes no job of those submitted; node B drained while a
 * job runs there lets the job finish and be billed as usual, then is recorded drained; uncordoned,
 * both take work again. `gpunet nodes list` shows each state along the way.
 */
import type { JobPlaced, NodeAdminReply, NodeCordoned, NodeDrained, NodeDrainRequested, NodeUncordoned } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import type { NodeListEntry } from '../../libs/cli/src/commands/nodes.js';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

/** Runs `gpunet <argv> --data-dir <network> --json` in this process, as the operator of the local network. */
async function gpunet(argv: string[]): Promise<{ code: number; doc: unknown; stderr: string }> {
  const chunks: Record<'out' | 'err', Buffer[]> = { out: [], err: [] };
  const out = new PassThrough().on('data', (c: Buffer) => chunks.out.push(c));
  const err = new PassThrough().on('data', (c: Buffer) => chunks.err.push(c));
  const code = await runCli([...argv, '--data-dir', network().dataDir, '--json'], { stdout: out, stderr: err, env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'GPUNET_NATS_URL')), cwd: network().dataDir });
  const text = Buffer.concat(chunks.out).toString('utf8');
  return { code, doc: text.trim() === '' ? undefined : JSON.parse(text), stderr: Buffer.concat(chunks.err).toString('utf8') };
}

async function nodesList(): Promise<Map<string, NodeListEntry>> {
  const { code, doc, stderr } = await gpunet(['nodes', 'list']);
  expect({ code, stderr, error: (doc as { error?: unknown } | undefined)?.error }).toEqual({ code: 0, stderr: '', error: undefined });
  return new Map((doc as { nodes: NodeListEntry[] }).nodes.map((n) => [n.nodeId, n]));
}

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 2 });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('cordon, drain and uncordon across real processes', () => {
  it(
    'places nothing on a cordoned node, lets a draining node finish its job (billed) and records it drained, and takes both back on uncordon',
    e2e(async () => {
      const [a, b] = network().nodeIds as [string, string];
      const client = network().client();
      const before = await until('both nodes ready in `gpunet nodes list`', async () => {
        const list = await nodesList();
        return list.get(a)?.state === 'ready' && list.get(b)?.state === 'ready' ? list : undefined;
      }, { timeoutMs: 20_000, intervalMs: 200 });
      expect(before.get(a)).toMatchObject({ gpus: 2, gpusHeld: 0, runningAttempts: 0, enrolled: true, hostname: expect.any(String) });
      expect(before.get(a)!.heartbeatAgeMs).toBeLessThan(10_000);

      // ── cordon A: nothing submitted now lands there ──
      const cordoned = await gpunet(['nodes', 'cordon', a, '--reason', 'fan replacement', '--by', 'operator e2e']);
      expect(cordoned.code).toBe(0);
      expect((cordoned.doc as NodeAdminReply)).toMatchObject({ changed: true, event: 'NodeCordoned', node: { nodeId: a, state: 'cordoned', admin: { state: 'cordoned', reason: 'fan replacement', by: 'operator e2e' } } });
      const again = await gpunet(['nodes', 'cordon', a, '--reason', 'twice']);
      expect((again.doc as NodeAdminReply).changed).toBe(false);
      const jobs = await Promise.all([1, 2, 3, 4].map((i) => client.submit(scriptJob(`echo short ${i}`, { name: `short-${i}` }))));
      const first = await settle(network(), jobs.map((j) => j.jobId));
      for (const j of jobs) expect(first.views.get(j.jobId)!.state).toBe('completed');
      const placedFirst = first.events.filter((e) => e.type === 'JobPlaced').map((e) => (e.data as JobPlaced).nodeId);
      expect(placedFirst).toHaveLength(4);
      expect(new Set(placedFirst)).toEqual(new Set([b]));

      // ── drain B while a job runs there: the job finishes and is billed, then B is drained ──
      const { jobId: longJob } = await client.submit(scriptJob('while [ ! -e "$GPUNET_WORK_DIR/release" ]; do sleep 0.1; done; echo released', { name: 'runs-through-drain', timeLimit: '2m' }));
      const held = await until('the long job to hold compute on B', async () => (await jobEvents(network(), [longJob], ['ComputeHeld']))[0], { timeoutMs: 30_000, intervalMs: 100 });
      const { nodeId: heldOn, attemptId } = held.data as { nodeId: string; attemptId: string };
      expect(heldOn).toBe(b);
      const draining = gpunet(['nodes', 'drain', b, '--reason', 'kernel update', '--wait', '--timeout', '2m']);
      const requested = await until('NodeDrainRequested in the store', async () => (await network().events({ types: ['NodeDrainRequested'] }))[0], { timeoutMs: 15_000, intervalMs: 100 });
      expect(requested).toMatchObject({ streamId: `placement-node-${b}`, metadata: { producer: 'placement' } });
      expect(requested.data as NodeDrainRequested).toMatchObject({ nodeId: b, reason: 'kernel update', runningAttempts: [{ jobId: longJob, attemptId }] });
      const whileDraining = await nodesList();
      expect(whileDraining.get(b)).toMatchObject({ state: 'draining', runningAttempts: 1, gpusHeld: 1, admin: { state: 'draining', reason: 'kernel update' } });
      expect(whileDraining.get(a)).toMatchObject({ state: 'cordoned', admin: { reason: 'fan replacement' } });
      // Neither node takes new work now: this job waits.
      const { jobId: waiting } = await client.submit(scriptJob('echo after uncordon', { name: 'waits-for-uncordon' }));
      await until('the new job to be staged and queued', async () => (await client.getJob(waiting)).state === 'staged', { timeoutMs: 15_000, intervalMs: 100 });

      const workDir = join(network().dataDir, 'nodes', b, 'runs', longJob, attemptId, 'work');
      expect(existsSync(workDir)).toBe(true);
      await writeFile(join(workDir, 'release'), '');
      const drained = await draining;
      expect(drained.code).toBe(0);
      expect((drained.doc as NodeAdminReply).node).toMatchObject({ nodeId: b, state: 'drained', runningAttempts: 0, gpusHeld: 0 });
      expect(drained.stderr).toMatch(new RegExp(`node ${b}.* is draining`));
      const long = await settle(network(), [longJob]);
      expect(long.views.get(longJob)!.state).toBe('completed');
      const charges = await client.charges({ jobId: longJob });
      expect(charges.lines.map((l) => l.attemptId)).toEqual([attemptId]);
      expect(charges.lines[0]!.amountMicros).toBeGreaterThan(0);
      // Drained after the job released its GPUs, recorded once.
      const drainedEvents = await network().events({ types: ['NodeDrained'] });
      expect(drainedEvents.map((e) => e.data as NodeDrained)).toEqual([{ nodeId: b, requestedAt: (requested.data as NodeDrainRequested).at, at: expect.any(String), afterLoss: false }]);
      const released = long.events.find((e) => e.type === 'ComputeReleased')!;
      expect(drainedEvents[0]!.position).toBeGreaterThan(released.position);
      expect((await client.getJob(waiting)).state).toBe('staged');
      expect((await jobEvents(network(), [waiting], ['JobPlaced']))).toEqual([]);

      // ── uncordon: A takes the waiting job; B comes back too ──
      const back = await gpunet(['nodes', 'uncordon', a, '--reason', 'fan replaced']);
      expect((back.doc as NodeAdminReply)).toMatchObject({ changed: true, event: 'NodeUncordoned', node: { state: 'ready' } });
      const after = await settle(network(), [waiting]);
      expect(after.views.get(waiting)!.state).toBe('completed');
      expect(after.events.filter((e) => e.type === 'JobPlaced').map((e) => (e.data as JobPlaced).nodeId)).toEqual([a]);
      expect((await gpunet(['nodes', 'uncordon', b])).code).toBe(0);
      const list = await nodesList();
      expect([list.get(a)!.state, list.get(b)!.state]).toEqual(['ready', 'ready']);
      expect(list.get(b)!.admin).toBeUndefined();
      const uncordons = (await network().events({ types: ['NodeUncordoned'] })).map((e) => e.data as NodeUncordoned);
      expect(uncordons.map((u) => [u.nodeId, u.previous])).toEqual([
        [a, 'cordoned'],
        [b, 'drained'],
      ]);
      const cordons = (await network().events({ types: ['NodeCordoned'] })).map((e) => e.data as NodeCordoned);
      expect(cordons).toEqual([{ nodeId: a, by: 'operator e2e', reason: 'fan replacement', at: expect.any(String), runningAttempts: [] }]);

      // An unknown node id: exit 2, the field and the fix named.
      const unknown = await gpunet(['nodes', 'drain', 'no-such-node', '--reason', 'typo']);
      expect(unknown.code).toBe(2);
      const error = (unknown.doc as { error: { message: string; issues: { path: string; fix?: string }[] } }).error;
      expect(error.message).toMatch(/no node no-such-node is known to placement/);
      expect(error.issues).toEqual([expect.objectContaining({ path: '<nodeId>', fix: expect.stringMatching(/gpunet nodes list/) })]);

      // Placement's log lines name the node and its host (the log file may trail the store: wait for each line).
      const wanted = ['cordoned', 'draining', 'drained', 'uncordoned', 'job placed'];
      let lines: { msg: string; nodeId?: string; nodeHost?: string }[] = [];
      await until('placement to have logged each node action', async () => {
        const placementLog = await import('node:fs/promises').then((fs) => fs.readFile(join(network().dataDir, 'logs', 'placement.log'), 'utf8'));
        // The last piece of the split is empty, or a line still being written.
        lines = placementLog.split('\n').slice(0, -1).filter((l) => l.includes('"nodeId"')).map((l) => JSON.parse(l) as { msg: string; nodeId?: string; nodeHost?: string });
        return wanted.every((msg) => lines.some((l) => l.msg.includes(msg)));
      }, { timeoutMs: 30_000 });
      for (const msg of wanted) {
        const line = lines.find((l) => l.msg.includes(msg));
        expect({ msg, nodeId: line?.nodeId, nodeHost: typeof line?.nodeHost }).toEqual({ msg, nodeId: expect.any(String), nodeHost: 'string' });
      }
    }),
    180_000,
  );
});
