/**
 * Attacks on the node/recorder split, on a real network (`gpunet up`, two agents), by someone
 * holding node-A's key (its seed file from the data directory) and a connection to NATS:
 * forging the end of an attempt of node-B, replaying an old report of node-B, forging outputs
 * for node-B's job, and publishing a JobFinished straight on the bus. Every report is refused
 * and recorded as NodeReportRefused; nothing is billed from any of it. And the agents hold no
 * store of the control plane: not in their environment, not in their work directory.
 *
 * Then node-A's own NATS identity (its key file, the connection the agent makes) against data
 * that is not its own (decision 0025): a team's bucket, node-B's bucket, storage's staging for an
 * attempt of node-B, node-B's job's live log. nats-server refuses what the subjects forbid (in
 * `logs/nats.log`), storage refuses what the store says is not node-A's (in storage's log), intake
 * drops log lines from a node the job was not placed on (in intake's log).
 */
import {
  NodeReportReply,
  outputsReportSubject,
  outputsSigningBytes,
  reportSigningBytes,
  reportSubject,
  type JobFinished,
  type NodeOutputsReport,
  type NodeReport,
  type NodeReportRefused,
  type OutputsStored,
  type UsageRecorded,
  logSubject,
  nodeDataSubject,
  type LogLine,
} from '#contracts';
import { BlobStore, blobBucket, nodeBucket } from '#blobs';
import { loadIdentityFile, natsAuthOptions, newIdentity, signBytes } from '#identity';
import { encodeEvent, requestQuery } from '#messaging';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';
import { OFF_CONTRACT_HEADER } from '../support/bus/bus-contract.js';

let net: TestNetwork | undefined;
let nc: NatsConnection;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
/** Reports node-B really sent, as a sniffer on the bus saw them. */
const captured: NodeReport[] = [];

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 2 });
  // Full bus rights (the operator's), so these attacks test the recorder's own checks: nats-server
  // would already stop a node's identity from sending on another node's subject or sniffing
  // reports (test/attack/bus.e2e.spec.ts, libs/bus-auth).
  nc = await net.nats();
  const sub = nc.subscribe('gpunet.report.*.event');
  void (async () => {
    for await (const m of sub) captured.push(m.json<NodeReport>());
  })();
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
  await net?.stop();
}, 60_000);

const opened: NatsConnection[] = [];
/** A connection with node `nodeId`'s own credentials, as its agent makes it. */
async function asNode(nodeId: string): Promise<NatsConnection> {
  const c = await connect({ ...(await natsAuthOptions(join(network().dataDir, 'keys', `node-${nodeId}.nk`))), servers: network().natsUrl, noAsyncTraces: true, inboxPrefix: `_INBOX_node-${nodeId}` });
  opened.push(c);
  return c;
}
const logText = (name: string) => readFileSync(join(network().dataDir, 'logs', `${name}.log`), 'utf8');
const logged = (name: string, pattern: RegExp) => until(`${name}.log to show ${pattern}`, () => pattern.test(logText(name)), { timeoutMs: 10_000, intervalMs: 50 });
const DENIED = /Permissions Violation|timeout|TIMEOUT/i;

const refusals = async () => (await network().events({ types: ['NodeReportRefused'] })).map((e) => e.data as NodeReportRefused);

async function keyOf(nodeId: string) {
  return loadIdentityFile(join(network().dataDir, 'keys', `node-${nodeId}.nk`));
}

