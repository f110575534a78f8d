/**
 * The recorder's fail-over (decision 0029, role `recorder`) with real processes
 * (`node dist/services/execution/src/recorder/main.js`, built by `npm run build`) on one
 * nats-server and one SQLite store file. The test plays intake and placement through its own
 * writer, and a node that sends signed reports and sends one again until the recorder answers for
 * it, as the node's report relay does.
 *
 * - SIGKILL the leader: a report sent right after is recorded by the standby within the lease
 *   bound, and a placement made after the kill reaches the node's work subjects.
 * - SIGSTOP the next leader until a third process took over, SIGCONT it: it records nothing more
 *   and steps down.
 * - A leader the store has moved past: the store refuses its next append (the node is told to
 *   send again, nothing is refused as the node's fault), it steps down, and the report is recorded
 *   once by whoever leads next.
 */
import { NodeReportReply, parseJobSpec, reportSigningBytes, reportSubject, type EventData, type NodeReport } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { newIdentity, signBytes } from '#identity';
import { requestQuery } from '#messaging';
import { elect, EventWriter, leadershipStreamId, systemClock } from '#service-kit';
import { jetstreamManager } from '@nats-io/jetstream';
import { workHeldFor } from '../../test-fixtures/work-stream.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { logged, ServiceProcesses, waitFor, type ServiceProcess } from '../../../../test/support/service-process.js';
import { REFUSALS_STREAM } from './recorder.streams.js';

const REPO = fileURLToPath(new URL('../../../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/execution/src/recorder/main.js');
/** The default lease (GPUNET_LEASE_MS 6 s, renewed every 2 s): the bound the issue asks for. */
const TAKEOVER_BOUND_MS = 10_000;
const NODE = 'node-1';
const key = newIdentity();

const spec = (() => {
  const p = parseJobSpec({ name: 'r', work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, gpuModel: 'sim-gpu', timeLimit: '1m' } });
  if (!p.ok) throw new Error(JSON.stringify(p.issues));
  return p.spec;
})();

