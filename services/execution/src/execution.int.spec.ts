// The execution agent as a real process against a real nats-server, with the recorder (in this
// process) beside a temporary SQLite store the agent never opens: placements in through the
// node's work subjects, real jobs run, their reports recorded, logs and outputs out; SIGKILL and SIGTERM.
import { BlobStore, nodeBucket } from '#blobs';
import { createIdentityFile } from '#identity';
import { commandSubject, Commands, LOGS_STREAM, logSubject, nodeDataSubject, parseJobSpec, StageForNode, StageForNodeReply, type JobSpec, type ReadForNode, type LogLine, type NodeHeartbeat, type StoreOutputs } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { errorReply, serveQuery } from '#messaging';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { DeliverPolicy, jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { buildAgent, startAgent, type AgentBuild, type AgentProcess } from '../test-fixtures/agent-process.js';
import { recorderService } from './recorder/recorder.service.js';
import { liveGroupMembers } from './run/index.js';

const NODE = 'n-int';
const TEAM = 'team-int';

let nats: TestNatsServer;
let natsDir: string;
let dir: string;
let build: AgentBuild;
let store: EventStore;
let nc: NatsConnection;
let js: JetStreamClient;
let blobs: BlobStore;
let storeOutputs: Subscription;
let nodeData: Subscription;
let nodeReads: Subscription;
const storeOutputsRequests: StoreOutputs[] = [];
let agent: AgentProcess | undefined;
let recorder: RunningService;
let keyFile: string;
let seq = 0;

const workDir = () => join(dir, 'node');

function launchAgent(): AgentProcess {
  agent = startAgent(
    build,
    ['--gpus', '2', '--gpu-model', 'A100', '--node-id', NODE, '--work-dir', workDir()],
    {
      GPUNET_NATS_URL: nats.url,
      GPUNET_NATS_NKEY_FILE: keyFile,
      GPUNET_NVIDIA_SMI: join(dir, 'no-nvidia-smi'),
      GPUNET_HEARTBEAT_MS: '200',
      // Far above anything a loaded machine adds to a stop: a SIGTERM stop that ends within seconds
      // shows the shutdown grace applied, not this one. No job here ignores SIGTERM on a limit or cancel.
      GPUNET_KILL_GRACE_MS: '30000',
      GPUNET_SHUTDOWN_GRACE_MS: '500',
      GPUNET_STORE_OUTPUTS_TIMEOUT_MS: '2000',
    },
    join(dir, 'agent.log'),
  );
  return agent;
}

async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n--- agent log (tail) ---\n${(await agent?.logText())?.split('\n').slice(-25).join('\n')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Appends as `producer` (intake or placement would); the recorder sends the node its work from the store. */
async function record(producer: 'intake' | 'placement', streamId: string, type: 'JobSubmitted' | 'JobPlaced' | 'JobCancelRequested', data: unknown): Promise<RecordedEvent> {
  const writer = new EventWriter(store, producer, systemClock);
  await writer.append(streamId, [{ type, data } as never]);
  const events = await store.readStream(streamId);
  return events[events.length - 1]!;
}

interface Job {
  jobId: string;
  attemptId: string;
  spec: JobSpec;
}

/** Submits a job to the store (as intake) and places it on this node (as placement). */
async function submitAndPlace(rawSpec: unknown, gpuIndices: number[]): Promise<Job> {
  const parsed = parseJobSpec(rawSpec);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const jobId = `job-${++seq}-${Date.now()}`;
  const attemptId = `${jobId}-a1`;
  const now = new Date().toISOString();
  await record('intake', `intake-job-${jobId}`, 'JobSubmitted', { jobId, team: TEAM, spec: parsed.spec, submittedAt: now });
  await record(
    'placement',
    `placement-job-${jobId}`,
    'JobPlaced',
    { jobId, attemptId, attempt: 1, nodeId: NODE, gpuIndices, gpuModel: 'A100', placedAt: now },
  );
  return { jobId, attemptId, spec: parsed.spec };
}

const attemptEvents = (job: Job) => store.readStream(`execution-${NODE}-attempt-${job.attemptId}`);
const eventOf = async (job: Job, type: string) => (await attemptEvents(job)).find((e) => e.type === type);
const released = (job: Job, timeoutMs?: number) => waitFor(`ComputeReleased of ${job.attemptId}`, () => eventOf(job, 'ComputeReleased'), timeoutMs);
const runRoot = (job: Job) => join(workDir(), 'runs', job.jobId, job.attemptId);
/** The run directory (and the job's, with its only attempt) goes right after ComputeReleased is recorded. */
const runDirRemoved = (job: Job) => waitFor(`run directory of ${job.attemptId} removed`, () => !existsSync(join(workDir(), 'runs', job.jobId)), 20_000);

async function logLines(jobId: string, atLeast: number): Promise<LogLine[]> {
  const consumer = await js.consumers.get(LOGS_STREAM, { filter_subjects: logSubject(TEAM, jobId, NODE), deliver_policy: DeliverPolicy.All });
  const lines: LogLine[] = [];
  const batch = await consumer.fetch({ max_messages: Math.max(atLeast, 1000), expires: 2_000 });
  for await (const m of batch) {
    lines.push(m.json<LogLine>());
    if (lines.length >= atLeast && m.info.pending === 0) break;
  }
  return lines;
}

const sleepScript = (seconds: number) => ({
  work: { kind: 'script', script: { inline: `#!/bin/bash\necho started\nsleep ${seconds} &\nwait\n` } },
  request: { gpus: 1, timeLimit: '5m' },
});

beforeAll(async () => {
  natsDir = await mkdtemp(join(tmpdir(), 'gpunet-exec-int-nats-'));
  [nats, dir, build] = await Promise.all([startNatsServer({ storeDir: natsDir }), mkdtemp(join(tmpdir(), 'gpunet-exec-int-')), buildAgent()]);
  const storeUrl = `sqlite:${join(dir, 'events.db')}`;
  keyFile = join(dir, 'keys', `node-${NODE}.nk`);
  const key = await createIdentityFile(keyFile);
  // The recorder leads its role (decision 0029). The bus goes away below for longer than the
  // default lease; run in process (startService, which does not start again as a standby as
  // runServiceMain does), its lease must outlast that outage.
  recorder = await startService({
    ...recorderService,
    env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'silent', GPUNET_ENROLL_NODES: `${NODE}=${key.publicKey}`, GPUNET_LEASE_MS: '120000' },
  });
  store = await openEventStore(storeUrl);
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  blobs = await BlobStore.open(nc);
  // Storage is not running here: a tiny stand-in answers StoreOutputs and the node's data requests
  // the way their contracts say (copies between the team's bucket and the node's own, reads of the
  // team's bucket answered by nats-server on the node's reply subject; without checks).
  const nodeBlobs = await BlobStore.open(nc, { node: NODE });
  storeOutputs = serveQuery(nc, commandSubject('StoreOutputs'), { request: Commands.StoreOutputs.schema, response: Commands.StoreOutputs.replySchema }, async (req) => {
    const r = req as StoreOutputs;
    storeOutputsRequests.push(r);
    for (const b of [...r.files, ...r.logs]) await blobs.copyFrom(nodeBlobs, r.team, b.sha256, { size: b.size });
    return { jobId: r.jobId, attemptId: r.attemptId, files: r.files.length, totalBytes: r.files.reduce((n, f) => n + f.size, 0), duplicate: false };
  });
  nodeData = serveQuery(nc, nodeDataSubject(NODE, 'stage'), { request: StageForNode, response: StageForNodeReply }, async (req) => {
    const r = req as StageForNode;
    await nodeBlobs.ensureBucket(TEAM);
    const copied = await Promise.all(r.blobs.map((sha) => nodeBlobs.copyFrom(blobs, TEAM, sha)));
    return { bucket: nodeBucket(NODE), team: TEAM, blobs: copied.map((c) => ({ sha256: c.sha256, size: c.size, copiedBytes: c.copiedBytes })) };
  });
  nodeReads = nc.subscribe(nodeDataSubject(NODE, 'read'), {
    callback: (_err, msg) =>
      void (async () => {
        const r = JSON.parse(new TextDecoder().decode(msg.data)) as ReadForNode;
        try {
          const source = await blobs.chunkSource(TEAM, r.sha256);
          if (source.chunks > 0) source.forward(r.seq, msg.reply!);
          else msg.respond(JSON.stringify({ ok: true, data: { end: true } }));
        } catch (err) {
          msg.respond(JSON.stringify(errorReply(err)));
        }
      })(),
  });
  launchAgent();
  // The agent compiles nothing but starts a Node process and probes the machine: at load 12 that
  // alone took over 15 s.
  await waitFor('NodeRegistered', async () => (await store.readStream(`execution-${NODE}-node`)).length > 0, 60_000);
}, 90_000);

afterAll(async () => {
  agent?.kill('SIGKILL');
  await agent?.exited;
  storeOutputs?.unsubscribe();
  nodeData?.unsubscribe();
  nodeReads?.unsubscribe();
  await recorder?.stop();
  await nc?.close();
  await store?.close();
  await nats?.stop();
  await rm(natsDir, { recursive: true, force: true });
  await build?.remove();
  await rm(dir, { recursive: true, force: true });
});

describe('execution agent', () => {
  it('registers its declared GPUs and heartbeats them as free', async () => {
    const [registered] = await store.readStream(`execution-${NODE}-node`);
    expect(registered!.data).toMatchObject({ nodeId: NODE, simulated: true, gpus: [{ index: 0, model: 'A100' }, { index: 1, model: 'A100' }], heartbeatIntervalMs: 200 });
    const sub = nc.subscribe(`gpunet.hb.${NODE}`, { max: 2 });
    const beats: NodeHeartbeat[] = [];
    for await (const m of sub) beats.push(m.json<NodeHeartbeat>());
    expect(beats[1]!.sequence).toBe(beats[0]!.sequence + 1);
    expect(beats[0]).toMatchObject({ nodeId: NODE, freeGpuIndices: [0, 1], runningAttempts: [] });
  });

  it('stages inputs, holds, runs, streams logs, finishes, hands outputs over and releases', async () => {
    await writeFile(join(dir, 'train.sh'), '#!/bin/bash\nset -e\necho "gpus=$CUDA_VISIBLE_DEVICES"\nwc -c < "$GPUNET_INPUT_DIR/data/numbers.txt"\necho oops >&2\nmkdir -p "$GPUNET_OUTPUT_DIR/model"\necho weights > "$GPUNET_OUTPUT_DIR/model/w.bin"\necho skip > "$GPUNET_OUTPUT_DIR/notes.tmp"\n');
    await writeFile(join(dir, 'numbers.txt'), '1 2 3 4 5\n');
    const script = await blobs.uploadFile(TEAM, join(dir, 'train.sh'));
    const data = await blobs.uploadFile(TEAM, join(dir, 'numbers.txt'));
    const job = await submitAndPlace(
      {
        work: { kind: 'script', script: { path: 'code/train.sh' } },
        data: {
          inputs: [
            { name: 'code', path: 'code/train.sh', sha256: script.sha256, size: script.size },
            { name: 'numbers', path: 'data/numbers.txt', sha256: data.sha256, size: data.size, keep: '1h' },
          ],
        },
        request: { gpus: 1, timeLimit: '1m' },
        outputs: { globs: ['model/**'] },
      },
      [1],
    );
    await released(job);
    const events = await attemptEvents(job);
    expect(events.map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
    const [held, started, finished] = events.map((e) => e.data as Record<string, unknown>);
    expect(held).toMatchObject({ gpuIndices: [1], gpus: 1, gpuModel: 'A100', nodeId: NODE });
    expect(finished).toMatchObject({ outcome: 'completed', exitCode: 0, signal: null });
    expect(String(held!.heldAt) <= String(started!.startedAt) && String(started!.startedAt) <= String(finished!.finishedAt)).toBe(true);
    expect(events.every((e) => e.metadata.producer === 'execution' && e.metadata.jobId === job.jobId)).toBe(true);

    const lines = await logLines(job.jobId, 3);
    expect(lines.filter((l) => l.stream === 'stdout').map((l) => l.line)).toEqual(['gpus=1', '10']);
    expect(lines.find((l) => l.stream === 'stderr')).toMatchObject({ line: 'oops', attemptId: job.attemptId });

    const request = storeOutputsRequests.find((r) => r.attemptId === job.attemptId)!;
    expect(request).toMatchObject({ jobId: job.jobId, team: TEAM, nodeId: NODE, truncated: false });
    expect(request.files.map((f) => f.path)).toEqual(['model/w.bin']);
    const out = join(dir, 'w.bin');
    await blobs.downloadTo(TEAM, request.files[0]!.sha256, out);
    expect(await readFile(out, 'utf8')).toBe('weights\n');
    expect(request.logs.map((l) => l.stream).sort()).toEqual(['stderr', 'stdout']);
    const stdoutLog = join(dir, 'stdout.log');
    await blobs.downloadTo(TEAM, request.logs.find((l) => l.stream === 'stdout')!.sha256, stdoutLog);
    expect(await readFile(stdoutLog, 'utf8')).toBe('gpus=1\n10\n');

    await runDirRemoved(job);
    // The dataset asked to be kept (keep: 1h): it stays in the node cache for the next job on this node.
    expect(existsSync(join(workDir(), 'cache', TEAM, data.sha256))).toBe(true);
  });

  it('stops a job at its time limit: outcome timeout, billed only up to the kill', async () => {
    const job = await submitAndPlace({ work: { kind: 'script', script: { inline: 'echo tick\nsleep 600\n' } }, request: { gpus: 1, timeLimit: '1s' } }, [0]);
    await released(job);
    const held = (await eventOf(job, 'ComputeHeld'))!.data as { heldAt: string };
    const finished = (await eventOf(job, 'JobFinished'))!.data as { outcome: string; finishedAt: string; signal: string | null };
    expect(finished.outcome).toBe('timeout');
    const billedMs = Date.parse(finished.finishedAt) - Date.parse(held.heldAt);
    expect(billedMs).toBeGreaterThanOrEqual(1_000);
    expect(billedMs).toBeLessThan(30_000); // sleep dies on the limit's SIGTERM: far from its ten minutes, however loaded the machine
  });

  it('refuses a placement on a GPU held here, and stops a running job on cancel', async () => {
    const running = await submitAndPlace(sleepScript(60), [0]);
    await waitFor('JobStarted', () => eventOf(running, 'JobStarted'));
    const beat = await waitFor('a heartbeat showing the attempt', async () => {
      const sub = nc.subscribe(`gpunet.hb.${NODE}`, { max: 1 });
      for await (const m of sub) return m.json<NodeHeartbeat>().runningAttempts.length > 0 ? m.json<NodeHeartbeat>() : undefined;
      return undefined;
    });
    expect(beat).toMatchObject({ freeGpuIndices: [1], runningAttempts: [{ jobId: running.jobId, attemptId: running.attemptId }] });
    const clash = await submitAndPlace(sleepScript(1), [0]);
    await released(clash);
    expect((await attemptEvents(clash)).map((e) => e.type)).toEqual(['JobFinished', 'ComputeReleased']);
    expect((await eventOf(clash, 'JobFinished'))!.data).toMatchObject({ outcome: 'failed', exitCode: null, message: expect.stringMatching(/GPU 0 is held by attempt/) });

    await record('intake', `intake-job-${running.jobId}`, 'JobCancelRequested', { jobId: running.jobId, team: TEAM, reason: 'changed my mind', requestedAt: new Date().toISOString() });
    await released(running);
    expect((await eventOf(running, 'JobFinished'))!.data).toMatchObject({ outcome: 'cancelled', message: 'changed my mind' });
  });

  it('a cancel that arrives before its placement: finished without holding compute', async () => {
    const parsed = parseJobSpec(sleepScript(60));
    if (!parsed.ok) throw new Error('bad spec');
    const jobId = `job-${++seq}-early-cancel`;
    const job: Job = { jobId, attemptId: `${jobId}-a1`, spec: parsed.spec };
    await record('intake', `intake-job-${jobId}`, 'JobSubmitted', { jobId, team: TEAM, spec: parsed.spec, submittedAt: new Date().toISOString() });
    await record('intake', `intake-job-${jobId}`, 'JobCancelRequested', { jobId, team: TEAM, requestedAt: new Date().toISOString() });
    await record('placement', `placement-job-${jobId}`, 'JobPlaced', { jobId, attemptId: job.attemptId, attempt: 1, nodeId: NODE, gpuIndices: [1], gpuModel: 'A100', placedAt: new Date().toISOString() });
    await released(job);
    expect((await attemptEvents(job)).map((e) => e.type)).toEqual(['JobFinished', 'ComputeReleased']);
    expect((await eventOf(job, 'JobFinished'))!.data).toMatchObject({ outcome: 'cancelled' });
  });

  it('SIGKILLed mid-run and restarted: the job ends node_lost and released, its process group is gone, a placement made while it was down runs when it is back', async () => {
    const job = await submitAndPlace(sleepScript(120), [1]);
    await waitFor('JobStarted', () => eventOf(job, 'JobStarted'));
    const marker = JSON.parse(await readFile(join(runRoot(job), 'process.json'), 'utf8')) as { pgid: number };
    // Past its `echo` (the shell and its `sleep` both run): a job that writes to its output after
    // the agent died gets SIGPIPE, and on a busy machine the kill can come before the echo.
    await waitFor('the job\'s shell and its sleep', async () => (await liveGroupMembers(marker.pgid)).length >= 2);

    agent!.kill('SIGKILL');
    await agent!.exited;
    // The job's group outlives the agent (own session): the restarted agent must kill it.
    expect(await liveGroupMembers(marker.pgid)).not.toEqual([]);
    // Placed while the agent is down: it waits in the node's work consumer.
    const unseen = await submitAndPlace(sleepScript(1), [0]);

    launchAgent();
    await released(job);
    expect((await attemptEvents(job)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
    expect((await eventOf(job, 'JobFinished'))!.data).toMatchObject({ outcome: 'node_lost', exitCode: null, message: expect.stringMatching(/^agent restarted/) });
    expect(await liveGroupMembers(marker.pgid)).toEqual([]);
    await runDirRemoved(job);

    await released(unseen);
    expect((await attemptEvents(unseen)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
    expect((await eventOf(unseen, 'JobFinished'))!.data).toMatchObject({ outcome: 'completed' });
  }, 45_000);

  it('keeps no store of the control plane: its environment has no store URL, its journal is its own (0600 in 0700)', async () => {
    const environ = await readFile(`/proc/${agent!.child.pid}/environ`, 'utf8');
    expect(environ).not.toMatch(/GPUNET_STORE_URL|GPUNET_CHAIN_KEY/);
    const journal = join(workDir(), 'journal');
    expect((await stat(journal)).mode & 0o777).toBe(0o700);
    expect((await stat(join(journal, 'journal.db'))).mode & 0o777).toBe(0o600);
    expect(existsSync(join(dir, 'events.db'))).toBe(true); // the control plane's, which the agent never opened:
    const open = await readdir(`/proc/${agent!.child.pid}/fd`).then((fds) => Promise.all(fds.map((fd) => readlink(`/proc/${agent!.child.pid}/fd/${fd}`).catch(() => ''))));
    expect(open.filter((f) => f.startsWith(join(dir, 'events.db')))).toEqual([]);
    expect(open.some((f) => f.startsWith(join(journal, 'journal.db')))).toBe(true);
  });

  it('loses the bus while jobs finish: the reports wait in its journal and, once the bus is back, each arrives exactly once', async () => {
    const jobs = [await submitAndPlace(sleepScript(2), [0]), await submitAndPlace(sleepScript(2), [1])];
    for (const job of jobs) await waitFor(`JobStarted of ${job.attemptId}`, () => eventOf(job, 'JobStarted'));
    const port = nats.port;
    await nats.stop();
    // Both end while nats-server is down: the agent says so in its log; the store has no end yet.
    await waitFor('both jobs to finish on the node', async () => {
      const text = (await agent!.logText()).split('\n').filter((l) => l.includes('"msg":"job finished"'));
      return jobs.every((j) => text.some((l) => l.includes(j.attemptId)));
    }, 20_000);
    for (const job of jobs) expect(await eventOf(job, 'JobFinished')).toBeUndefined();
    nats = await startNatsServer({ storeDir: natsDir, port });
    for (const job of jobs) await released(job, 60_000);
    for (const job of jobs) {
      const events = await attemptEvents(job);
      expect(events.map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
      expect(new Set(events.map((e) => e.eventId)).size).toBe(4);
      expect((events[2]!.data as { outcome: string }).outcome).toBe('completed');
      // Each carries the node's signature, as reported.
      expect(events.every((e) => typeof (e.metadata as { report?: { signature?: string } }).report?.signature === 'string')).toBe(true);
    }
    expect((await store.readStream('execution-recorder-refused')).length).toBe(0);
  }, 90_000);

  it('SIGTERM: running jobs end node_lost (agent stopped) and are released, and the agent exits 0 within seconds, even if a job ignores SIGTERM', async () => {
    await waitFor('NodeRegistered after restart', async () => (await store.readStream(`execution-${NODE}-node`)).length >= 2);
    const job = await submitAndPlace({ work: { kind: 'script', script: { inline: 'trap "" TERM\nsleep 120 &\nwait\nwait\n' } }, request: { gpus: 1, timeLimit: '5m' } }, [0]);
    await waitFor('JobStarted', () => eventOf(job, 'JobStarted'));
    const marker = JSON.parse(await readFile(join(runRoot(job), 'process.json'), 'utf8')) as { pgid: number };
    const t0 = Date.now();
    agent!.kill('SIGTERM');
    expect(await agent!.exited).toBe(0);
    // Well below the 30 s kill grace of a time limit or cancel: the shutdown grace (500 ms) applied.
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect((await attemptEvents(job)).map((e) => e.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
    expect((await eventOf(job, 'JobFinished'))!.data).toMatchObject({ outcome: 'node_lost', message: 'agent stopped' });
    expect(await liveGroupMembers(marker.pgid)).toEqual([]);
    await runDirRemoved(job);
  }, 30_000);
});
