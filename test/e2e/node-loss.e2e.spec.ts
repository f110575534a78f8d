/**
 * Node loss with real processes: the agent running a job is killed with SIGKILL and never comes
 * back. Placement, hearing no heartbeat for the node's lease, declares it lost, requeues the job
 * onto the other agent, where it completes; the lost attempt costs nothing.
 */
import type { JobPlaced, JobRequeued, NodeLost } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from '../../libs/cli/src/local/processes.js';
import { usageByAttempt } from '../support/billing.js';
import { jobEvents, scriptJob } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

/** Agents beat every 500 ms: the lease is placement's default, max(3 × 500 ms, 5 s) = 5 s. */
const HEARTBEAT_MS = 500;
const LEASE_MS = 5_000;

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 1, env: { GPUNET_HEARTBEAT_MS: String(HEARTBEAT_MS), GPUNET_NODE_CHECK_MS: '200' } });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('node loss across real processes', () => {
  it(
    'declares a SIGKILLed agent lost after its lease, requeues its job onto the other agent, and bills the lost attempt nothing',
    e2e(async () => {
      const client = network().client();
      // The job user can write only its own directories: the pid goes into its work dir.
      const script = 'case "$GPUNET_ATTEMPT_ID" in *-a1) echo $$ > "$GPUNET_WORK_DIR/node-loss.pid"; sleep 60;; *) echo "attempt $GPUNET_ATTEMPT_ID finishes";; esac';
      const { jobId } = await client.submit(scriptJob(script));
      const markerOf = (h: { data: unknown }) => {
        const { nodeId, attemptId } = h.data as { nodeId: string; attemptId: string };
        return join(network().dataDir, 'nodes', nodeId, 'runs', jobId, attemptId, 'work', 'node-loss.pid');
      };
      let orphan: number | undefined;
      try {
        const held = await until('the first attempt to hold compute and run', async () => {
          const events = await jobEvents(network(), [jobId]);
          const h = events.find((e) => e.type === 'ComputeHeld');
          return h && existsSync(markerOf(h)) && (await readFile(markerOf(h), 'utf8')).trim() !== '' ? h : undefined;
        }, { timeoutMs: 20_000, intervalMs: 20 });
        const { nodeId, attemptId } = held.data as { nodeId: string; attemptId: string };
        orphan = Number((await readFile(markerOf(held), 'utf8')).trim());
        await network().kill(nodeId, 'SIGKILL');
        const killedAt = Date.now();

        // Not `settle`: the lost attempt is never released nor billed by its dead agent, by design.
        const view = await until('the job to complete on the other agent', async () => {
          const v = await client.getJob(jobId);
          return v.state === 'completed' ? v : undefined;
        }, { timeoutMs: 60_000, intervalMs: 100 });
        expect(view.attempts).toHaveLength(2);
        const events = await until('the second attempt to be billed', async () => {
          const all = await jobEvents(network(), [jobId]);
          return all.some((e) => e.type === 'UsageRecorded') ? all : undefined;
        }, { timeoutMs: 30_000, intervalMs: 100 });

        // Exactly one NodeLost, not before the lease ran out, naming the running attempt.
        const losses = (await network().events({ types: ['NodeLost'] })).map((e) => ({ streamId: e.streamId, producer: e.metadata.producer, data: e.data as NodeLost }));
        expect(losses).toEqual([{ streamId: `placement-node-${nodeId}`, producer: 'placement', data: expect.objectContaining({ nodeId, reason: 'heartbeat_timeout', affectedAttempts: [{ jobId, attemptId }] }) }]);
        // Not before the lease ran out since the last heartbeat, which came before the kill. (Not
        // "one interval before the kill": a loaded machine delays heartbeats, and that is the case
        // the lease is for.)
        const { lastSeenAt, detectedAt } = losses[0]!.data;
        expect(Date.parse(lastSeenAt)).toBeLessThanOrEqual(killedAt);
        expect(Date.parse(detectedAt)).toBeGreaterThanOrEqual(Date.parse(lastSeenAt) + LEASE_MS);

        // Requeued for node_lost and run again on the other agent.
        const requeued = events.filter((e) => e.type === 'JobRequeued').map((e) => e.data as JobRequeued);
        expect(requeued).toEqual([expect.objectContaining({ previousAttemptId: attemptId, reason: 'node_lost', nextAttempt: 2 })]);
        const placed = events.filter((e) => e.type === 'JobPlaced').map((e) => e.data as JobPlaced);
        expect(placed.map((p) => p.attempt)).toEqual([1, 2]);
        expect(placed[1]!.nodeId).not.toBe(nodeId);
        // The dead agent never reported the attempt: nothing finished or released it but placement.
        expect(events.some((e) => e.type === 'JobFinished' && (e.data as { attemptId: string }).attemptId === attemptId)).toBe(false);

        // The lost attempt has no charge; the one that ran is billed.
        const usage = usageByAttempt(events);
        expect((usage.get(attemptId) ?? []).map((l) => l.amountMicros)).toEqual((usage.get(attemptId) ?? []).map(() => 0));
        const charges = await client.charges({ jobId });
        expect(charges.lines.map((l) => l.attemptId)).toEqual([placed[1]!.attemptId]);
        expect(charges.lines[0]!.amountMicros).toBeGreaterThan(0);
      } finally {
        if (orphan !== undefined && isAlive(orphan)) process.kill(orphan, 'SIGKILL');
      }
    }),
    60_000,
  );
});
