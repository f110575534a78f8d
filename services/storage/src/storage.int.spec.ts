/**
 * The storage service in-process (the kit's `startService`) against a real nats-server and a
 * SQLite store file. Fake intake and execution agents append their events to their own streams
 * and their own outbox relays publish them, as the real services do; blobs are uploaded with
 * `#blobs` as the CLI and the agent do.
 */
import { BlobStore } from '#blobs';
import { ChunkedWriter } from '../../../libs/blobs/src/chunked-put.js';
import { commandSubject, DeadLetter, type EventData, type JobOutcome, type RecordedEventEnvelope, type StoreOutputsReply } from '#contracts';
import { SqliteEventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay, requestQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { encodeDataRefs, evolve, initialDataRefs, retainedBy } from './domain/index.js';
import { DataRefsFeed, RETAINED_TABLE, retainedKey } from './retention/data-refs.feed.js';
import { manifestFiles } from './retention/manifest-files.js';
import { storageService } from './storage.service.js';

/** The storage service's log lines (info and up), shown when a wait times out. */
const storageLog: string[] = [];
const logDestination = { write: (line: string) => void storageLog.push(line.trimEnd()) };

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}\n--- storage log (tail) ---\n${storageLog.slice(-30).join('\n')}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface InputSketch {
  name: string;
  sha256: string;
  size: number;
  kind?: 'file' | 'folder';
  keepMs?: number;
  dataset?: string;
}

