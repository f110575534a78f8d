/**
 * Attacks on the node/recorder split, on a real network (`gpunet up`, two agents), by someone
 * holding node-A's key (its seed file from the data directory) and a connection to NATS:
 * forging the end of an attempt of node-B, replaying an old report of node-B, forging outputs
 * for node-B's job, and publishing a JobFinished straight on the bus. Every report is refused
 * and recorded as NodeReportRefused; nothing is billed from any of it. And the agents hold no
 * store of the control plane: not in their environment, not in their work directory.
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
} from '#contracts';
import { loadIdentityFile, newIdentity, signBytes } from '#identity';
import { encodeEvent, requestQuery } from '#messaging';
import { jetstream } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NatsConnection } from '@nats-io/transport-node';
import { randomUUID } from 'node:crypto';
import { chmod, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure } from '../support/network.js';
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
}, 90_000);

afterAll(async () => {
  await net?.stop();
}, 60_000);

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