describe('recorder fail-over: a leader and standbys on one lease, fenced in the store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let env: Record<string, string>;
  let store: EventStore;
  let nc: NatsConnection;
  const processes = new ServiceProcesses(MAIN, REPO);
  let seq = 0n;
  let ids = 0;

  const spawnRecorder = (name: string): ServiceProcess => processes.spawn(name, { ...env, GPUNET_INSTANCE: `recorder-${name}` });
  const recordedBy = (r: ServiceProcess, eventId: string, from = 0) => r.logs.slice(from).some((x) => x.msg === 'node report recorded' && x.eventId === eventId);

  /** A job submitted (as intake) and placed on the node (as placement). */
  async function placedJob(jobId: string) {
    const now = new Date().toISOString();
    await new EventWriter(store, 'intake', systemClock).append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team: 'team-a', spec, submittedAt: now } }]);
    await new EventWriter(store, 'placement', systemClock).append(`placement-job-${jobId}`, [
      { type: 'JobPlaced', data: { jobId, attemptId: `${jobId}-a1`, attempt: 1, nodeId: NODE, gpuIndices: [0], gpuModel: 'sim-gpu', placedAt: now } },
    ]);
    return { jobId, attemptId: `${jobId}-a1`, stream: `execution-${NODE}-attempt-${jobId}-a1` };
  }

  function signed(streamId: string, type: string, data: unknown): NodeReport {
    const body: Omit<NodeReport, 'signature'> = {
      nodeId: NODE,
      journal: `journal-${NODE}`,
      seq: String(++seq),
      event: {
        streamId,
        eventId: `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
        type,
        data,
        metadata: { correlationId: 'corr', causationId: 'cause', producer: 'execution', occurredAt: new Date().toISOString() },
      },
    };
    return { ...body, signature: signBytes(key, reportSigningBytes(body)) };
  }

  /** Sends the report until a recorder answers for it (every 100 ms, a 2 s timeout each), as the node's relay does. */
  async function report(r: NodeReport, timeoutMs = 30_000): Promise<NodeReportReply> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await requestQuery<NodeReportReply>(nc, reportSubject(NODE), r, { response: NodeReportReply }, { timeoutMs: 2_000 });
      } catch (err) {
        if (Date.now() > end) throw new Error(`no recorder answered for ${r.event.type} within ${timeoutMs} ms: ${(err as Error).message}`, { cause: err });
        await new Promise((res) => setTimeout(res, 100));
      }
    }
  }
  const held = (j: { jobId: string; attemptId: string }) => ({ jobId: j.jobId, attemptId: j.attemptId, nodeId: NODE, gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: new Date().toISOString() });
  const finished = (j: { jobId: string; attemptId: string }) => ({ jobId: j.jobId, attemptId: j.attemptId, nodeId: NODE, outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date().toISOString() });
  const terms = async () => (await store.readStream(leadershipStreamId('recorder'))).map((e) => e as RecordedEvent<'LeaderElected', EventData<'LeaderElected'>>);

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first.`);
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-recorder-failover-'));
    const storeUrl = `sqlite:${join(dir, 'events.db')}`;
    env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'info', GPUNET_ENROLL_NODES: `${NODE}=${key.publicKey}` };
    store = await openEventStore(storeUrl);
    nc = await connect({ servers: nats.url });
  }, 30_000);

  afterAll(async () => {
    processes.killAll();
    await nc?.close();
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the standby records a report sent after SIGKILL within the lease and dispatches work; a paused leader woken after takeover records nothing; a leader the store moved past is refused', async () => {
    // ── a leader and a standby ──
    const a = spawnRecorder('a');
    await waitFor('a to lead', () => logged(a, 'service started'));
    expect(logged(a, 'leader: acquired')).toMatchObject({ role: 'recorder', term: 1 });
    const b = spawnRecorder('b');
    await waitFor('b to wait as a standby', () => logged(b, 'leader: standby, waiting for the lease'));
    expect(logged(b, 'service started')).toBeUndefined(); // a standby serves no report

    const job1 = await placedJob('job-1');
    const held1 = signed(job1.stream, 'ComputeHeld', held(job1));
    expect(await report(held1)).toEqual({ status: 'accepted' });
    // The log line comes before the answer, on another pipe: waited for.
    await waitFor('a to log the report recorded', () => recordedBy(a, held1.event.eventId), 5_000);

    // ── SIGKILL the leader: the standby records the node's next report and dispatches new work ──
    a.child.kill('SIGKILL');
    const killedAt = performance.now();
    const killedAtWall = Date.now();
    const finished1 = signed(job1.stream, 'JobFinished', finished(job1));
    expect(await report(finished1, 20_000)).toEqual({ status: 'accepted' });
    const takeoverMs = Math.round(performance.now() - killedAt);
    const electedAfterMs = Date.parse((await terms())[1]!.data.electedAt) - killedAtWall;
    process.stdout.write(`recorder takeover after SIGKILL: term 2 elected ${electedAfterMs} ms after the kill, the node's report recorded ${takeoverMs} ms after it (bound ${TAKEOVER_BOUND_MS} ms)\n`);
    expect(takeoverMs).toBeLessThanOrEqual(TAKEOVER_BOUND_MS);
    // Its log line may reach the test after the store shows its work: waited for.
    expect(await waitFor('b to log its term', () => logged(b, 'leader: acquired'), 5_000)).toMatchObject({ role: 'recorder', term: 2 });
    await waitFor('b to log the report recorded', () => recordedBy(b, finished1.event.eventId), 5_000);
    expect((await store.readStream(job1.stream)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobFinished']);
    // The work dispatcher goes on where a left it: a placement made now reaches the node's subjects.
    const jsm = await jetstreamManager(nc);
    await placedJob('job-2');
    await waitFor('job-2\'s placement on the node\'s work subjects', async () => (await workHeldFor(jsm, NODE)).some((w) => w.subject === `gpunet.work.${NODE}.JobPlaced` && w.jobId === 'job-2'), 20_000);

    // ── SIGSTOP the new leader until a third process took over, then SIGCONT it ──
    const c = spawnRecorder('c');
    await waitFor('c to wait as a standby', () => logged(c, 'leader: standby, waiting for the lease'));
    b.child.kill('SIGSTOP');
    const stoppedAt = performance.now();
    await waitFor('c to lead', () => logged(c, 'leader: acquired'), 20_000);
    expect(logged(c, 'leader: acquired')).toMatchObject({ term: 3 });
    const job3 = await placedJob('job-3');
    const held3 = signed(job3.stream, 'ComputeHeld', held(job3));
    // Sent while b is paused: b's subscription is still in the queue group, so a try may go to b
    // and time out; the node sends again.
    const held3Sent = report(held3);
    const bWoke = b.logs.length;
    b.child.kill('SIGCONT');
    expect(await held3Sent).toEqual({ status: 'accepted' });
    await waitFor('b to step down', () => logged(b, 'leader: stepped down', bWoke), 20_000);
    process.stdout.write(`recorder after SIGSTOP: a report recorded ${Math.round(performance.now() - stoppedAt)} ms after the leader was paused\n`);
    const finished3 = signed(job3.stream, 'JobFinished', finished(job3));
    expect(await report(finished3)).toEqual({ status: 'accepted' });
    await waitFor('c to log both reports recorded', () => recordedBy(c, held3.event.eventId) && recordedBy(c, finished3.event.eventId), 5_000);
    expect(b.logs.slice(bWoke).filter((l) => l.msg === 'node report recorded')).toEqual([]);
    await waitFor('b to wait as a standby again', () => logged(b, 'leader: standby, waiting for the lease', bWoke), 20_000);
    const wokenLines = b.logs.slice(bWoke).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('leader:'));
    process.stdout.write(`woken recorder: ${wokenLines.map((l) => `${l.msg} (${String(l.reason ?? l.term ?? '')})`).join('; ')}\n`);

    // ── the store moves past c's term behind its back: its next append is refused ──
    await elect(store, new EventWriter(store, 'execution', systemClock), 'recorder', 'a-leader-c-never-saw', 6_000, systemClock);
    const cBefore = c.logs.length;
    const job4 = await placedJob('job-4');
    const held4 = signed(job4.stream, 'ComputeHeld', held(job4));
    const held4Sent = report(held4, 40_000);
    const lost = await waitFor('c to lose its term to the store', () => logged(c, 'leader: lease lost', cBefore), 20_000);
    expect(lost.reason).toMatch(/store refused an append: .*fenced off/);
    expect(await held4Sent).toEqual({ status: 'accepted' });
    expect(recordedBy(c, held4.event.eventId, cBefore)).toBe(false);
    const finalTerms = await terms();
    expect(finalTerms.map((t) => t.data.term)).toEqual([1, 2, 3, 4, 5]);
    const lastLeader = [b, c].find((r) => logged(r, 'leader: acquired', r === c ? cBefore : bWoke)?.term === 5);
    expect(lastLeader).toBeDefined();
    await waitFor('the last leader to log the report recorded', () => recordedBy(lastLeader!, held4.event.eventId), 5_000);

    // Every report recorded once, none refused as the node's fault.
    for (const j of [job1, job3]) expect((await store.readStream(j.stream)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobFinished']);
    expect((await store.readStream(job4.stream)).map((e) => e.type)).toEqual(['ComputeHeld']);
    expect(await store.readStream(REFUSALS_STREAM)).toEqual([]);
  }, 180_000);
});
