/**
 * Crashes with real processes: the ledger and an execution agent killed with SIGKILL in the middle
 * of work and started again. Nothing may be lost, nothing billed twice, no job silently dropped.
 */
import type { JobFinished, JobPlaced, JobRequeued } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from '../../libs/cli/src/local/processes.js';
import { recomputeUsage, totalsByCurrency, usageByAttempt } from '../support/billing.js';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 4, env: { GPUNET_KILL_GRACE_MS: '1000' } });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

/** Waits until the durable consumer has handled (acknowledged) every event published so far. */
async function caughtUp(durable: string, timeoutMs: number): Promise<void> {
  let last = '';
  await until(`${durable} to acknowledge every event`, async () => {
    const b = await network().consumerBacklog(durable);
    last = `pending ${b.pending}, in hand ${b.ackPending}`;
    return b.pending === 0 && b.ackPending === 0;
  }, { timeoutMs, describe: () => last });
}

describe('crash recovery across real processes', () => {
  it(
    'loses nothing and bills nothing twice when the ledger is killed with SIGKILL while jobs finish',
    e2e(async () => {
      const client = network().client();
      const n = 24;
      // Staggered short sleeps: jobs finish over a few seconds, in several waves over 8 GPUs.
      const specs = Array.from({ length: n }, (_, i) => scriptJob(`echo "job ${i}"; sleep 0.${(i * 3) % 10}`, { name: `ledger-crash-${i}` }));
      const jobIds = (await Promise.all(specs.map((s) => client.submit(s)))).map((r) => r.jobId);

      // Kill it in the middle of billing: some lines written, most jobs not yet finished.
      await until('the ledger to bill the first jobs', async () => (await jobEvents(network(), jobIds, ['UsageRecorded'])).length >= 3, { timeoutMs: 30_000, intervalMs: 20 });
      await network().kill('ledger', 'SIGKILL');
      const finishedAtKill = (await jobEvents(network(), jobIds, ['JobFinished'])).length;
      expect(finishedAtKill).toBeLessThan(n); // the kill really came mid-run

      // The jobs go on without it: all of them finish and release their GPUs, unbilled.
      await until('every job to be released while the ledger is down', async () => (await jobEvents(network(), jobIds, ['ComputeReleased'])).length === n, { timeoutMs: 30_000 });
      const billedWhileDown = (await jobEvents(network(), jobIds, ['UsageRecorded'])).length;
      expect(billedWhileDown).toBeLessThan(n);

      await network().restart('ledger');
      const { views } = await settle(network(), jobIds, { timeoutMs: 60_000 });
      expect([...views.values()].map((v) => v.state)).toEqual(Array(n).fill('completed'));
      // Everything in hand when it died has been redelivered and handled; nothing is left to bill twice later.
      await caughtUp('ledger', 60_000);

      const after = await jobEvents(network(), jobIds);
      const usage = usageByAttempt(after);
      const attempts = after.filter((e) => e.type === 'ComputeHeld').map((e) => (e.data as { attemptId: string }).attemptId);
      expect(attempts).toHaveLength(n);
      expect(attempts.map((a) => usage.get(a)?.length ?? 0)).toEqual(Array(n).fill(1));
      expect(after.filter((e) => e.type === 'UsageRecorded')).toHaveLength(n);

      const expected = recomputeUsage(await network().events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished'] }));
      for (const a of attempts) expect({ a, amount: usage.get(a)![0]!.amountMicros }).toEqual({ a, amount: expected.get(a)!.amountMicros });
      const charges = await Promise.all(jobIds.map((jobId) => client.charges({ jobId })));
      expect(totalsByCurrency(charges.flatMap((c) => c.lines))).toEqual(totalsByCurrency(attempts.map((a) => expected.get(a)!)));
    }),
    150_000,
  );

  it(
    'reports an attempt lost with a SIGKILLed agent (node_lost, not billed), kills its leftover process, and runs the job again',
    e2e(async () => {
      const client = network().client();
      // The first attempt records its shell's pid in its own work dir (a job user can write nowhere
      // else) and sleeps; a later attempt finishes at once.
      const script = 'case "$GPUNET_ATTEMPT_ID" in *-a1) echo $$ > "$GPUNET_WORK_DIR/agent-crash.pid"; echo "first attempt sleeps"; sleep 60;; *) echo "attempt $GPUNET_ATTEMPT_ID finishes";; esac';
      const { jobId } = await client.submit(scriptJob(script));
      const markerOf = (h: { data: unknown }) => {
        const { nodeId, attemptId } = h.data as { nodeId: string; attemptId: string };
        return join(network().dataDir, 'nodes', nodeId, 'runs', jobId, attemptId, 'work', 'agent-crash.pid');
      };

      // Between ComputeHeld and JobFinished: held, the process runs (it wrote its pid), not finished.
      const held = await until('the first attempt to hold compute and run', async () => {
        const events = await jobEvents(network(), [jobId]);
        const h = events.find((e) => e.type === 'ComputeHeld');
        return h && existsSync(markerOf(h)) && (await readFile(markerOf(h), 'utf8')).trim() !== '' && !events.some((e) => e.type === 'JobFinished') ? h : undefined;
      }, { timeoutMs: 20_000, intervalMs: 20 });
      const marker = markerOf(held);
      const { nodeId, attemptId } = held.data as { nodeId: string; attemptId: string };
      const jobPid = Number((await readFile(marker, 'utf8')).trim());
      await network().kill(nodeId, 'SIGKILL');
      expect(isAlive(jobPid)).toBe(true); // the job's process outlived its agent: recovery must deal with it

      await network().restart(nodeId);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });

      // The lost attempt is reported, not billed, and its leftover process is gone.
      const finished = events.filter((e) => e.type === 'JobFinished').map((e) => e.data as JobFinished);
      const lost = finished.find((f) => f.attemptId === attemptId);
      expect(lost?.outcome).toBe('node_lost');
      expect(events.some((e) => e.type === 'ComputeReleased' && (e.data as { attemptId: string }).attemptId === attemptId)).toBe(true);
      expect(isAlive(jobPid)).toBe(false);
      const usage = usageByAttempt(events);
      expect(usage.get(attemptId)).toHaveLength(1);
      expect(usage.get(attemptId)![0]).toMatchObject({ outcome: 'node_lost', amountMicros: 0, billableMs: 0, waivedReason: 'platform_fault' });

      // Placement requeued it (it promises a new attempt for node_lost), and the new attempt completed and was billed once.
      const requeued = events.filter((e) => e.type === 'JobRequeued').map((e) => e.data as JobRequeued);
      expect(requeued).toEqual([expect.objectContaining({ previousAttemptId: attemptId, nextAttempt: 2 })]);
      const placed = events.filter((e) => e.type === 'JobPlaced').map((e) => e.data as JobPlaced);
      expect(placed.map((p) => p.attempt)).toEqual([1, 2]);
      const second = placed[1]!.attemptId;
      expect(finished.find((f) => f.attemptId === second)?.outcome).toBe('completed');
      expect(usage.get(second)).toHaveLength(1);
      expect(usage.get(second)![0]!.amountMicros).toBeGreaterThan(0);
      expect(views.get(jobId)!.state).toBe('completed');

      const expected = recomputeUsage(await network().events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished'] }));
      expect(usage.get(second)![0]!.amountMicros).toBe(expected.get(second)!.amountMicros);
      const charges = await client.charges({ jobId });
      // Lines come in order of finishedAt: the lost attempt's is when its loss was reported, which
      // on a busy machine can come after the second attempt's end; compare them by attempt.
      expect(charges.lines.map((l) => [l.attemptId, l.amountMicros]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
        [attemptId, 0],
        [second, expected.get(second)!.amountMicros],
      ]);
    }),
    120_000,
  );

  it(
    'dead-letters nothing and leaves every consumer caught up',
    e2e(async () => {
      for (const durable of ['storage', 'storage-released', 'placement', 'ledger', ...network().nodeIds.map((n) => `execution-${n}`)]) await caughtUp(durable, 45_000);
      expect(await network().deadLetters()).toBe(0);
    }),
    120_000,
  );
});