describe('a node holding its own key against another node\'s attempts', () => {
  let jobId: string;
  let attemptId: string;
  let victim: string;
  let attacker: string;

  it(
    'forges a JobFinished for an attempt of the other node: refused, recorded, not billed',
    e2e(async () => {
      const submitted = await network().client().submit(scriptJob('echo hello > "$GPUNET_OUTPUT_DIR/result.txt"\nsleep 3\n', { gpus: 1, globs: ['**'] }));
      jobId = submitted.jobId;
      const placed = await until('the job to be placed', async () => (await network().events({ types: ['JobPlaced'], jobId }))[0]);
      victim = (placed.data as { nodeId: string }).nodeId;
      attemptId = (placed.data as { attemptId: string }).attemptId;
      attacker = network().nodeIds.find((n) => n !== victim)!;
      const stream = `execution-${victim}-attempt-${attemptId}`;
      await until('the victim\'s JobStarted to be recorded', async () => (await (await network().store()).readStream(stream)).some((e) => e.type === 'JobStarted'));
      const key = await keyOf(attacker);
      const finishedAt = new Date().toISOString();
      let forgedSeq = 1_000;
      const forge = (nodeId: string, streamId: string, data: JobFinished): NodeReport => {
        const body: Omit<NodeReport, 'signature'> = {
          nodeId,
          journal: 'forged',
          seq: String(++forgedSeq),
          event: { streamId, eventId: randomUUID(), type: 'JobFinished', data, metadata: { correlationId: 'x', causationId: 'x', producer: 'execution', occurredAt: finishedAt } },
        };
        return { ...body, signature: signBytes(key, reportSigningBytes(body)) };
      };
      const end: JobFinished = { jobId, attemptId, nodeId: victim, outcome: 'completed', exitCode: 0, signal: null, finishedAt } as JobFinished;
      const send = (subjectNode: string, r: NodeReport) => requestQuery<NodeReportReply>(nc, reportSubject(subjectNode), r, { response: NodeReportReply });
      // Into the victim's stream, sent as the attacker; then signed by the attacker but sent on the victim's subject.
      expect(await send(attacker, forge(attacker, stream, end))).toMatchObject({ status: 'refused', reason: 'other_node' });
      expect(await send(victim, forge(victim, stream, end))).toMatchObject({ status: 'refused', reason: 'bad_signature' });
      // As its own attempt (same attempt id, its own stream): the attempt was not placed on it.
      expect(await send(attacker, forge(attacker, `execution-${attacker}-attempt-${attemptId}`, { ...end, nodeId: attacker }))).toMatchObject({ status: 'refused', reason: 'other_node' });

      const mine = (await refusals()).filter((r) => r.jobId === jobId);
      expect(mine.map((r) => [r.nodeId, r.reason])).toEqual([[attacker, 'other_node'], [victim, 'bad_signature'], [attacker, 'other_node']]);

      // The real run ends on its own; its bill runs from its real hold to its real end (≥ 3 s), not to the forged end.
      const settled = await settle(network(), [jobId]);
      const ends = settled.events.filter((e) => e.type === 'JobFinished');
      expect(ends).toHaveLength(1);
      expect(ends[0]!.streamId).toBe(stream);
      expect(await (await network().store()).readStream(`execution-${attacker}-attempt-${attemptId}`)).toEqual([]);
      const usage = await until('the usage line', async () => (await network().events({ types: ['UsageRecorded'], jobId }))[0]);
      expect((usage.data as UsageRecorded).billableMs).toBeGreaterThanOrEqual(3_000);
      expect((usage.data as UsageRecorded).finishedAt).toBe((ends[0]!.data as JobFinished).finishedAt);
    }),
    90_000,
  );

  it(
    'replays an old report of the other node, byte for byte: refused and recorded',
    e2e(async () => {
      const old = captured.find((r) => r.nodeId === victim && r.event.type === 'ComputeHeld' && (r.event.data as { attemptId?: string }).attemptId === attemptId);
      expect(old).toBeDefined();
      const reply = await requestQuery<NodeReportReply>(nc, reportSubject(victim), old, { response: NodeReportReply });
      expect(reply).toMatchObject({ status: 'refused', reason: 'replayed' });
      expect((await refusals()).some((r) => r.reason === 'replayed' && r.eventId === old!.event.eventId)).toBe(true);
      const stream = await (await network().store()).readStream(`execution-${victim}-attempt-${attemptId}`);
      expect(stream.filter((e) => e.type === 'ComputeHeld')).toHaveLength(1);
      expect((await network().events({ types: ['UsageRecorded'], jobId }))).toHaveLength(1);
    }),
    60_000,
  );

  it(
    'forges an outputs report for the other node\'s job (another team\'s data): refused, recorded, the outputs unchanged',
    e2e(async () => {
      const before = (await network().events({ types: ['OutputsStored'], jobId })).map((e) => e.data as OutputsStored);
      expect(before).toHaveLength(1);
      const key = await keyOf(attacker);
      const fake = { path: 'result.txt', sha256: 'a'.repeat(64), size: 6 };
      const forged = (nodeId: string, team: string): NodeOutputsReport => {
        const unsigned = { nodeId, outputs: { jobId, team, attemptId, nodeId, files: [fake], truncated: false, rejected: [], logs: [] } };
        return { ...unsigned, signature: signBytes(key, outputsSigningBytes(unsigned)) };
      };
      const send = (subjectNode: string, r: NodeOutputsReport) => requestQuery(nc, outputsReportSubject(subjectNode), r).then(() => 'accepted', (err: Error) => err.message);
      expect(await send(attacker, forged(attacker, network().team))).toMatch(/outputs refused \(other_node\)/);
      expect(await send(attacker, forged(attacker, 'team-attacker'))).toMatch(/outputs refused \(other_node\)/);
      expect(await send(victim, forged(victim, network().team))).toMatch(/outputs refused \(bad_signature\)/);
      const mine = (await refusals()).filter((r) => r.jobId === jobId && r.type === 'StoreOutputs');
      expect(mine.map((r) => r.reason)).toEqual(['other_node', 'other_node', 'bad_signature']);
      const after = (await network().events({ types: ['OutputsStored'], jobId })).map((e) => e.data as OutputsStored);
      expect(after).toEqual(before);
      expect(after[0]!.files.map((f) => f.sha256)).not.toContain(fake.sha256);
    }),
    60_000,
  );

  it(
    'publishes a JobFinished straight on the bus for a running job: the ledger bills nothing from it',
    e2e(async () => {
      const submitted = await network().client().submit(scriptJob('sleep 3\n', { gpus: 1 }));
      const placed = await until('the job to be placed', async () => (await network().events({ types: ['JobPlaced'], jobId: submitted.jobId }))[0]);
      const p = placed.data as { nodeId: string; attemptId: string };
      const stream = `execution-${p.nodeId}-attempt-${p.attemptId}`;
      await until('ComputeHeld recorded', async () => (await (await network().store()).readStream(stream)).some((e) => e.type === 'ComputeHeld'));
      const data: JobFinished = { jobId: submitted.jobId, attemptId: p.attemptId, nodeId: p.nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date().toISOString() } as JobFinished;
      const forged = encodeEvent({ eventId: randomUUID(), type: 'JobFinished', data, metadata: { correlationId: 'x', causationId: 'x', producer: 'execution', occurredAt: data.finishedAt, jobId: submitted.jobId }, streamId: stream });
      forged.headers.set(OFF_CONTRACT_HEADER, 'a forged event: not recorded in the store'); // the bus check counts it apart
      await jetstream(nc).publish(forged.subject, forged.payload, { headers: forged.headers, msgID: forged.msgID });
      const settled = await settle(network(), [submitted.jobId]);
      const end = settled.events.find((e) => e.type === 'JobFinished')!;
      expect(end.eventId).not.toBe(forged.msgID);
      const lines = (await network().events({ types: ['UsageRecorded'], jobId: submitted.jobId })).map((e) => e.data as UsageRecorded);
      expect(lines).toHaveLength(1);
      expect(lines[0]!.finishedAt).toBe((end.data as JobFinished).finishedAt);
      expect(lines[0]!.billableMs).toBeGreaterThanOrEqual(3_000);
    }),
    60_000,
  );
});

