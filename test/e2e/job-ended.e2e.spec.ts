/**
 * One event says a job is over, on a real network (`gpunet up`, two agents of one GPU each):
 * every way a job can end — completed with outputs, failed, retried then failed, timed out,
 * cancelled while running, cancelled while queued, staging failed, rejected, its node lost and
 * cancelled — ends in exactly one `JobEnded` with the right outcome, attempts, billed total (equal
 * to the job's charges) and outputs (equal to the job's view).
 *
 * Then read-your-writes: as soon as a JobEnded reaches a caller — on the team feed (SSE), as the
 * team's NATS feed notification, or straight off the event bus (`gpunet.evt.JobEnded.…`, ahead of
 * any follower of the store) — the job's view over HTTP and over NATS (`GetJob`) is final, with its
 * outputs.
 */
import { HEADERS, Queries, teamFeedSubjects, type EventData, type FeedEntry, type JobView } from '#contracts';
import { natsAuthOptions } from '#identity';
import { requestQuery } from '#messaging';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { jobEvents, scriptJob } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

beforeAll(async () => {
  net = await TestNetwork.start({
    agents: 2,
    gpus: 1,
    env: { GPUNET_KILL_GRACE_MS: '500', GPUNET_HEARTBEAT_MS: '500', GPUNET_NODE_CHECK_MS: '200' },
  });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

type Ended = EventData<'JobEnded'>;

/** The job's JobEnded events, from the store. */
async function endsOf(jobId: string): Promise<Ended[]> {
  return (await network().events({ jobId, types: ['JobEnded'] })).map((e) => e.data as Ended);
}

/** Waits for the job's JobEnded. */
function ended(jobId: string, timeoutMs = 40_000): Promise<Ended> {
  return until(`the JobEnded of ${jobId}`, async () => (await endsOf(jobId))[0], { timeoutMs, intervalMs: 100 });
}

/** NATS `GetJob` as a producer sends it: the team's own connection, its API key in the header. */
async function natsGetJob(nc: NatsConnection, apiKey: string, jobId: string): Promise<JobView> {
  const h = natsHeaders();
  h.set(HEADERS.authorization, `Bearer ${apiKey}`);
  return requestQuery<JobView>(nc, Queries.GetJob.subject, { jobId }, { response: Queries.GetJob.replySchema }, { headers: h, timeoutMs: 10_000 });
}

describe('JobEnded across real processes', () => {
  it(
    'every path ends in exactly one JobEnded with its outcome, attempts, billed total (= charges) and outputs (= the view)',
    e2e(async () => {
      const client = network().client();
      const expected = new Map<string, { outcome: Ended['outcome']; attempts: number; exitCode?: number | null; outputs?: string[] }>();

      // Ran and ended on its own.
      const ok = await client.submit(scriptJob('echo done > "$GPUNET_OUTPUT_DIR/out.txt"; echo log', { globs: ['*.txt'] }));
      expected.set(ok.jobId, { outcome: 'completed', attempts: 1, exitCode: 0, outputs: ['out.txt'] });
      const failed = await client.submit(scriptJob('exit 3'));
      expected.set(failed.jobId, { outcome: 'failed', attempts: 1, exitCode: 3 });
      const retried = await client.submit({ ...scriptJob('echo "$GPUNET_ATTEMPT_ID" > "$GPUNET_OUTPUT_DIR/attempt.txt"; exit 3', { globs: ['*.txt'] }), retry: { exitCodes: [3], maxAttempts: 2 } } as never);
      expected.set(retried.jobId, { outcome: 'failed', attempts: 2, exitCode: 3, outputs: ['attempt.txt'] });
      const slow = await client.submit(scriptJob('sleep 30', { timeLimit: '1s' }));
      expected.set(slow.jobId, { outcome: 'timeout', attempts: 1 });
      // Never ran: more GPUs than the network has; inputs never uploaded.
      const huge = await client.submit(scriptJob('true', { gpus: 8 }));
      expected.set(huge.jobId, { outcome: 'rejected', attempts: 0 });
      const missing = await client.submit({ ...scriptJob('true'), data: { inputs: [{ name: 'data', path: 'data', sha256: 'e'.repeat(64), size: 5 }] } } as never);
      expected.set(missing.jobId, { outcome: 'failed', attempts: 0 });
      for (const id of [ok.jobId, failed.jobId, retried.jobId, slow.jobId]) await ended(id);

      // Cancelled while running (both GPUs held by these), and one cancelled while it waits behind them.
      const blockers = [await client.submit(scriptJob('echo blocking; sleep 60')), await client.submit(scriptJob('echo blocking; sleep 60'))];
      await until('both blockers to run', async () => (await Promise.all(blockers.map((b) => client.getJob(b.jobId)))).every((v) => v.state === 'running') || undefined, { timeoutMs: 30_000 });
      const queued = await client.submit(scriptJob('echo never'));
      await client.cancel(queued.jobId);
      expected.set(queued.jobId, { outcome: 'cancelled', attempts: 0 });
      for (const b of blockers) {
        await client.cancel(b.jobId);
        expected.set(b.jobId, { outcome: 'cancelled', attempts: 1 });
      }

      for (const [jobId, want] of expected) {
        const end = await ended(jobId);
        const view = await client.getJob(jobId);
        const charges = await client.charges({ jobId });
        expect({ jobId, outcome: end.outcome, attempts: end.attempts }).toEqual({ jobId, outcome: want.outcome, attempts: want.attempts });
        if (want.exitCode !== undefined) expect({ jobId, exitCode: end.exitCode }).toEqual({ jobId, exitCode: want.exitCode });
        // Billed = the job's charges, line for line summed; the ledger's answer and JobEnded agree.
        expect({ jobId, billed: end.billed }).toEqual({ jobId, billed: { billableMs: charges.billableMs, totals: charges.totals } });
        if (want.attempts === 0) expect(end.billed).toEqual({ billableMs: 0, totals: [] });
        // Outputs = the view's, which JobEnded made final.
        expect({ jobId, outputs: end.outputs?.files.map((f) => f.path) ?? [] }).toEqual({ jobId, outputs: want.outputs ?? [] });
        if (want.attempts === 0) expect(end.outputs).toBeNull(); // never ran: no OutputsStored at all
        expect({ jobId, files: end.outputs?.files ?? [] }).toEqual({ jobId, files: view.outputs?.files ?? [] });
        expect({ jobId, state: view.state, ended: view.ended?.billed }).toEqual({ jobId, state: want.outcome, ended: end.billed });
      }
      const timedOut = await endsOf(slow.jobId);
      expect(timedOut[0]!.billed.billableMs).toBeGreaterThanOrEqual(1_000); // held to its limit, billed

      // Exactly once: nothing the ledger still has in hand adds a second.
      await until('the ledger to handle everything', async () => {
        const b = await network().consumerBacklog('ledger');
        return b.pending === 0 && b.ackPending === 0 ? true : undefined;
      }, { timeoutMs: 20_000 });
      const all = await network().events({ types: ['JobEnded'] });
      for (const jobId of expected.keys()) expect({ jobId, count: all.filter((e) => e.metadata.jobId === jobId).length }).toEqual({ jobId, count: 1 });

      // Compliance sees it: the audit lists the JobEnded in the job's timeline and takes its outcome.
      const audit = await client.auditJob(retried.jobId);
      expect(audit).toMatchObject({ outcome: 'failed', ended: { eventId: all.find((e) => e.metadata.jobId === retried.jobId)!.eventId } });
      expect(audit.timeline.filter((t) => t.type === 'JobEnded')).toHaveLength(1);
      // And `gpunet replay job` re-derives it from the job's facts: the same as recorded.
      const out = new PassThrough();
      const chunks: Buffer[] = [];
      out.on('data', (c: Buffer) => chunks.push(c));
      const code = await runCli(['replay', 'job', retried.jobId, '--store', network().storeUrl, '--json'], { stdout: out, stderr: new PassThrough(), env: { ...process.env } as Record<string, string>, cwd: process.cwd() });
      const replay = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { identical: boolean; ended: { status: string; outcome: string } };
      expect({ code, identical: replay.identical, ended: replay.ended }).toMatchObject({ code: 0, identical: true, ended: { status: 'same', outcome: 'failed' } });
    }),
    240_000,
  );

  it(
    'as soon as a JobEnded arrives — team feed over SSE, NATS feed notification, or the event bus — HTTP and NATS GetJob give the final state and outputs',
    e2e(async () => {
      const client = network().client();
      const creds = network().teamCredentials(network().team);
      const teamNc = await connect({ ...(await natsAuthOptions(creds.natsKeyFile)), servers: network().natsUrl, name: 'e2e-team', noAsyncTraces: true });
      const busNc = await network().nats();
      const JOBS = 16;
      const checks: Promise<void>[] = [];
      const seen = { sse: 0, nats: 0, bus: 0 };
      const failures: string[] = [];
      const jobIds = new Set<string>();

      /** Right now, with nothing awaited between receiving the event and asking: both views must be final. */
      const check = (via: keyof typeof seen, end: Ended) => {
        if (!jobIds.has(end.jobId)) return;
        seen[via] += 1;
        checks.push(
          (async () => {
            const [http, nats] = await Promise.all([client.getJob(end.jobId), natsGetJob(teamNc, creds.apiKey, end.jobId)]);
            for (const [how, view] of [['HTTP', http], ['NATS', nats]] as [string, JobView][]) {
              const files = view.outputs?.files.map((f) => f.path) ?? null;
              if (view.state !== end.outcome || view.ended === undefined || JSON.stringify(files) !== JSON.stringify(end.outputs?.files.map((f) => f.path) ?? null)) {
                failures.push(`${via} → ${how} GetJob ${end.jobId}: state ${view.state}, ended ${view.ended ? 'yes' : 'no'}, outputs ${JSON.stringify(files)}; JobEnded said ${end.outcome}, ${JSON.stringify(end.outputs?.files.map((f) => f.path) ?? null)}`);
              }
            }
          })(),
        );
      };

      // The bus: the JobEnded as the ledger's relay publishes it, before intake has followed the store to it.
      const busSub = busNc.subscribe('gpunet.evt.JobEnded.>', {
        callback: (_err, msg) => check('bus', (msg.json() as { data: Ended }).data),
      });
      // The team's NATS feed notification.
      const feedSub = teamNc.subscribe(teamFeedSubjects(network().team), {
        callback: (_err, msg) => {
          const entry = msg.json() as FeedEntry;
          if (entry.type === 'JobEnded') check('nats', entry.data as Ended);
        },
      });
      // The team's SSE feed, from now on.
      const stop = new AbortController();
      const after = String(await (await network().store()).headPosition());
      const sse = (async () => {
        for await (const entry of client.feed({ after, signal: stop.signal })) if (entry.type === 'JobEnded') check('sse', entry.data as Ended);
      })().catch((err: unknown) => {
        if (!stop.signal.aborted) throw err;
      });
      await busNc.flush();
      await teamNc.flush();

      try {
        for (let i = 0; i < JOBS; i++) {
          const { jobId } = await client.submit(scriptJob(`echo ${i} > "$GPUNET_OUTPUT_DIR/r${i}.txt"`, { globs: ['*.txt'] }));
          jobIds.add(jobId);
        }
        await until('every JobEnded to reach all three receivers', () => (seen.sse >= JOBS && seen.nats >= JOBS && seen.bus >= JOBS ? true : undefined), {
          timeoutMs: 120_000,
          intervalMs: 200,
          describe: () => JSON.stringify(seen),
        });
        await Promise.all(checks);
      } finally {
        stop.abort();
        await sse;
        busSub.unsubscribe();
        feedSub.unsubscribe();
        await teamNc.close();
      }
      expect(failures).toEqual([]);
      expect(seen).toEqual({ sse: JOBS, nats: JOBS, bus: JOBS });
      for (const jobId of jobIds) expect((await jobEvents(network(), [jobId], ['JobEnded'])).length).toBe(1);
    }),
    180_000,
  );

  it(
    'a job whose node is lost, cancelled before placement requeues it, ends withdrawn: one JobEnded, cancelled, billed nothing for the lost attempt',
    e2e(async () => {
      const client = network().client();
      const { jobId } = await client.submit(scriptJob('echo started; sleep 60'));
      const view = await until('the job to run', async () => {
        const v = await client.getJob(jobId);
        return v.state === 'running' ? v : undefined;
      }, { timeoutMs: 30_000 });
      const nodeId = view.attempts.at(-1)!.nodeId;
      const other = network().nodeIds.find((n) => n !== nodeId)!;
      // Keep the other node busy so the lost job cannot be placed again before the cancel lands.
      const blocker = await client.submit(scriptJob('sleep 60'));
      await until('the blocker to run', async () => ((await client.getJob(blocker.jobId)).attempts.at(-1)?.nodeId === other ? true : undefined), { timeoutMs: 30_000 });
      await network().kill(nodeId, 'SIGKILL');
      await until('placement to declare the node lost', async () => ((await network().events({ types: ['NodeLost'] })).length > 0 ? true : undefined), { timeoutMs: 30_000 });
      await client.cancel(jobId);
      const end = await ended(jobId);
      expect(end).toMatchObject({ outcome: 'cancelled', attempts: 1, billed: { billableMs: 0, totals: [] } });
      const events = await jobEvents(network(), [jobId]);
      expect(events.filter((e) => e.type === 'JobWithdrawn').map((e) => (e.data as EventData<'JobWithdrawn'>).message)).toEqual([expect.stringContaining('after attempt 1')]);
      expect(events.filter((e) => e.type === 'JobEnded')).toHaveLength(1);
      expect((await client.getJob(jobId)).state).toBe('cancelled');
      await client.cancel(blocker.jobId);
      await ended(blocker.jobId);
      // The job's audit holds the loss, read from the lost node's stream; the blocker's, on the other node, does not.
      const lossesIn = async (id: string) => (await client.auditJob(id)).timeline.filter((t) => t.type === 'NodeLost').map((t) => t.streamId);
      expect(await lossesIn(jobId)).toEqual([`placement-node-${nodeId}`]);
      expect(await lossesIn(blocker.jobId)).toEqual([]);
    }),
    120_000,
  );
});