describe('storage service against nats-server and a SQLite store', () => {
  let nats: TestNatsServer;
  let dir: string;
  let env: Record<string, string>;
  let storage: RunningService;
  let store: SqliteEventStore;
  let nc: NatsConnection;
  let blobs: BlobStore;
  let relays: OutboxRelay[];
  let intake: EventWriter;
  let agent: EventWriter;

  const start = () => startService({ ...storageService, env, logDestination });

  async function upload(team: string, bytes: Uint8Array, name = randomUUID()): Promise<{ sha256: string; size: number }> {
    const path = join(dir, 'files', name);
    await writeFile(path, bytes);
    const { sha256, size } = await blobs.uploadFile(team, path);
    return { sha256, size };
  }

  async function submit(jobId: string, inputs: InputSketch[], team = 'team-a'): Promise<void> {
    const data: EventData<'JobSubmitted'> = {
      jobId,
      team,
      submittedAt: new Date().toISOString(),
      spec: {
        work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
        data: { inputs: inputs.map((i) => ({ name: i.name, path: i.name, kind: i.kind ?? 'file', sha256: i.sha256, size: i.size, ...(i.keepMs ? { keepMs: i.keepMs } : {}), ...(i.dataset ? { dataset: i.dataset } : {}) })) },
        request: { gpus: 1, timeLimitMs: 60_000, network: false },
        outputs: { globs: ['**'] },
      },
    };
    await intake.append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data }], { expectedRevision: 'no_stream', correlationId: `corr-${jobId}` });
  }

  /** The fake agent ends an attempt: JobFinished then ComputeReleased in the attempt's stream. */
  async function release(jobId: string, attempt = 1, outcome: JobOutcome = 'completed'): Promise<void> {
    const attemptId = `${jobId}-a${attempt}`;
    const base = { jobId, attemptId, nodeId: 'node-1' };
    const now = new Date().toISOString();
    await agent.append(
      `execution-node-1-attempt-${attemptId}`,
      [
        { type: 'JobFinished', data: { ...base, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: now } },
        { type: 'ComputeReleased', data: { ...base, gpuIndices: [0], releasedAt: now } },
      ],
      { correlationId: `corr-${jobId}` },
    );
  }

  const storageEvents = (jobId: string): Promise<RecordedEvent[]> => store.readStream(`storage-job-${jobId}`);
  const decided = (jobId: string) =>
    waitFor(`staging of ${jobId}`, async () => (await storageEvents(jobId)).find((e) => e.type === 'InputsStaged' || e.type === 'StagingFailed'));
  const removalsOf = async (jobId: string) => (await storageEvents(jobId)).filter((e) => e.type === 'DataRemoved').map((e) => e.data as EventData<'DataRemoved'>);

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-storage-'));
    await mkdir(join(dir, 'files'));
    const dbPath = join(dir, 'events.db');
    env = {
      GPUNET_NATS_URL: nats.url,
      GPUNET_STORE_URL: `sqlite:${dbPath}`,
      GPUNET_LOG_LEVEL: 'info',
      GPUNET_STORAGE_SWEEP_INTERVAL: '200ms',
      GPUNET_STORAGE_MAX_DELIVERIES: '3',
    };
    storage = await start(); // provisions GPUNET_EVENTS before the fakes' relays publish
    store = new SqliteEventStore({ path: dbPath });
    nc = await connect({ servers: nats.url });
    blobs = await BlobStore.open(nc);
    intake = new EventWriter(store, 'intake', systemClock);
    agent = new EventWriter(store, 'execution', systemClock);
    const silent = pino({ level: 'silent' });
    relays = [
      new OutboxRelay(store, nc, { name: 'relay-test-intake', filter: { streamPrefix: 'intake-' }, logger: silent }),
      new OutboxRelay(store, nc, { name: 'relay-test-agent', filter: { streamPrefix: 'execution-' }, logger: silent }),
    ];
    for (const r of relays) await r.start();
  }, 30_000);

  afterAll(async () => {
    for (const r of relays ?? []) await r.stop();
    await storage?.stop();
    await nc?.close();
    await store?.close();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('stages a job whose file and folder inputs are uploaded, caused by its JobSubmitted', async () => {
    const file = await upload('team-a', randomBytes(200_000));
    await mkdir(join(dir, 'ds/sub'), { recursive: true });
    await writeFile(join(dir, 'ds/a.bin'), randomBytes(1000));
    await writeFile(join(dir, 'ds/sub/b.bin'), randomBytes(2000));
    const folder = await blobs.uploadFolder('team-a', join(dir, 'ds'));

    await submit('job-ok', [
      { name: 'weights', ...file },
      { name: 'dataset', kind: 'folder', sha256: folder.sha256, size: folder.size },
    ]);
    const staged = await decided('job-ok');

    expect(staged.type).toBe('InputsStaged');
    expect(staged.data).toMatchObject({
      jobId: 'job-ok',
      inputs: [
        { name: 'weights', ...file },
        { name: 'dataset', sha256: folder.sha256, size: folder.size },
      ],
      totalBytes: file.size + folder.size,
    });
    const [submitted] = await store.readStream('intake-job-job-ok');
    expect(staged.metadata).toMatchObject({ producer: 'storage', jobId: 'job-ok', team: 'team-a', correlationId: 'corr-job-ok', causationId: submitted!.eventId });
  });

  it('fails staging with what is missing and what to do; a size that differs from the spec is named too', async () => {
    const present = await upload('team-a', randomBytes(100));
    const absent = { sha256: 'ab'.repeat(32), size: 5 };
    await submit('job-missing', [{ name: 'present', ...present }, { name: 'absent', ...absent }]);
    await submit('job-size', [{ name: 'wrong-size', sha256: present.sha256, size: 99 }]);

    const missing = await decided('job-missing');
    expect(missing.type).toBe('StagingFailed');
    expect(missing.data).toMatchObject({ jobId: 'job-missing', inputName: 'absent', reason: 'blob_missing' });
    expect((missing.data as { message: string }).message).toMatch(/input `absent` .* is not in the object store.*Upload the inputs/);

    expect((await decided('job-size')).data).toMatchObject({ reason: 'size_mismatch', inputName: 'wrong-size' });
  });

  it('fails staging of a folder one of whose files is gone, naming the file', async () => {
    await mkdir(join(dir, 'ds2'), { recursive: true });
    const lost = randomBytes(700);
    await writeFile(join(dir, 'ds2/kept.bin'), randomBytes(300));
    await writeFile(join(dir, 'ds2/lost.bin'), lost);
    const folder = await blobs.uploadFolder('team-a', join(dir, 'ds2'));
    const lostSha = folder.manifest.entries.find((e) => e.path === 'lost.bin')!.sha256;
    await blobs.remove('team-a', lostSha);

    await submit('job-folder', [{ name: 'dataset', kind: 'folder', sha256: folder.sha256, size: folder.size }]);

    const failed = await decided('job-folder');
    expect(failed.data).toMatchObject({ reason: 'blob_missing', inputName: 'dataset' });
    expect((failed.data as { message: string }).message).toContain('file `lost.bin` of input `dataset`');
  });

  it('never stages from another team\'s blobs', async () => {
    const theirs = await upload('team-b', randomBytes(500));
    await submit('job-other-team', [{ name: 'x', ...theirs }], 'team-a');
    expect((await decided('job-other-team')).data).toMatchObject({ reason: 'blob_missing' });
  });

  it('dead-letters a malformed JobSubmitted and keeps going', async () => {
    const eventId = randomUUID();
    const envelope = {
      eventId,
      type: 'JobSubmitted',
      data: { jobId: 'job-bad', team: 'team-a' }, // no spec, no submittedAt
      metadata: { correlationId: 'corr-bad', causationId: 'corr-bad', producer: 'intake', occurredAt: new Date().toISOString() },
    };
    // On the subject such an event has: storage's durable is given JobSubmitted events only (decision 0054).
    await jetstream(nc).publish('gpunet.evt.JobSubmitted.team-a.job-bad', JSON.stringify(envelope), { msgID: eventId });

    const jsm = await jetstreamManager(nc);
    const dead = await waitFor('the dead letter', async () => {
      const m = await jsm.streams.getMessage('GPUNET_DLQ', { last_by_subj: 'gpunet.dlq.storage' }).catch(() => null);
      return m ? DeadLetter.parse(m.json()) : undefined;
    });
    expect(dead).toMatchObject({ consumer: 'storage', reason: 'schema_invalid', subject: 'gpunet.evt.JobSubmitted.team-a.job-bad' });
    expect(JSON.parse(Buffer.from(dead.payloadBase64, 'base64').toString()) as RecordedEventEnvelope).toMatchObject({ eventId });

    const input = await upload('team-a', randomBytes(50));
    await submit('job-after-poison', [{ name: 'x', ...input }]);
    expect((await decided('job-after-poison')).type).toBe('InputsStaged');
    expect(await storageEvents('job-bad')).toEqual([]);
  });

  it('records outputs once per attempt, and refuses blobs that are not stored by field', async () => {
    await submit('job-out', []);
    await decided('job-out');
    const model = await upload('team-a', randomBytes(3000));
    const metrics = await upload('team-a', Buffer.from('{"loss":0.1}'));
    const stdout = await upload('team-a', Buffer.from('epoch 1\n'));
    const request = {
      jobId: 'job-out',
      team: 'team-a',
      attemptId: 'job-out-a1',
      nodeId: 'node-1',
      files: [
        { path: 'model/weights.bin', ...model },
        { path: 'metrics.json', ...metrics },
      ],
      logs: [{ stream: 'stdout', ...stdout }],
    };

    const first = await requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), request, {}, { correlationId: 'corr-out' });
    const again = await requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), request);

    expect(first).toEqual({ jobId: 'job-out', attemptId: 'job-out-a1', files: 2, totalBytes: model.size + metrics.size, duplicate: false });
    expect(again).toEqual({ ...first, duplicate: true });
    const stored = (await storageEvents('job-out')).filter((e) => e.type === 'OutputsStored');
    expect(stored).toHaveLength(1);
    expect(stored[0]!.data).toMatchObject({ attemptId: 'job-out-a1', files: request.files, logs: request.logs, totalBytes: model.size + metrics.size, truncated: false });
    expect(stored[0]!.metadata).toMatchObject({ correlationId: 'corr-out', team: 'team-a', jobId: 'job-out', producer: 'storage' });

    const missing = { ...request, attemptId: 'job-out-a2', files: [{ path: 'gone.bin', sha256: 'cd'.repeat(32), size: 1 }] };
    const refused = await requestQuery(nc, commandSubject('StoreOutputs'), missing).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'validation_failed', issues: [expect.objectContaining({ path: 'files.0' })] });

    const wrongTeam = await requestQuery(nc, commandSubject('StoreOutputs'), { ...request, attemptId: 'job-out-a3', team: 'team-b' }).catch((e: unknown) => e);
    expect(wrongTeam).toMatchObject({ code: 'validation_failed' });
    expect((await storageEvents('job-out')).filter((e) => e.type === 'OutputsStored')).toHaveLength(1);
  });

  it('copies an attempt\'s inputs into its node\'s own bucket once, only for the node it is placed on, and takes outputs out of it verified', async () => {
    const file = await upload('team-a', randomBytes(300_000));
    await mkdir(join(dir, 'nd/sub'), { recursive: true });
    await writeFile(join(dir, 'nd/a.bin'), randomBytes(1500));
    await writeFile(join(dir, 'nd/sub/b.bin'), randomBytes(2500));
    const folder = await blobs.uploadFolder('team-a', join(dir, 'nd'));
    const other = await upload('team-a', randomBytes(100)); // the team's, but not this job's
    await submit('job-nd', [{ name: 'file', ...file }, { name: 'folder', kind: 'folder', sha256: folder.sha256, size: folder.size }]);
    await new EventWriter(store, 'placement', systemClock).append('placement-job-job-nd', [
      { type: 'JobPlaced', data: { jobId: 'job-nd', attemptId: 'job-nd-a1', attempt: 1, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', placedAt: new Date().toISOString() } },
    ]);
    const stage = (node: string, blobsAsked: string[]) =>
      requestQuery<{ bucket: string; blobs: { sha256: string; copiedBytes: number }[] }>(nc, `gpunet.data.${node}.stage`, { jobId: 'job-nd', attemptId: 'job-nd-a1', blobs: blobsAsked });

    const first = await stage('node-1', [file.sha256, folder.sha256]);
    expect(first.bucket).toBe('gpunet-node-node-1');
    expect(first.blobs.map((b) => b.copiedBytes)).toEqual([file.size, folder.size]);
    const files = folder.manifest.entries.map((e) => e.sha256);
    expect((await stage('node-1', files)).blobs.reduce((n, b) => n + b.copiedBytes, 0)).toBe(1500 + 2500);
    // Content-addressed: a second stage of what the node's bucket holds moves nothing.
    expect((await stage('node-1', [file.sha256, folder.sha256, ...files])).blobs.every((b) => b.copiedBytes === 0)).toBe(true);
    const nodeView = await BlobStore.open(nc, { node: 'node-1', create: false });
    expect(await nodeView.exists('team-a', file.sha256)).toBe(true);

    await expect(stage('node-1', [other.sha256])).rejects.toMatchObject({ code: 'node_data_refused', message: expect.stringMatching(/not_referenced/) });
    await expect(stage('node-2', [file.sha256])).rejects.toMatchObject({ code: 'node_data_refused', message: expect.stringMatching(/not_placed/) });
    expect(await (await BlobStore.open(nc, { node: 'node-2' })).exists('team-a', file.sha256)).toBe(false);

    // Outputs: written by the node into its bucket, copied into the team's by StoreOutputs, gone from the node's.
    const output = await nodeView.uploadBytes('team-a', randomBytes(4000));
    expect(await blobs.exists('team-a', output.sha256)).toBe(false);
    const reply = await requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), { jobId: 'job-nd', team: 'team-a', attemptId: 'job-nd-a1', nodeId: 'node-1', files: [{ path: 'out.bin', sha256: output.sha256, size: output.size }] });
    expect(reply).toMatchObject({ files: 1, totalBytes: output.size, duplicate: false });
    expect(await blobs.exists('team-a', output.sha256)).toBe(true);
    expect(await nodeView.exists('team-a', output.sha256)).toBe(false);

    // Bytes in the node's bucket that do not hash to the address they are reported under: refused, nothing copied.
    const claimed = 'ef'.repeat(32);
    const writer = await ChunkedWriter.open(nc, 'gpunet-node-node-1', { chunkBytes: 1024 * 1024, pipeline: 2, timeoutMs: 10_000 });
    const nuid = writer.nuidOf(`team-a/${claimed}`);
    await writer.publishChunk(writer.chunkSubject(nuid), 0, Buffer.from('attacker bytes'));
    await writer.writeRecord(`team-a/${claimed}`, nuid, { sha256: claimed, size: 14 }, 1);
    const lying = await requestQuery(nc, commandSubject('StoreOutputs'), { jobId: 'job-nd', team: 'team-a', attemptId: 'job-nd-a1-x', nodeId: 'node-1', files: [{ path: 'lie.bin', sha256: claimed, size: 14 }] }).catch((e: unknown) => e);
    expect(lying).toMatchObject({ code: 'validation_failed', issues: [expect.objectContaining({ path: 'files.0' })] });
    expect(await blobs.stat('team-a', claimed)).toBeUndefined();

    // Released there: nothing more is staged for the attempt.
    await release('job-nd');
    await expect(stage('node-1', [file.sha256])).rejects.toMatchObject({ code: 'node_data_refused', message: expect.stringMatching(/released/) });
  });

  it('reads an attempt\'s inputs for the node it is placed on straight from the team\'s bucket, and refuses every other read with an error and no bytes', async () => {
    const bytes = randomBytes(2_500_000); // three chunks
    const file = await upload('team-a', bytes);
    await mkdir(join(dir, 'rd/sub'), { recursive: true });
    await writeFile(join(dir, 'rd/a.bin'), randomBytes(1500));
    await writeFile(join(dir, 'rd/sub/b.bin'), randomBytes(2500));
    const folder = await blobs.uploadFolder('team-a', join(dir, 'rd'));
    const other = await upload('team-a', randomBytes(100)); // the team's, but not this job's
    const theirs = await upload('team-b', randomBytes(200)); // another team's
    await submit('job-rd', [{ name: 'file', ...file }, { name: 'folder', kind: 'folder', sha256: folder.sha256, size: folder.size }]);
    await submit('job-rd-b', [{ name: 'x', ...theirs }], 'team-b');
    const placement = new EventWriter(store, 'placement', systemClock);
    await placement.append('placement-job-job-rd', [
      { type: 'JobPlaced', data: { jobId: 'job-rd', attemptId: 'job-rd-a1', attempt: 1, nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100', placedAt: new Date().toISOString() } },
    ]);
    await placement.append('placement-job-job-rd-b', [
      { type: 'JobPlaced', data: { jobId: 'job-rd-b', attemptId: 'job-rd-b-a1', attempt: 1, nodeId: 'node-2', gpuIndices: [0], gpuModel: 'A100', placedAt: new Date().toISOString() } },
    ]);
    type Answer = { chunk: Buffer; seq: number } | { end: true } | { refused: { code: string; message: string } };
    const read = async (node: string, req: { jobId: string; attemptId: string; sha256: string; seq: number }): Promise<Answer> => {
      const m = await nc.request(`gpunet.data.${node}.read`, JSON.stringify(req), { timeout: 10_000 });
      const seq = m.headers?.get('Nats-Sequence');
      if (seq) return { chunk: Buffer.from(m.data), seq: Number(seq) };
      if (m.headers?.code === 404) return { end: true };
      const reply = JSON.parse(new TextDecoder().decode(m.data)) as { ok: boolean; data?: { end: true }; error?: { code: string; message: string } };
      return reply.ok ? { end: true } : { refused: reply.error! };
    };
    /** The whole blob as a node reads it: the chunk at or after each sequence, one after the other, until none. */
    const readAll = async (node: string, jobId: string, sha256: string): Promise<Buffer> => {
      const parts: Buffer[] = [];
      for (let seq = 0; ; ) {
        const a = await read(node, { jobId, attemptId: `${jobId}-a1`, sha256, seq });
        if ('refused' in a) throw Object.assign(new Error(a.refused.message), a.refused);
        if ('end' in a) return Buffer.concat(parts);
        parts.push(a.chunk);
        seq = a.seq + 1;
      }
    };

    expect((await readAll('node-1', 'job-rd', file.sha256)).equals(bytes)).toBe(true);
    const [entry] = folder.manifest.entries.filter((e) => e.path === 'a.bin');
    expect((await readAll('node-1', 'job-rd', entry!.sha256)).length).toBe(1500);
    // Nothing went through the node's bucket.
    expect(await (await BlobStore.open(nc, { node: 'node-1' })).exists('team-a', file.sha256)).toBe(false);

    const refused = async (node: string, req: { jobId: string; attemptId: string; sha256: string }, reason: RegExp) => {
      const a = await read(node, { ...req, seq: 0 });
      expect(a).toEqual({ refused: expect.objectContaining({ code: 'node_data_refused', message: expect.stringMatching(reason) }) });
    };
    const ask = { jobId: 'job-rd', attemptId: 'job-rd-a1', sha256: file.sha256 };
    await refused('node-2', ask, /read refused \(not_placed\)/); // a job not placed on it (another node publishing on node-1's subject is nats-server's: bus-auth.int)
    await refused('node-1', { ...ask, attemptId: 'job-rd-a2' }, /not_placed/); // an attempt that was never placed
    await refused('node-1', { ...ask, sha256: other.sha256 }, /not_referenced/); // the team's blob, but not in the job's inputs
    await refused('node-1', { ...ask, sha256: theirs.sha256 }, /not_referenced/); // another team's blob
    await refused('node-1', { jobId: 'job-rd-b', attemptId: 'job-rd-b-a1', sha256: theirs.sha256 }, /not_placed/); // another team's job, placed elsewhere
    await refused('node-1', { jobId: 'job-never', attemptId: 'job-never-a1', sha256: file.sha256 }, /unknown_job/);
    await waitFor('the refusals in storage\'s log', async () => storageLog.filter((l) => l.includes('node data request refused') && l.includes('"op":"read"')).length >= 6);

    // The server answers the reply subject with storage's rights: one that is not the node's inbox is refused, with no chunk.
    const elsewhere = nc.subscribe('gpunet.somewhere.else', { max: 1 });
    nc.publish('gpunet.data.node-1.read', JSON.stringify({ ...ask, seq: 0 }), { reply: 'gpunet.somewhere.else' });
    for await (const m of elsewhere) {
      expect(m.headers?.get('Nats-Sequence')).toBeUndefined();
      expect(JSON.parse(new TextDecoder().decode(m.data))).toMatchObject({ ok: false, error: { code: 'validation_failed', message: expect.stringMatching(/node's own inbox/) } });
    }

    // Released there: reads stop (within the admission's short keep).
    await release('job-rd');
    await waitFor('reads of a released attempt to be refused', async () => {
      const a = await read('node-1', { ...ask, seq: 0 });
      return 'refused' in a && /released/.test(a.refused.message);
    });
  }, 30_000);

  it('removes a released job\'s inputs unless another unfinished job of the team needs them', async () => {
    const shared = await upload('team-a', randomBytes(1000));
    const own = await upload('team-a', randomBytes(1000));
    await submit('job-r1', [{ name: 'shared', ...shared }, { name: 'own', ...own }]);
    await submit('job-r2', [{ name: 'shared', ...shared }]);
    await decided('job-r1');
    await decided('job-r2');

    await release('job-r1');
    const [first] = await waitFor('job-r1 removal', async () => ((await removalsOf('job-r1')).length > 0 ? removalsOf('job-r1') : undefined));
    expect(first).toMatchObject({ jobId: 'job-r1', scope: 'inputs', reason: 'job_released', blobs: [own] });
    expect(await blobs.exists('team-a', own.sha256)).toBe(false);
    expect(await blobs.exists('team-a', shared.sha256)).toBe(true);

    await release('job-r2');
    await waitFor('job-r2 removal', async () => (await removalsOf('job-r2')).length > 0);
    expect(await removalsOf('job-r2')).toMatchObject([{ blobs: [shared], reason: 'job_released' }]);
    expect(await blobs.exists('team-a', shared.sha256)).toBe(false);
  });

  it('is delivered only the two events it handles, each on its own durable: a job\'s other events never reach storage (decision 0054)', async () => {
    const jsm = await jetstreamManager(nc);
    const durables = ['storage', 'storage-released'];
    const consumers = () => Promise.all(durables.map((d) => jsm.consumers.info('GPUNET_EVENTS', d)));
    const settled = () => waitFor('storage\'s consumers to acknowledge all they were given', async () => {
      const infos = await consumers();
      return infos.every((c) => c.num_pending === 0 && c.num_ack_pending === 0) && infos;
    });
    const before = await settled();
    const published = (await jsm.streams.info('GPUNET_EVENTS')).state.last_seq;

    const input = await upload('team-a', randomBytes(100));
    await submit('job-filtered', [{ name: 'x', ...input }]);
    await decided('job-filtered');
    await release('job-filtered'); // JobFinished, then ComputeReleased
    await waitFor('job-filtered removal', async () => (await removalsOf('job-filtered')).length > 0);
    // JobSubmitted, InputsStaged, JobFinished, ComputeReleased and DataRemoved all went onto the stream …
    await waitFor('the job\'s five events on the stream', async () => (await jsm.streams.info('GPUNET_EVENTS')).state.last_seq >= published + 5);
    const after = await settled();
    // … and each durable was given one of them: its own type.
    expect(after.map((c, i) => c.delivered.consumer_seq - before[i]!.delivered.consumer_seq)).toEqual([1, 1]);
    expect(after.map((c) => c.config.filter_subject)).toEqual(['gpunet.evt.JobSubmitted.>', 'gpunet.evt.ComputeReleased.>']);
  });

  it('keeps the inputs of an attempt lost with its node for the requeue', async () => {
    const input = await upload('team-a', randomBytes(1000));
    await submit('job-lost', [{ name: 'x', ...input }]);
    await decided('job-lost');
    await release('job-lost', 1, 'node_lost');
    // The same release path, for a marker job: once it is done, job-lost's release was handled too.
    const marker = await upload('team-a', randomBytes(10));
    await submit('job-marker', [{ name: 'x', ...marker }]);
    await decided('job-marker');
    await release('job-marker');
    await waitFor('the marker removal', async () => (await removalsOf('job-marker')).length > 0);

    expect(await removalsOf('job-lost')).toEqual([]);
    expect(await blobs.exists('team-a', input.sha256)).toBe(true);
  });

  it('keeps an input for its keep, then removes it as retention_expired', async () => {
    const kept = await upload('team-a', randomBytes(1000));
    await submit('job-keep', [{ name: 'x', ...kept, keepMs: 1500 }]);
    await decided('job-keep');
    const releasedAt = Date.now();
    await release('job-keep');

    const [removal] = await waitFor('the retention removal', async () => ((await removalsOf('job-keep')).length > 0 ? removalsOf('job-keep') : undefined), 30_000);
    expect(Date.now() - releasedAt).toBeGreaterThanOrEqual(1500);
    expect(removal).toMatchObject({ reason: 'retention_expired', blobs: [kept] });
    expect(await blobs.exists('team-a', kept.sha256)).toBe(false);
  });

  it('an output recorded while the input with its bytes is released is kept; else refused as missing — never recorded and then deleted', async () => {
    const pairs = await Promise.all(
      Array.from({ length: 24 }, async (_, i) => {
        const bytes = await upload('team-a', randomBytes(500 + i));
        await submit(`job-in-${i}`, [{ name: 'x', ...bytes }]);
        await submit(`job-out-${i}`, []);
        return { i, bytes };
      }),
    );
    for (const { i } of pairs) {
      await decided(`job-in-${i}`);
      await decided(`job-out-${i}`);
    }
    // Each input's job is released while another job of the team records an output with the same bytes.
    const answers = await Promise.all(
      pairs.map(async ({ i, bytes }) => {
        const store = requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), {
          jobId: `job-out-${i}`, team: 'team-a', attemptId: `job-out-${i}-a1`, nodeId: 'node-1', files: [{ path: 'copy.bin', ...bytes }], logs: [],
        }).catch((err: unknown) => err as { code: string; issues: { path: string; message: string }[] });
        await release(`job-in-${i}`);
        return { i, bytes, answer: await store };
      }),
    );
    const marker = await upload('team-a', randomBytes(13));
    await submit('job-marker-3', [{ name: 'x', ...marker }]);
    await decided('job-marker-3');
    await release('job-marker-3');
    await waitFor('the marker removal', async () => (await removalsOf('job-marker-3')).length > 0);

    for (const { i, bytes, answer } of answers) {
      const kept = await blobs.exists('team-a', bytes.sha256);
      const recorded = (await storageEvents(`job-out-${i}`)).some((e) => e.type === 'OutputsStored');
      if ('duplicate' in answer) {
        expect({ i, recorded, kept }).toEqual({ i, recorded: true, kept: true });
        expect(await removalsOf(`job-in-${i}`)).toEqual([]);
      } else {
        // The removal came first: the agent is told the blob is missing (it still holds the file and uploads it again).
        expect({ i, recorded, code: answer.code, issue: answer.issues[0]?.message }).toEqual({ i, recorded: false, code: 'validation_failed', issue: expect.stringContaining('is not in the object store') });
      }
    }
  }, 60_000);

  it('keeps a blob while an output, a checkpoint or a kept dataset of the team refers to it, also after a restart; the same bytes in another team are that team\'s own', async () => {
    const outBytes = randomBytes(700);
    const out = await upload('team-a', outBytes);
    const theirs = await upload('team-b', outBytes); // the same bytes, another team's blob
    // A checkpoint as the agent stores it: a folder upload, recorded with the files' total size.
    const cpDir = join(dir, 'files', `cp-${randomUUID()}`);
    await mkdir(cpDir);
    const cpState = randomBytes(900);
    await writeFile(join(cpDir, 'state.bin'), cpState);
    await writeFile(join(cpDir, 'step.txt'), '42');
    const checkpoint = await blobs.uploadFolder('team-a', cpDir);
    const state = await upload('team-a', cpState);
    const dataset = await upload('team-a', randomBytes(600));

    await submit('job-k0', []);
    await submit('job-k1', [{ name: 'x', ...out }, { name: 'y', ...state }, { name: 'z', ...dataset, dataset: 'corpus' }]);
    await submit('job-kb', [{ name: 'x', ...theirs }], 'team-b');
    for (const id of ['job-k0', 'job-k1', 'job-kb']) await decided(id);
    await requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), { jobId: 'job-k0', team: 'team-a', attemptId: 'job-k0-a1', nodeId: 'node-1', files: [{ path: 'model.bin', ...out }], logs: [] });
    await agent.append(
      'execution-node-1-attempt-job-k0-a1',
      [{ type: 'JobCheckpointed', data: { jobId: 'job-k0', attemptId: 'job-k0-a1', nodeId: 'node-1', sequence: 1, sha256: checkpoint.sha256, size: checkpoint.totalBytes, checkpointedAt: new Date().toISOString() } }],
      { correlationId: 'corr-job-k0' },
    );

    // References come from the store: a storage process started after them knows them.
    await storage.stop();
    storage = await start();

    await release('job-k1');
    await release('job-kb');
    await waitFor('team-b\'s removal', async () => (await removalsOf('job-kb')).length > 0);
    const marker = await upload('team-a', randomBytes(17));
    await submit('job-marker-4', [{ name: 'x', ...marker }]);
    await decided('job-marker-4');
    await release('job-marker-4');
    await waitFor('the marker removal', async () => (await removalsOf('job-marker-4')).length > 0);

    expect(await removalsOf('job-k1')).toEqual([]);
    expect({ output: await blobs.exists('team-a', out.sha256), checkpointFile: await blobs.exists('team-a', state.sha256), dataset: await blobs.exists('team-a', dataset.sha256) }).toEqual({ output: true, checkpointFile: true, dataset: true });
    expect(await removalsOf('job-kb')).toMatchObject([{ blobs: [theirs] }]);
    expect(await blobs.exists('team-b', theirs.sha256)).toBe(false);
  }, 30_000);

  it('rebuilds its references from the store after a restart', async () => {
    const shared = await upload('team-a', randomBytes(1000));
    await submit('job-s1', [{ name: 'x', ...shared }]);
    await submit('job-s2', [{ name: 'x', ...shared }]);
    await decided('job-s1');
    await decided('job-s2');
    const output = await upload('team-a', randomBytes(300));
    await submit('job-s0', []);
    await decided('job-s0');
    await requestQuery<StoreOutputsReply>(nc, commandSubject('StoreOutputs'), { jobId: 'job-s0', team: 'team-a', attemptId: 'job-s0-a1', nodeId: 'node-1', files: [{ path: 'out.bin', ...output }], logs: [] });

    await storage.stop();
    const logged = storageLog.length;
    storage = await start();
    // The restart loaded the model's snapshot, saved at the stop, and folded only what came after it (decision 0044).
    const feed = storage.app.get(DataRefsFeed);
    const restartLog = storageLog.slice(logged).map((l) => JSON.parse(l) as { msg: string; events?: number; position?: string });
    const loadedAt = BigInt(restartLog.find((l) => l.msg === 'input references loaded from their snapshot')?.position ?? '0');
    expect(loadedAt).toBeGreaterThan(0n);
    expect(restartLog.find((l) => l.msg === 'input references folded from the store')?.events).toBeLessThan(10);
    // The model as loaded and followed equals a fold of the store from zero up to the same event.
    const text = encodeDataRefs(feed.model);
    const upTo = feed.position;
    expect(upTo).toBeGreaterThanOrEqual(loadedAt);
    const fromZero = initialDataRefs();
    for (const e of await store.readAll({ toPosition: upTo, maxCount: 1_000_000 })) evolve(fromZero, e);
    expect(text).toBe(encodeDataRefs(fromZero));
    // The outputs' and checkpoints' references are not in it: they are rows of their own table
    // (decision 0045), which holds exactly those of a fold from zero up to the position it holds,
    // and the files of each checkpoint's manifest.
    await feed.flushRetained();
    const retained = await (await store.openProjectionTable(RETAINED_TABLE)).query({});
    const refsFromZero = new Set<string>();
    const model = initialDataRefs();
    for (const e of await store.readAll({ toPosition: retained.checkpoint.position, maxCount: 1_000_000 })) {
      for (const ref of retainedBy(model, e)) {
        refsFromZero.add(retainedKey(ref));
        if (ref.kind === 'folder') for (const f of await manifestFiles(blobs, ref.team, ref.sha256, undefined)) refsFromZero.add(retainedKey({ team: ref.team, kind: 'file', sha256: f.sha256 }));
      }
      evolve(model, e);
    }
    expect(refsFromZero).toContain(retainedKey({ team: 'team-a', kind: 'file', sha256: output.sha256 }));
    expect(retained.rows.map((r) => r.key).sort()).toEqual([...refsFromZero].sort());
    expect(text).not.toContain(output.sha256);

    await release('job-s1');
    const marker = await upload('team-a', randomBytes(11));
    await submit('job-marker-2', [{ name: 'x', ...marker }]);
    await decided('job-marker-2');
    await release('job-marker-2');
    await waitFor('the marker removal', async () => (await removalsOf('job-marker-2')).length > 0);
    expect(await removalsOf('job-s1')).toEqual([]); // job-s2, known only from the store, still needs it
    expect(await blobs.exists('team-a', shared.sha256)).toBe(true);

    await release('job-s2');
    await waitFor('job-s2 removal', async () => (await removalsOf('job-s2')).length > 0);
    expect(await blobs.exists('team-a', shared.sha256)).toBe(false);
  }, 30_000);
});