describe('enrollment', () => {
  it(
    'a node enrolled by nobody is refused; the operator enrolls it with `gpunet nodes enroll` and `gpunet nodes list` shows it',
    e2e(async () => {
      const stranger = newIdentity();
      const body: Omit<NodeReport, 'signature'> = {
        nodeId: 'node-stranger',
        journal: 'j',
        seq: '1',
        event: { streamId: 'execution-node-stranger-node', eventId: randomUUID(), type: 'NodeRegistered', data: { nodeId: 'node-stranger', gpus: [{ index: 0, model: 'sim-gpu' }], simulated: true, networkIsolation: false, heartbeatIntervalMs: 1000, registeredAt: new Date().toISOString() }, metadata: { correlationId: 'x', causationId: 'x', producer: 'execution', occurredAt: new Date().toISOString() } },
      };
      const report = { ...body, signature: signBytes(stranger, reportSigningBytes(body)) };
      expect(await requestQuery<NodeReportReply>(nc, reportSubject('node-stranger'), report, { response: NodeReportReply })).toMatchObject({ status: 'refused', reason: 'unknown_node' });
      expect((await refusals()).some((r) => r.nodeId === 'node-stranger' && r.reason === 'unknown_node')).toBe(true);

      const cli = async (args: string[]) => {
        const out = new PassThrough();
        let text = '';
        out.on('data', (c: Buffer) => (text += c.toString()));
        const code = await runCli([...args, '--data-dir', network().dataDir, '--json'], { stdout: out, stderr: new PassThrough(), env: process.env, cwd: network().dataDir });
        return { code, json: JSON.parse(text) as unknown };
      };
      expect(await cli(['nodes', 'enroll', 'node-stranger', '--public-key', stranger.publicKey, '--by', 'attack test'])).toEqual({ code: 0, json: { nodeId: 'node-stranger', publicKey: stranger.publicKey, changed: true } });
      const listed = await cli(['nodes', 'list']);
      expect(listed.code).toBe(0);
      expect((listed.json as { nodes: { nodeId: string; enrolledBy: string }[] }).nodes.map((n) => [n.nodeId, n.enrolledBy])).toEqual([
        ['node-1', 'gpunet up'],
        ['node-2', 'gpunet up'],
        ['node-stranger', 'attack test'],
      ]);
      expect(await requestQuery<NodeReportReply>(nc, reportSubject('node-stranger'), { ...report }, { response: NodeReportReply })).toMatchObject({ status: 'accepted' });
    }),
    30_000,
  );
});

