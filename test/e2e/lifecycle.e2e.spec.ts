/**
 * The job lifecycle with every process real: `gpunet up` (nats-server, the five services, two
 * agents of four simulated GPUs each) on a temporary directory, jobs submitted over HTTP with the
 * SDK, and the event store read directly to check what the services recorded and billed.
 */
import type { GetQueueReply, JobWithdrawn, OutputsStored, UsageRecorded } from '#contracts';
import { querySubject } from '#contracts';
import { requestQuery } from '#messaging';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstreamManager } from '@nats-io/jetstream';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { recomputeUsage, totalsByCurrency, usageByAttempt } from '../support/billing.js';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

/** Kill grace of the agents: short, so a job that ignores SIGTERM is killed quickly. */
const KILL_GRACE_MS = 1_000;

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 4, env: { GPUNET_KILL_GRACE_MS: String(KILL_GRACE_MS) } });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('the job lifecycle across real processes', () => {
  it(
    'runs 20 concurrent jobs to completion and bills exactly what the event store recomputes to',
    e2e(async () => {
      const client = network().client();
      const specs = Array.from({ length: 20 }, (_, i) => scriptJob(`echo "job ${i} says hello"; echo "job ${i} note" >&2; echo ${i} > "$GPUNET_OUTPUT_DIR/n.txt"`, { name: `many-${i}` }));
      const submitted = await Promise.all(specs.map((s) => client.submit(s)));
      const jobIds = submitted.map((r) => r.jobId);
      expect(new Set(jobIds).size).toBe(20);

      const { views, events } = await settle(network(), jobIds);
      expect([...views.values()].map((v) => v.state)).toEqual(Array(20).fill('completed'));

      // One usage line per attempt, each equal to the recomputation from the store.
      const all = await network().events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished', 'UsageRecorded'] });
      const expected = recomputeUsage(all);
      const usage = usageByAttempt(events);
      const attempts = events.filter((e) => e.type === 'ComputeHeld').map((e) => (e.data as { attemptId: string }).attemptId);
      expect(attempts).toHaveLength(20);
      for (const attemptId of attempts) {
        const lines = usage.get(attemptId) ?? [];
        expect(lines).toHaveLength(1);
        const want = expected.get(attemptId)!;
        expect({ attemptId, billableMs: lines[0]!.billableMs, amountMicros: lines[0]!.amountMicros, gpus: lines[0]!.gpus }).toEqual({
          attemptId,
          billableMs: want.billableMs,
          amountMicros: want.amountMicros,
          gpus: 1,
        });
      }

      // What the ledger answers over HTTP (GET /v1/charges per job) adds up to the recomputation.
      const charges = await Promise.all(jobIds.map((jobId) => client.charges({ jobId })));
      const answered = charges.flatMap((c) => c.lines);
      expect(answered).toHaveLength(20);
      const recomputed = totalsByCurrency(attempts.map((a) => expected.get(a)!));
      expect(totalsByCurrency(answered)).toEqual(recomputed);
      expect(Object.values(recomputed)[0]).toBeGreaterThan(0);

      // The bus keeps no history (decision 0038): once storage, placement and the ledger have
      // acknowledged these jobs' events, the events stream holds none of them, nor their subjects.
      const jsm = await jetstreamManager(await network().nats());
      const held = async () => Object.keys((await jsm.streams.info('GPUNET_EVENTS', { subjects_filter: '>' })).state.subjects ?? {}).filter((s) => jobIds.some((j) => s.endsWith(`.${j}`)));
      await until('the events stream to let go of the acknowledged events', async () => ((await held()).length === 0 ? true : undefined), { timeoutMs: 60_000, describe: () => 'subjects still held' });
      expect(await held()).toEqual([]);
    }),
    150_000,
  );

  it(
    'brings outputs back: the downloaded bytes hash to what OutputsStored recorded and the job computed',
    e2e(async () => {
      const client = network().client();
      const script = [
        'mkdir -p "$GPUNET_OUTPUT_DIR/model"',
        'head -c 300000 /dev/urandom > "$GPUNET_OUTPUT_DIR/model/weights.bin"',
        'echo \'{"loss": 0.25}\' > "$GPUNET_OUTPUT_DIR/metrics.json"',
        'echo "digest $(sha256sum "$GPUNET_OUTPUT_DIR/model/weights.bin" | cut -d" " -f1)"',
      ].join('\n');
      const { jobId } = await client.submit(scriptJob(script, { globs: ['model/**', 'metrics.json'] }));
      const { views, events } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');

      const stored = events.filter((e) => e.type === 'OutputsStored').map((e) => e.data as OutputsStored);
      expect(stored).toHaveLength(1);
      const files = new Map(stored[0]!.files.map((f) => [f.path, f]));
      expect([...files.keys()].sort()).toEqual(['metrics.json', 'model/weights.bin']);

      const dest = join(network().dataDir, 'downloads', jobId);
      const downloaded = await client.downloadOutputs(jobId, dest);
      expect(downloaded.map((d) => d.path).sort()).toEqual(['metrics.json', 'model/weights.bin']);
      for (const d of downloaded) {
        const bytes = await readFile(d.dest);
        expect({ path: d.path, sha256: sha256(bytes), size: bytes.length }).toEqual({ path: d.path, sha256: files.get(d.path)!.sha256, size: files.get(d.path)!.size });
      }
      expect(JSON.parse(await readFile(join(dest, 'metrics.json'), 'utf8'))).toEqual({ loss: 0.25 });

      // The job's own digest of its file, from its logs, is the one recorded.
      const lines: string[] = [];
      for await (const l of client.logs(jobId)) lines.push(l.line);
      const own = lines.map((l) => /^digest ([0-9a-f]{64})$/.exec(l)?.[1]).find(Boolean);
      expect(own).toBe(files.get('model/weights.bin')!.sha256);
    }),
    60_000,
  );

  it(
    'ends a job that exceeds its time limit as timeout and bills it only up to its kill',
    e2e(async () => {
      const client = network().client();
      const limitMs = 2_000;
      // Ignores SIGTERM, so only the SIGKILL after the grace ends it; it would sleep ten minutes otherwise.
      const { jobId } = await client.submit(scriptJob("trap '' TERM; echo started; sleep 600; echo never", { timeLimit: `${limitMs}ms` }));
      const { views, events } = await settle(network(), [jobId], { timeoutMs: 60_000 });
      expect(views.get(jobId)!.state).toBe('timeout');

      const usage = events.filter((e) => e.type === 'UsageRecorded').map((e) => e.data as UsageRecorded);
      expect(usage).toHaveLength(1);
      expect(usage[0]!.outcome).toBe('timeout');
      // Held → killed: at least the limit plus the grace, and nowhere near the ten minutes it asked
      // to sleep (a loose ceiling: how long the kill takes to be noticed is the machine's load).
      expect(usage[0]!.billableMs).toBeGreaterThanOrEqual(limitMs + KILL_GRACE_MS);
      expect(usage[0]!.billableMs).toBeLessThan(60_000);
      const want = recomputeUsage(await network().events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished'] })).get(usage[0]!.attemptId)!;
      expect({ billableMs: usage[0]!.billableMs, amountMicros: usage[0]!.amountMicros }).toEqual({ billableMs: want.billableMs, amountMicros: want.amountMicros });
    }),
    60_000,
  );

  it(
    'bills 0 for a job cancelled while it waits for GPUs',
    e2e(async () => {
      const client = network().client();
      const nc = await network().nats();
      // Two jobs take all four GPUs of both nodes, so the next job has to wait.
      const blockers = await Promise.all([0, 1].map(() => client.submit(scriptJob('echo blocking; sleep 60', { gpus: 4 }))));
      const blockerIds = blockers.map((b) => b.jobId);
      await until('both blockers to hold their GPUs', async () => (await jobEvents(network(), blockerIds, ['ComputeHeld'])).length === 2, { timeoutMs: 20_000 });

      const { jobId } = await client.submit(scriptJob('echo "should never run"'));
      const queued = await until('placement to queue the job for lack of GPUs', async () => {
        const queue = await requestQuery<GetQueueReply>(nc, querySubject('placement', 'GetQueue'), { jobId });
        return queue.pending.find((p) => p.jobId === jobId && p.reason === 'Resources');
      }, { timeoutMs: 20_000 });
      expect(queued.position).toBeGreaterThanOrEqual(1);

      const reply = await client.cancel(jobId, { reason: 'e2e: cancelled while queued' });
      expect(reply.cancelRequested).toBe(true);
      const { views } = await settle(network(), [jobId], { timeoutMs: 20_000 });
      expect(views.get(jobId)!.state).toBe('cancelled');

      const events = await jobEvents(network(), [jobId]);
      const types = events.map((e) => e.type);
      expect(types).toContain('JobWithdrawn');
      expect((events.find((e) => e.type === 'JobWithdrawn')!.data as JobWithdrawn).outcome).toBe('cancelled');
      for (const never of ['JobPlaced', 'ComputeHeld', 'JobFinished', 'UsageRecorded']) expect(types).not.toContain(never);
      const charges = await client.charges({ jobId });
      expect(charges.lines).toEqual([]);
      expect(charges.totals.reduce((sum, t) => sum + t.amountMicros, 0)).toBe(0);

      // The blockers, cancelled while running, are stopped and billed for what they ran.
      await Promise.all(blockerIds.map((id) => client.cancel(id)));
      const stopped = await settle(network(), blockerIds, { timeoutMs: 30_000 });
      expect(blockerIds.map((id) => stopped.views.get(id)!.state)).toEqual(['cancelled', 'cancelled']);
      const expected = recomputeUsage(await network().events({ types: ['PriceListPublished', 'ComputeHeld', 'JobFinished'] }));
      for (const [attemptId, lines] of usageByAttempt(stopped.events)) {
        expect(lines).toHaveLength(1);
        expect(lines[0]!.amountMicros).toBe(expected.get(attemptId)!.amountMicros);
        expect(lines[0]!.amountMicros).toBeGreaterThan(0);
      }
    }),
    90_000,
  );

  it(
    'dead-letters nothing and leaves every consumer caught up',
    e2e(async () => {
      for (const durable of ['storage', 'storage-released', 'placement', 'ledger', ...network().nodeIds.map((n) => `execution-${n}`)]) {
        await until(`${durable} to acknowledge everything`, async () => {
          const b = await network().consumerBacklog(durable);
          return b.pending === 0 && b.ackPending === 0;
        }, { timeoutMs: 15_000 });
      }
      expect(await network().deadLetters()).toBe(0);
    }),
    60_000,
  );
});
