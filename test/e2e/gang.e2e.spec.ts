/**
 * Multi-node gangs with real processes: a job larger than any node runs on whole nodes at once,
 * each node's agent running its part with its rank; when one part fails the other is stopped, and
 * the job fails with the failing part's exit code. Never a partial hold.
 */
import type { ComputeHeld, JobFinished, JobPlaced, UsageRecorded } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 2, env: { GPUNET_KILL_GRACE_MS: '1000' } });
}, NETWORK_START_HOOK_MS);

/** The gang's node ids by rank; every test network node takes part. */
function ranks(placed: JobPlaced): string[] {
  const ids = (placed.nodes ?? []).map((n) => n.nodeId);
  expect([...ids].sort()).toEqual(['node-1', 'node-2']);
  return ids;
}

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('multi-node gangs across real agents', () => {
  it(
    'runs a 4-GPU job on two 2-GPU nodes at once, each part with its rank; rank 0 hands over the outputs',
    e2e(async () => {
      const client = network().client();
      // Each part says who it is; rank 0 waits for rank 1's word through its own output, then writes the result.
      const script = [
        'echo "part rank=$GPUNET_NODE_RANK of $GPUNET_NUM_NODES nodes=$GPUNET_NODES gpus=$CUDA_VISIBLE_DEVICES"',
        'echo "state of rank $GPUNET_NODE_RANK" > "$GPUNET_CHECKPOINT_DIR/state.txt"',
        'if [ "$GPUNET_NODE_RANK" = 0 ]; then sleep 1; echo "rank 0 of $GPUNET_NUM_NODES" > "$GPUNET_OUTPUT_DIR/result.txt"; fi',
      ].join('\n');
      const { jobId } = await client.submit(scriptJob(script, { gpus: 4, globs: ['*.txt'] }));
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });
      const view = views.get(jobId)!;
      expect(view.state).toBe('completed');

      const placed = events.filter((e) => e.type === 'JobPlaced').map((e) => e.data as JobPlaced);
      expect(placed).toHaveLength(1);
      // Both whole nodes, in first-fit (registration) order.
      const [r0, r1] = ranks(placed[0]!);
      expect(placed[0]!.nodes).toEqual([
        { nodeId: r0, gpuIndices: [0, 1] },
        { nodeId: r1, gpuIndices: [0, 1] },
      ]);
      // Each node held its own GPUs for the one attempt.
      const held = events.filter((e) => e.type === 'ComputeHeld').map((e) => e.data as ComputeHeld);
      expect(held.map((h) => [h.nodeId, h.attemptId, h.gpuIndices]).sort()).toEqual([
        ['node-1', placed[0]!.attemptId, [0, 1]],
        ['node-2', placed[0]!.attemptId, [0, 1]],
      ]);
      const finished = events.filter((e) => e.type === 'JobFinished').map((e) => e.data as JobFinished);
      expect(finished.map((f) => [f.nodeId, f.outcome]).sort()).toEqual([
        ['node-1', 'completed'],
        ['node-2', 'completed'],
      ]);
      // The view shows both parts, the attempt's hold from the first part's to the last release.
      const [attempt] = view.attempts;
      expect(attempt!.nodes!.map((p) => [p.nodeId, p.outcome, p.releasedAt !== undefined])).toEqual([
        [r0, 'completed', true],
        [r1, 'completed', true],
      ]);
      expect(attempt!.outcome).toBe('completed');
      // Billed per part: one line per node, each from its own hold to its own end (its agent's clock).
      const usage = await until('a usage line for each part', async () => {
        const u = (await jobEvents(network(), [jobId], ['UsageRecorded'])).map((e) => e.data as UsageRecorded);
        return u.length >= 2 ? u : undefined;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      expect(usage).toHaveLength(2);
      for (const line of usage) {
        const h = held.find((x) => x.nodeId === line.nodeId)!;
        const f = finished.find((x) => x.nodeId === line.nodeId)!;
        expect({ node: line.nodeId, gpus: line.gpus, heldFrom: line.heldFrom, billableMs: line.billableMs }).toEqual({
          node: h.nodeId,
          gpus: 2,
          heldFrom: h.heldAt,
          billableMs: Date.parse(f.finishedAt) - Date.parse(h.heldAt),
        });
      }
      // The checkpoint is rank 0's alone (saved at its exit), as are the outputs.
      const checkpoints = (await jobEvents(network(), [jobId], ['JobCheckpointed'])).map((e) => e.data as { nodeId: string });
      expect(checkpoints.map((c) => c.nodeId)).toEqual([r0]);
      // Outputs come from rank 0 only.
      expect(view.outputs?.files.map((f) => f.path)).toEqual(['result.txt']);
      const lines: string[] = [];
      for await (const l of client.logs(jobId)) lines.push(l.line);
      const text = lines.join('\n');
      expect(text).toContain(`part rank=0 of 2 nodes=${r0},${r1} gpus=0,1`);
      expect(text).toContain(`part rank=1 of 2 nodes=${r0},${r1} gpus=0,1`);
    }),
    90_000,
  );

  it(
    'stops the other part when one fails, and the job fails with the failing part\'s exit code',
    e2e(async () => {
      const client = network().client();
      // Rank 0 would sleep ten minutes: within the settle's deadline only its peer's end can stop it.
      const script = 'if [ "$GPUNET_NODE_RANK" = 1 ]; then echo "rank 1 gives up"; exit 3; fi; sleep 600';
      const { jobId } = await client.submit(scriptJob(script, { gpus: 4 }));
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });
      const view = views.get(jobId)!;
      expect({ state: view.state, exitCode: view.exitCode }).toEqual({ state: 'failed', exitCode: 3 });
      // Rank 0 did not sleep its ten minutes: it was stopped for its peer (below).
      const [r0, r1] = ranks(events.find((e) => e.type === 'JobPlaced')!.data as JobPlaced);
      const finished = events.filter((e) => e.type === 'JobFinished').map((e) => e.data as JobFinished);
      expect(finished.find((f) => f.nodeId === r1)).toMatchObject({ outcome: 'failed', exitCode: 3 });
      expect(finished.find((f) => f.nodeId === r0)).toMatchObject({ outcome: 'cancelled', peerEnded: r1 });
      expect((await jobEvents(network(), [jobId], ['ComputeReleased'])).map((e) => (e.data as { nodeId: string }).nodeId).sort()).toEqual(['node-1', 'node-2']);
    }),
    90_000,
  );
});