describe('what an agent holds', () => {
  it(
    'a job on the node cannot read the node\'s journal or its key',
    e2e(async () => {
      // The data directory is a mkdtemp (0700): open it for passing and restart the agents, so
      // jobs run as their own users (as isolation.e2e does).
      await chmod(network().dataDir, 0o711);
      for (const n of network().nodeIds) {
        await network().kill(n, 'SIGTERM');
        await network().restart(n);
      }
      // Either node may run it: both journals and both keys must stay shut.
      const journals = network().nodeIds.map((n) => join(network().dataDir, 'nodes', n, 'journal', 'journal.db')).join(' ');
      const keysFiles = network().nodeIds.map((n) => join(network().dataDir, 'keys', `node-${n}.nk`)).join(' ');
      const script = [
        'for j in $JOURNALS; do if cat "$j" > /dev/null 2>&1; then echo "READ-JOURNAL"; else echo "journal-denied"; fi; done',
        'for j in $JOURNALS; do if ls "$(dirname "$j")" > /dev/null 2>&1; then echo "LISTED"; else echo "list-denied"; fi; done',
        'for k in $KEYS; do if cat "$k" > /dev/null 2>&1; then echo "READ-KEY"; else echo "key-denied"; fi; done',
        'id -u',
      ].join('\n');
      const submitted = await network().client().submit(scriptJob(script, { gpus: 1, env: { JOURNALS: journals, KEYS: keysFiles } }));
      await settle(network(), [submitted.jobId]);
      const view = await network().client().getJob(submitted.jobId);
      expect(view.state).toBe('completed');
      const logs: string[] = [];
      for await (const line of network().client().logs(submitted.jobId)) logs.push(line.line);
      expect(logs.filter((l) => l === 'journal-denied')).toHaveLength(2);
      expect(logs.filter((l) => l === 'list-denied')).toHaveLength(2);
      expect(logs.filter((l) => l === 'key-denied')).toHaveLength(2);
      expect(logs.join('\n')).not.toMatch(/READ-JOURNAL|LISTED|READ-KEY/);
      expect(logs).not.toContain('0'); // it ran as a job user, not as the agent's root
    }),
    120_000,
  );

  it(
    'has no store URL or chain key in its environment and no control-plane store in its work dir; its journal is 0600 in 0700',
    e2e(async () => {
      for (const nodeId of network().nodeIds) {
        const environ = (await readFile(`/proc/${network().pid(nodeId)}/environ`, 'utf8')).split('\0');
        expect(environ.filter((v) => /^GPUNET_(STORE_URL|CHAIN_KEY)=/.test(v))).toEqual([]);
        expect(environ).toContain(`GPUNET_NATS_NKEY_FILE=${join(network().dataDir, 'keys', `node-${nodeId}.nk`)}`);
        const workDir = join(network().dataDir, 'nodes', nodeId);
        const files: string[] = [];
        const walk = async (d: string): Promise<void> => {
          for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
            if (e.isDirectory()) await walk(join(d, e.name));
            else files.push(join(d, e.name));
          }
        };
        await walk(workDir);
        const databases = files.filter((f) => /\.(db|sqlite)(-wal|-shm)?$/.test(f));
        expect(databases.every((f) => f.startsWith(join(workDir, 'journal', 'journal.db')))).toBe(true);
        expect(files.some((f) => f.endsWith('events.db'))).toBe(false);
        expect((await stat(join(workDir, 'journal'))).mode & 0o777).toBe(0o700);
        expect((await stat(join(workDir, 'journal', 'journal.db'))).mode & 0o777).toBe(0o600);
        // Its open files: the journal, never the control plane's store.
        const fds = await readdir(`/proc/${network().pid(nodeId)}/fd`);
        const open = await Promise.all(fds.map((fd) => readlink(`/proc/${network().pid(nodeId)}/fd/${fd}`).catch(() => '')));
        expect(open.filter((f) => f.startsWith(join(network().dataDir, 'events.db')))).toEqual([]);
      }
    }),
    30_000,
  );
});

