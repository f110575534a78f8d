/**
 * Unattended runs through the whole network: the warning before the time limit, checkpoints
 * saved at exit and at an interval and restored into the next attempt (after a retry by exit
 * code, and after the node was lost), and logs that stream while the job runs (`gpunet logs -f`),
 * are capped with a visible marker and are kept with the outputs.
 */
import { BlobStore } from '#blobs';
import type { JobCheckpointed, JobFinished, JobPlaced, JobRequeued, JobStarted, OutputsStored } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

/** Job output kept per attempt in this network: small, so the cap is reached quickly. */
const MAX_LOG_BYTES = 8_192;

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const data = <T>(events: { type: string; data: unknown }[], type: string) => events.filter((e) => e.type === type).map((e) => e.data as T);

async function logLines(jobId: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const l of network().client().logs(jobId)) lines.push(l.line);
  return lines;
}

beforeAll(async () => {
  net = await TestNetwork.start({
    agents: 2,
    gpus: 1,
    env: { GPUNET_KILL_GRACE_MS: '1000', GPUNET_MAX_LOG_BYTES: String(MAX_LOG_BYTES), GPUNET_HEARTBEAT_MS: '500' },
  });
  // Job users need to pass through the (mkdtemp, 0700) data directory: open it and restart the agents.
  await chmod(net.dataDir, 0o711);
  for (const node of net.nodeIds) {
    await net.kill(node, 'SIGTERM');
    await net.restart(node);
  }
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

/** Counts steps in its checkpoint directory; fails with 75 (retry) until it reached step 2. */
const RESUMING_JOB = [
  'step=0',
  '[ -f "$GPUNET_CHECKPOINT_DIR/step" ] && step=$(cat "$GPUNET_CHECKPOINT_DIR/step")',
  'step=$((step + 1))',
  'echo "$step" > "$GPUNET_CHECKPOINT_DIR/step"',
  'echo "at step $step"',
  '[ "$step" -ge 2 ] || exit 75',
].join('\n');

describe('unattended runs', () => {
  it(
    'retries a failure by exit code; the next attempt starts from the checkpoint saved at exit',
    e2e(async () => {
      const { jobId } = await network().client().submit({ ...scriptJob(RESUMING_JOB, { name: 'retry' }), retry: { exitCodes: [75], maxAttempts: 3 } } as never);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 90_000 });
      expect(views.get(jobId)!.state).toBe('completed');

      const finished = data<JobFinished>(events, 'JobFinished');
      expect(finished.map((f) => [f.outcome, f.exitCode])).toEqual([
        ['failed', 75],
        ['completed', 0],
      ]);
      const requeued = data<JobRequeued>(events, 'JobRequeued');
      expect(requeued).toEqual([expect.objectContaining({ reason: 'retry', nextAttempt: 2, previousAttemptId: finished[0]!.attemptId })]);
      const checkpoints = data<JobCheckpointed>(events, 'JobCheckpointed');
      expect(checkpoints.map((c) => c.sequence)).toEqual([1, 2]);
      // The exit checkpoint is recorded before the attempt's end, so the requeued attempt finds it.
      const order = events.filter((e) => (e.type === 'JobCheckpointed' || e.type === 'JobFinished') && (e.data as { attemptId: string }).attemptId === finished[0]!.attemptId);
      expect(order.map((e) => e.type)).toEqual(['JobCheckpointed', 'JobFinished']);
      const started = data<JobStarted>(events, 'JobStarted');
      expect(started[0]!.resumedFromCheckpoint).toBeUndefined();
      expect(started[1]).toEqual(expect.objectContaining({ resumedFromCheckpoint: 1, work: expect.objectContaining({ kind: 'script' }) }));

      const lines = await logLines(jobId);
      expect(lines).toContain('at step 1');
      expect(lines).toContain('at step 2');
      expect(lines.some((l) => l.startsWith('[gpunet] resumed from checkpoint 1'))).toBe(true);
    }),
    120_000,
  );

  it(
    'warns with the asked signal before the time limit; the job checkpoints and exits in time',
    e2e(async () => {
      const script = [
        'trap \'echo "warned"; echo saved > "$GPUNET_CHECKPOINT_DIR/state"; exit 0\' USR1',
        'echo started',
        'while true; do sleep 0.2; done',
      ].join('\n');
      const spec = { ...scriptJob(script, { name: 'warned' }), request: { gpus: 1, timeLimit: '8s', warning: { signal: 'SIGUSR1', before: '5s' } } };
      const { jobId } = await network().client().submit(spec as never);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });
      expect(views.get(jobId)!.state).toBe('completed');
      const lines = await logLines(jobId);
      expect(lines).toContain('[gpunet] SIGUSR1 sent: time limit in 5000 ms');
      expect(lines).toContain('warned');
      expect(data<JobCheckpointed>(events, 'JobCheckpointed')).toHaveLength(1);
      const [started] = data<JobStarted>(events, 'JobStarted');
      const [finished] = data<JobFinished>(events, 'JobFinished');
      const ranMs = Date.parse(finished!.finishedAt) - Date.parse(started!.startedAt);
      expect(ranMs).toBeGreaterThanOrEqual(2_500);
      // It ended on the warning, before its limit: completed, and the limit never reached (not a
      // wall-clock ceiling, which a loaded machine's late stamps could pass).
      expect(finished!.outcome).toBe('completed');
      expect(lines.some((l) => l.includes('time limit of'))).toBe(false);
    }),
    90_000,
  );

  it(
    'a node lost mid-run: the job is requeued elsewhere and resumes from the last interval checkpoint',
    e2e(async () => {
      const script = [
        'if [ -f "$GPUNET_CHECKPOINT_DIR/n" ]; then echo "resumed at $(cat "$GPUNET_CHECKPOINT_DIR/n")"; exit 0; fi',
        'n=0',
        'while true; do n=$((n + 1)); echo "$n" > "$GPUNET_CHECKPOINT_DIR/n"; sleep 0.2; done',
      ].join('\n');
      const spec = { ...scriptJob(script, { name: 'lost', timeLimit: '2m' }), checkpoint: { interval: '10s' } };
      const { jobId } = await network().client().submit(spec as never);
      let first: JobPlaced | undefined;
      await until(
        'an interval checkpoint of the first attempt',
        async () => {
          const events = await jobEvents(network(), [jobId], ['JobPlaced', 'JobCheckpointed']);
          first = data<JobPlaced>(events, 'JobPlaced')[0];
          return data<JobCheckpointed>(events, 'JobCheckpointed').length > 0;
        },
        { timeoutMs: 40_000, intervalMs: 250 },
      );
      const lostNode = first!.nodeId;
      await network().kill(lostNode, 'SIGKILL');
      // Placement declares the silent node lost and requeues the job on the other node.
      await until('the job to complete on the other node', async () => (await network().client().getJob(jobId)).state === 'completed', {
        timeoutMs: 60_000,
        intervalMs: 250,
      });
      // The agent comes back: its recovery kills the process group it left behind and releases the lost attempt.
      await network().restart(lostNode);
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });

      expect(views.get(jobId)!.state).toBe('completed');
      const finished = data<JobFinished>(events, 'JobFinished');
      // The lost attempt's own end is recorded by its agent's recovery, after the job completed elsewhere.
      expect(Object.fromEntries(finished.map((f) => [f.attemptId, f.outcome]))).toEqual({ [first!.attemptId]: 'node_lost', [`${jobId}-a2`]: 'completed' });
      const placed = data<JobPlaced>(events, 'JobPlaced');
      expect(placed[1]!.nodeId).not.toBe(lostNode);
      expect(data<JobRequeued>(events, 'JobRequeued')[0]!.reason).toBe('node_lost');
      const started = data<JobStarted>(events, 'JobStarted');
      expect(started[1]!.resumedFromCheckpoint).toBe(1);
      const resumed = (await logLines(jobId)).find((l) => l.startsWith('resumed at '));
      expect(Number(resumed?.slice('resumed at '.length))).toBeGreaterThan(0);
    }),
    180_000,
  );

  it(
    'streams logs while the job runs (`gpunet logs -f`), caps them with a visible marker, and keeps them with the outputs',
    e2e(async () => {
      const script = [
        // It goes on only once the test has seen its first line through `logs -f`: streamed, not
        // replayed at the end, without comparing clocks on a loaded machine.
        'echo "tick 1"',
        'until [ -e seen-tick-1 ]; do sleep 0.05; done',
        'for i in 2 3 4 5; do echo "tick $i"; done',
        'i=0; while [ $i -lt 2000 ]; do echo "bulk line $i of a chatty job"; i=$((i + 1)); done',
        'echo "the end"',
      ].join('\n');
      const { jobId } = await network().client().submit(scriptJob(script, { name: 'chatty' }));

      // `gpunet logs -f`: lines arrive while the job still runs, and the command ends with the job.
      // Job stdout goes to the command's stdout; job stderr and agent notices to its stderr.
      const seen: { line: string; at: number }[] = [];
      let released: Promise<void> | undefined;
      const releaseJob = async () => {
        const held = await until('the attempt to hold compute', async () => (await jobEvents(network(), [jobId])).find((e) => e.type === 'ComputeHeld'), { timeoutMs: 20_000 });
        const { nodeId, attemptId } = held.data as { nodeId: string; attemptId: string };
        await writeFile(join(network().dataDir, 'nodes', nodeId, 'runs', jobId, attemptId, 'work', 'seen-tick-1'), '');
      };
      const lineStream = () => {
        const s = new PassThrough();
        let buffered = '';
        s.on('data', (chunk: Buffer) => {
          buffered += chunk.toString('utf8');
          const parts = buffered.split('\n');
          buffered = parts.pop()!;
          for (const line of parts) {
            seen.push({ line, at: Date.now() });
            if (line.includes('tick 1') && !released) released = releaseJob();
          }
        });
        return s;
      };
      const code = await runCli(['logs', '-f', jobId], { stdout: lineStream(), stderr: lineStream(), env: { GPUNET_URL: network().url, GPUNET_API_KEY: network().apiKey }, cwd: network().dataDir });
      expect(code).toBe(0);
      await released;
      const { events } = await settle(network(), [jobId]);
      expect(seen.find((s) => s.line.includes('tick 1'))).toBeDefined();
      expect(seen.find((s) => s.line.includes('tick 5'))).toBeDefined();
      expect(seen.some((s) => s.line.includes('[gpunet] log truncated'))).toBe(true);
      expect(seen.some((s) => s.line.includes('the end'))).toBe(false); // beyond the cap

      // Kept with the outputs: stdout.log and stderr.log, by content address in the team's blobs.
      const [stored] = data<OutputsStored>(events, 'OutputsStored');
      const blobs = await BlobStore.open(await network().nats());
      const read = async (stream: 'stdout' | 'stderr') => {
        const ref = stored!.logs.find((l) => l.stream === stream)!;
        return Buffer.from(await blobs.readBytes(network().team, ref.sha256, { size: ref.size })).toString('utf8');
      };
      const stdout = await read('stdout');
      const stderr = await read('stderr');
      expect(stdout).toContain('tick 5');
      expect(stdout.length).toBeLessThanOrEqual(MAX_LOG_BYTES);
      expect(stderr).toContain('[gpunet] log truncated');
    }),
    90_000,
  );
});
