// The recorder against a real nats-server and a real SQLite store, attacked as a node would:
// good reports are recorded with their signature, the same report twice once, and every forged,
// replayed or foreign report refused and the refusal recorded.
import { commandSubject, NodeReportReply, parseJobSpec, querySubject, reportSigningBytes, reportSubject, workFilter, type NodeReport, type NodeReportRefused } from '#contracts';
import { openEventStore, type EventStore } from '#event-store';
import { newIdentity, signBytes, type Identity } from '#identity';
import { requestQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { workHeldFor } from '../../test-fixtures/work-stream.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { until } from '../../../../test/support/poll.js';
import { recorderService } from './recorder.service.js';
import { REFUSALS_STREAM } from './recorder.streams.js';

const keys: Record<string, Identity> = { 'node-1': newIdentity(), 'node-2': newIdentity() };
let nats: TestNatsServer;
let dir: string;
let store: EventStore;
let nc: NatsConnection;
let recorder: RunningService;
let seq = 100n;

const spec = (() => {
  const p = parseJobSpec({ name: 'r', work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, gpuModel: 'sim-gpu', timeLimit: '1m' } });
  if (!p.ok) throw new Error(JSON.stringify(p.issues));
  return p.spec;
})();

/** A job of `team` submitted (as intake) and placed on `nodeId` (as placement). */
async function placedJob(jobId: string, nodeId: string, team = 'team-a') {
  const now = new Date().toISOString();
  await new EventWriter(store, 'intake', systemClock).append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team, spec, submittedAt: now } }]);
  await new EventWriter(store, 'placement', systemClock).append(`placement-job-${jobId}`, [
    { type: 'JobPlaced', data: { jobId, attemptId: `${jobId}-a1`, attempt: 1, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', placedAt: now } },
  ]);
  return { jobId, attemptId: `${jobId}-a1`, stream: `execution-${nodeId}-attempt-${jobId}-a1` };
}

let idN = 0;
const newEventId = () => `00000000-0000-4000-8000-${String(++idN).padStart(12, '0')}`;

function signed(nodeId: string, streamId: string, type: string, data: unknown, o: { key?: Identity; eventId?: string; seq?: bigint } = {}): NodeReport {
  const body: Omit<NodeReport, 'signature'> = {
    nodeId,
    journal: `journal-${nodeId}`,
    seq: String(o.seq ?? ++seq),
    event: { streamId, eventId: o.eventId ?? newEventId(), type, data, metadata: { correlationId: 'corr', causationId: 'cause', producer: 'execution', occurredAt: new Date().toISOString() } },
  };
  return { ...body, signature: signBytes(o.key ?? keys[nodeId]!, reportSigningBytes(body)) };
}

const send = (fromNode: string, report: unknown) => requestQuery<NodeReportReply>(nc, reportSubject(fromNode), report, { response: NodeReportReply }, { timeoutMs: 20_000 });
const refusals = async () => (await store.readStream(REFUSALS_STREAM)).map((e) => e.data as NodeReportRefused);
const at = (ms: number) => new Date(Date.parse('2026-03-01T10:00:00.000Z') + ms).toISOString();

const held = (j: { jobId: string; attemptId: string }, nodeId: string) => ({ jobId: j.jobId, attemptId: j.attemptId, nodeId, gpuIndices: [0], gpuModel: 'sim-gpu', gpus: 1, heldAt: at(0) });
const finished = (j: { jobId: string; attemptId: string }, nodeId: string, ms: number) => ({ jobId: j.jobId, attemptId: j.attemptId, nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: at(ms) });

beforeAll(async () => {
  [nats, dir] = await Promise.all([startNatsServer(), mkdtemp(join(tmpdir(), 'gpunet-recorder-'))]);
  const storeUrl = `sqlite:${join(dir, 'events.db')}`;
  recorder = await startService({
    ...recorderService,
    env: {
      GPUNET_NATS_URL: nats.url,
      GPUNET_STORE_URL: storeUrl,
      GPUNET_LOG_LEVEL: 'silent',
      GPUNET_ENROLL_NODES: Object.entries(keys).map(([n, k]) => `${n}=${k.publicKey}`).join(','),
    },
  });
  store = await openEventStore(storeUrl);
  nc = await connect({ servers: nats.url });
}, 60_000);

afterAll(async () => {
  await nc?.close();
  await recorder?.stop();
  await store?.close();
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('the recorder', () => {
  it('enrolls the nodes it was given once, and makes each one\'s work consumer on its own subjects only', async () => {
    const enrolled = (await store.readStream('execution-recorder-nodes')).map((e) => (e.data as { nodeId: string }).nodeId);
    expect(enrolled.sort()).toEqual(['node-1', 'node-2']);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.consumers.info('GPUNET_WORK', 'execution-node-1');
    expect(info.config.filter_subject ?? info.config.filter_subjects?.[0]).toBe(workFilter('node-1'));
  });

  it('sends a node its own placements with the job\'s submission first, and nothing of another node\'s', async () => {
    const mine = await placedJob('job-w1', 'node-1');
    await placedJob('job-w2', 'node-2');
    const jsm = await jetstreamManager(nc);
    const got = await until('node-1\'s work', async () => {
      const held = await workHeldFor(jsm, 'node-1');
      return held.length >= 2 ? held : undefined;
    });
    expect(got).toEqual([
      { subject: 'gpunet.work.node-1.JobSubmitted', type: 'JobSubmitted', jobId: mine.jobId },
      { subject: 'gpunet.work.node-1.JobPlaced', type: 'JobPlaced', jobId: mine.jobId },
    ]);

    // A work queue: what node-1's own consumer acknowledged leaves the stream; node-2's stays for it.
    expect((await jsm.streams.info('GPUNET_WORK')).config.retention).toBe('workqueue');
    const own = await jetstream(nc).consumers.get('GPUNET_WORK', 'execution-node-1');
    for await (const m of await own.fetch({ max_messages: 2, expires: 5_000 })) await m.ackAck();
    await until('node-1\'s acknowledged work to leave the stream', async () => (await workHeldFor(jsm, 'node-1')).length === 0);
    expect((await workHeldFor(jsm, 'node-2')).map((w) => w.type)).toEqual(['JobSubmitted', 'JobPlaced']);
  });

  it('records a good report in the node\'s stream with the node\'s signature, the job\'s team from intake, and the same report twice once', async () => {
    const j = await placedJob('job-good', 'node-1');
    const report = signed('node-1', j.stream, 'ComputeHeld', held(j, 'node-1'));
    expect(await send('node-1', report)).toEqual({ status: 'accepted' });
    expect(await send('node-1', report)).toEqual({ status: 'duplicate' });
    const events = await store.readStream(j.stream);
    expect(events.map((e) => e.eventId)).toEqual([report.event.eventId]);
    expect(events[0]!.metadata).toMatchObject({
      producer: 'execution',
      jobId: j.jobId,
      team: 'team-a',
      report: { nodeId: 'node-1', publicKey: keys['node-1']!.publicKey, signature: report.signature, journal: report.journal, seq: report.seq, metadata: report.event.metadata },
    });
  });

  it('refuses a report signed by another node\'s key, and records the refusal', async () => {
    const j = await placedJob('job-key', 'node-1');
    const forged = signed('node-1', j.stream, 'ComputeHeld', held(j, 'node-1'), { key: keys['node-2'] });
    expect(await send('node-1', forged)).toMatchObject({ status: 'refused', reason: 'bad_signature' });
    expect(await store.readStream(j.stream)).toEqual([]);
    expect(await refusals()).toContainEqual(expect.objectContaining({ nodeId: 'node-1', reason: 'bad_signature', eventId: forged.event.eventId, jobId: j.jobId }));
  });

  it('refuses a report with a broken signature (a field changed after signing)', async () => {
    const j = await placedJob('job-sig', 'node-1');
    const report = signed('node-1', j.stream, 'ComputeHeld', held(j, 'node-1'));
    const tampered = { ...report, event: { ...report.event, data: { ...held(j, 'node-1'), heldAt: at(50_000) } } };
    expect(await send('node-1', tampered)).toMatchObject({ status: 'refused', reason: 'bad_signature' });
    expect(await send('node-1', { ...report, signature: 'AAAA' })).toMatchObject({ status: 'refused', reason: 'bad_signature' });
    expect(await store.readStream(j.stream)).toEqual([]);
  });

  it('refuses node-1\'s JobFinished for node-2\'s attempt, on node-2\'s stream or on its own, and bills nothing', async () => {
    const theirs = await placedJob('job-theirs', 'node-2');
    expect(await send('node-2', signed('node-2', theirs.stream, 'ComputeHeld', held(theirs, 'node-2')))).toEqual({ status: 'accepted' });
    const intoTheirStream = signed('node-1', theirs.stream, 'JobFinished', finished(theirs, 'node-2', 1));
    expect(await send('node-1', intoTheirStream)).toMatchObject({ status: 'refused', reason: 'other_node' });
    const ownStream = `execution-node-1-attempt-${theirs.attemptId}`;
    expect(await send('node-1', signed('node-1', ownStream, 'JobFinished', finished(theirs, 'node-1', 1)))).toMatchObject({ status: 'refused', reason: 'other_node' });
    // Sent on node-2's subject with node-1's key: still not node-2's signature.
    expect(await send('node-2', signed('node-2', theirs.stream, 'JobFinished', finished(theirs, 'node-2', 1), { key: keys['node-1'] }))).toMatchObject({ status: 'refused', reason: 'bad_signature' });
    expect((await store.readStream(theirs.stream)).map((e) => e.type)).toEqual(['ComputeHeld']);
    expect(await store.readStream(ownStream)).toEqual([]);
    const reasons = (await refusals()).filter((r) => r.jobId === theirs.jobId).map((r) => r.reason);
    expect(reasons).toEqual(['other_node', 'other_node', 'bad_signature']);
  });

  it('refuses an old report replayed after the attempt finished, and a second end of a finished attempt', async () => {
    const j = await placedJob('job-replay', 'node-1');
    const h = signed('node-1', j.stream, 'ComputeHeld', held(j, 'node-1'));
    expect(await send('node-1', h)).toEqual({ status: 'accepted' });
    expect(await send('node-1', signed('node-1', j.stream, 'JobStarted', { jobId: j.jobId, attemptId: j.attemptId, nodeId: 'node-1', startedAt: at(10) }))).toEqual({ status: 'accepted' });
    const end = signed('node-1', j.stream, 'JobFinished', finished(j, 'node-1', 60_000));
    expect(await send('node-1', end)).toEqual({ status: 'accepted' });
    expect(await send('node-1', signed('node-1', j.stream, 'ComputeReleased', { jobId: j.jobId, attemptId: j.attemptId, nodeId: 'node-1', gpuIndices: [0], releasedAt: at(61_000) }))).toEqual({ status: 'accepted' });
    // The captured ComputeHeld and JobFinished, sent again byte for byte.
    expect(await send('node-1', h)).toMatchObject({ status: 'refused', reason: 'replayed' });
    expect(await send('node-1', end)).toMatchObject({ status: 'refused', reason: 'replayed' });
    // A new JobFinished (a shorter run) for the finished attempt.
    expect(await send('node-1', signed('node-1', j.stream, 'JobFinished', finished(j, 'node-1', 1_000)))).toMatchObject({ status: 'refused', reason: 'state' });
    expect((await store.readStream(j.stream)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
    const reasons = (await refusals()).filter((r) => r.jobId === j.jobId).map((r) => r.reason);
    expect(reasons).toEqual(['replayed', 'replayed', 'state']);
  });

  it('refuses a node that is not enrolled, and takes it once the operator enrolls it', async () => {
    const node3 = newIdentity();
    const j = await placedJob('job-n3', 'node-3');
    const report = signed('node-3', j.stream, 'ComputeHeld', held(j, 'node-3'), { key: node3 });
    expect(await send('node-3', report)).toMatchObject({ status: 'refused', reason: 'unknown_node' });
    expect(await refusals()).toContainEqual(expect.objectContaining({ nodeId: 'node-3', reason: 'unknown_node' }));
    const reply = await requestQuery(nc, commandSubject('EnrollNode'), { nodeId: 'node-3', publicKey: node3.publicKey, enrolledBy: 'operator-test' });
    expect(reply).toEqual({ nodeId: 'node-3', publicKey: node3.publicKey, changed: true });
    const listed = await requestQuery<{ nodes: { nodeId: string; enrolledBy: string }[] }>(nc, querySubject('execution', 'ListNodes'), {});
    expect(listed.nodes.map((n) => [n.nodeId, n.enrolledBy])).toEqual([['node-1', 'gpunet up'], ['node-2', 'gpunet up'], ['node-3', 'operator-test']]);
    await (await jetstreamManager(nc)).consumers.info('GPUNET_WORK', 'execution-node-3');
    expect(await send('node-3', signed('node-3', j.stream, 'ComputeHeld', held(j, 'node-3'), { key: node3 }))).toEqual({ status: 'accepted' });
  });

  it('refuses what is not a report, and a body naming another node than its subject', async () => {
    expect(await send('node-1', { hello: 'world' })).toMatchObject({ status: 'refused', reason: 'malformed' });
    const j = await placedJob('job-subj', 'node-2');
    expect(await send('node-1', signed('node-2', j.stream, 'ComputeHeld', held(j, 'node-2')))).toMatchObject({ status: 'refused', reason: 'other_node' });
    expect(await store.readStream(j.stream)).toEqual([]);
  });
});