describe('a node holding its own key against blobs and logs that are not its own', () => {
  it(
    'cannot read a team\'s input or node-B\'s bucket, cannot purge or overwrite a team\'s blob, cannot have storage stage node-B\'s data, cannot write node-B\'s job\'s log',
    e2e(async () => {
      const team = network().team;
      // The team uploads an input with a secret in it; its job runs on one node (the victim).
      const teamNc = await connect({ ...(await natsAuthOptions(network().teamCredentials(team).natsKeyFile)), servers: network().natsUrl, noAsyncTraces: true });
      opened.push(teamNc);
      const secret = new TextEncoder().encode(`team secret ${randomUUID()}\n`);
      const uploaded = await (await BlobStore.open(teamNc, { create: false })).uploadBytes(team, secret);
      const submitted = await network().client().submit({
        ...scriptJob('cat "$GPUNET_INPUT_DIR/secret.txt"\ncp "$GPUNET_INPUT_DIR/secret.txt" "$GPUNET_OUTPUT_DIR/copy.txt"\nsleep 4\n', { gpus: 1, globs: ['**'] }),
        data: { inputs: [{ name: 'secret', path: 'secret.txt', kind: 'file', sha256: uploaded.sha256, size: uploaded.size }] },
      } as Parameters<ReturnType<TestNetwork['client']>['submit']>[0]);
      const jobId = submitted.jobId;
      const placed = await until('the job to be placed', async () => (await network().events({ types: ['JobPlaced'], jobId }))[0]);
      const { nodeId: victim, attemptId } = placed.data as { nodeId: string; attemptId: string };
      const attacker = network().nodeIds.find((n) => n !== victim)!;
      const attackerKey = (await keyOf(attacker)).publicKey;
      await until('the victim to run the job', async () => (await (await network().store()).readStream(`execution-${victim}-attempt-${attemptId}`)).some((e) => e.type === 'JobStarted'));
      const a = await asNode(attacker);
      const jsm = await jetstreamManager(a);

      // 1. The team's bucket: no read, by the blob library or by hand.
      const asTeamBucket = await BlobStore.open(a, { create: false, stallTimeoutMs: 5_000 });
      await expect(asTeamBucket.readBytes(team, uploaded.sha256)).rejects.toThrow(DENIED);
      await expect(jsm.streams.info(`OBJ_${blobBucket(team)}`)).rejects.toThrow(DENIED);
      await expect(jsm.direct.getMessage(`OBJ_${blobBucket(team)}`, { last_by_subj: `$O.${blobBucket(team)}.M.>` })).rejects.toThrow(DENIED);
      // 2. Node-B's bucket (it exists: the operator sees it): no read.
      expect((await (await jetstreamManager(nc)).streams.info(`OBJ_${nodeBucket(victim)}`)).config.name).toBe(`OBJ_${nodeBucket(victim)}`);
      await expect(jsm.streams.info(`OBJ_${nodeBucket(victim)}`)).rejects.toThrow(DENIED);
      await expect((await BlobStore.open(a, { node: victim, create: false, stallTimeoutMs: 5_000 })).readBytes(team, uploaded.sha256)).rejects.toThrow(DENIED);
      // 3. Purge or overwrite the team's blob: refused, and the blob is intact.
      await expect(jsm.streams.purge(`OBJ_${blobBucket(team)}`)).rejects.toThrow(DENIED);
      await expect(jetstream(a).publish(`$O.${blobBucket(team)}.C.forged`, 'attacker bytes', { timeout: 5_000 })).rejects.toThrow(DENIED);
      const operatorBlobs = await BlobStore.open(nc, { create: false });
      expect(await operatorBlobs.exists(team, uploaded.sha256)).toBe(true);
      expect(Buffer.from(await operatorBlobs.readBytes(team, uploaded.sha256)).equals(Buffer.from(secret))).toBe(true);
      // 4. Storage: staging node-B's attempt on its own subject is refused by storage (the store
      //    says the attempt is node-B's); on node-B's subject nats-server refuses it.
      const stage = (node: string) => requestQuery(a, nodeDataSubject(node, 'stage'), { jobId, attemptId, blobs: [uploaded.sha256] }, {}, { timeoutMs: 10_000 });
      await expect(stage(attacker)).rejects.toThrow(/stage refused \(not_placed\)/);
      await expect(stage(victim)).rejects.toThrow(DENIED);
      const checkpoint = requestQuery(a, nodeDataSubject(attacker, 'checkpoint'), { jobId, attemptId, sha256: uploaded.sha256 }, {}, { timeoutMs: 10_000 });
      await expect(checkpoint).rejects.toThrow(/checkpoint refused \(not_placed\)/);
      await logged('storage', new RegExp(`"nodeId":"${attacker}".*"refused":"not_placed".*node data request refused|node data request refused.*"refused":"not_placed"`));
      // 5. The job's live log: node-B's subject is refused; on its own subject the line is dropped by intake.
      const forgedLine: LogLine = { ts: new Date().toISOString(), stream: 'stdout', line: 'FORGED BY THE OTHER NODE', attemptId };
      await expect(jetstream(a).publish(logSubject(team, jobId, victim), JSON.stringify(forgedLine), { timeout: 5_000 })).rejects.toThrow(DENIED);
      await jetstream(a).publish(logSubject(team, jobId, attacker), JSON.stringify(forgedLine));

      await logged('nats', new RegExp(`Publish Violation - Nkey "${attackerKey}", Subject "\\$JS\\.API\\.STREAM\\.INFO\\.OBJ_${blobBucket(team)}"`));
      await logged('nats', new RegExp(`Publish Violation - Nkey "${attackerKey}", Subject "\\$JS\\.API\\.STREAM\\.INFO\\.OBJ_${nodeBucket(victim)}"`));
      await logged('nats', new RegExp(`Publish Violation - Nkey "${attackerKey}", Subject "\\$JS\\.API\\.STREAM\\.PURGE\\.OBJ_${blobBucket(team)}"`));
      await logged('nats', new RegExp(`Publish Violation - Nkey "${attackerKey}", Subject "gpunet\\.data\\.${victim}\\.stage"`));
      await logged('nats', new RegExp(`Publish Violation - Nkey "${attackerKey}", Subject "gpunet\\.logs\\.${team}\\.${jobId}\\.${victim}"`));

      // The normal path still works: the victim staged the input through its own bucket, the job
      // read it, and its output went into the team's bucket; the forged line is not in the job's log.
      const settled = await settle(network(), [jobId]);
      expect(settled.views.get(jobId)!.state).toBe('completed');
      const lines: string[] = [];
      for await (const l of network().client().logs(jobId)) lines.push(l.line);
      expect(lines).toContain(new TextDecoder().decode(secret).trimEnd());
      expect(lines).not.toContain(forgedLine.line);
      await logged('intake', /log line from a node the attempt was not placed on: dropped/);
      const stored = await until('the outputs', async () => (await network().events({ types: ['OutputsStored'], jobId }))[0]?.data as OutputsStored | undefined);
      expect(stored.files.map((f) => f.sha256)).toContain(uploaded.sha256);
      expect(await operatorBlobs.exists(team, uploaded.sha256)).toBe(true);
      // Nothing of it is left in the victim's bucket: the input left once in the cache, the output once in the team's bucket.
      const victimView = await BlobStore.open(nc, { node: victim, create: false });
      expect(await victimView.stat(team, uploaded.sha256)).toBeUndefined();
    }),
    120_000,
  );
});
