/**
 * Attacks on the bus of a real network (`gpunet up`, every process real), as issue 10 found them:
 * from a process on the machine without credentials, from inside a job with `network: true`, and
 * with one team's own producer identity against another team. Before the bus was authenticated
 * (`nats-server -js` with no authorization) each of these attacks worked; now nats-server refuses
 * each and logs it in `<data-dir>/logs/nats.log`, which is where an operator sees them.
 */
import { BlobStore, blobBucket } from '#blobs';
import { Events, querySubject, type JobView } from '#contracts';
import { loadIdentityFile, natsAuthOptions } from '#identity';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync, statSync } from 'node:fs';
import { chmod, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { scriptJob } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const RIVAL = 'rival';
const SECRET = 'rival-secret-7f3a9c';
const natsLog = () => readFileSync(join(network().dataDir, 'logs', 'nats.log'), 'utf8');
const logged = (pattern: RegExp) => until(`nats.log to show ${pattern}`, () => pattern.test(natsLog()), { timeoutMs: 10_000, intervalMs: 50 });
const opened: NatsConnection[] = [];

async function asTeam(team: string): Promise<NatsConnection> {
  const nc = await connect({ ...(await natsAuthOptions(network().teamCredentials(team).natsKeyFile)), servers: network().natsUrl, noAsyncTraces: true });
  opened.push(nc);
  return nc;
}

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 2, teams: [RIVAL] });
  // The data directory is a mkdtemp (0700): job users could not pass it, so the agent started
  // running jobs as itself. Open it for passing, as `gpunet up`'s own default directory is, and
  // restart the agent so that jobs run as users of their own (the keys' protection from jobs).
  await chmod(net.dataDir, 0o711);
  await net.kill('node-1', 'SIGTERM');
  await net.restart('node-1');
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  await net?.stop();
}, 60_000);

describe('the bus of a network started with gpunet up', () => {
  it(
    'refuses a process without credentials: no forged JobFinished, PriceListPublished, JobCancelRequested or StoreOutputs can even be sent',
    e2e(async () => {
      // What the attacker did: connect with no credentials (the port is in /proc/*/cmdline), then publish.
      const attempt = connect({ servers: network().natsUrl, reconnect: false, timeout: 15_000 });
      await expect(attempt).rejects.toThrow(/Authorization Violation/i);
      await logged(/authentication error - Nkey ""/);
      // The network's command line names no key, no seed and no config secret.
      const nats = network().processes.find((p) => p.name === 'nats')!;
      const cmdline = readFileSync(`/proc/${nats.pid}/cmdline`, 'utf8').split('\0').join(' ');
      expect(cmdline).toMatch(/-c \S+nats\.conf/);
      expect(cmdline).not.toMatch(/SU[A-Z2-7]{20}|--user|--pass|--auth/);
      for (const p of network().processes) expect(readFileSync(`/proc/${p.pid}/cmdline`, 'utf8')).not.toMatch(/SU[A-Z2-7]{20}/);
      // Keys and the server's config are the owner's only; each process is told only its own key's path.
      expect(statSync(network().keysDir).mode & 0o777).toBe(0o700);
      for (const f of await readdir(network().keysDir)) expect(statSync(join(network().keysDir, f)).mode & 0o777).toBe(0o600);
      expect(statSync(join(network().dataDir, 'nats', 'nats.conf')).mode & 0o777).toBe(0o600);
      for (const p of network().processes.filter((q) => q.role !== 'nats')) {
        const own = p.role === 'agent' ? `node-${p.name}.nk` : `svc-${p.name}.nk`;
        expect(p.env?.GPUNET_NATS_NKEY_FILE).toBe(join(network().keysDir, own));
        const environ = readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').filter((v) => v.includes('.nk'));
        // The ledger alone also holds the network signing key (decision 0011), which is not a bus identity.
        const signing = p.name === 'ledger' ? [`GPUNET_SIGNING_KEY_FILE=${join(network().dataDir, 'signing', 'signing.nk')}`] : [];
        expect(environ.sort()).toEqual([`GPUNET_NATS_NKEY_FILE=${join(network().keysDir, own)}`, ...signing].sort());
      }
      // Nothing forged reached the store: no event of those types exists at all.
      expect(await network().events({ types: [Events.JobFinished.name, Events.PriceListPublished.name, Events.JobCancelRequested.name, 'OutputsStored'] })).toEqual(
        (await network().events({ types: [Events.PriceListPublished.name] })).filter((e) => e.metadata.producer === 'ledger'),
      );
    }),
  );

  it(
    'keeps a network: true job from reading any key file or connecting to NATS',
    e2e(async () => {
      const port = new URL(network().natsUrl).port;
      const keys = network().keysDir;
      const files = (await readdir(keys)).filter((f) => f.endsWith('.nk'));
      expect(files.length).toBeGreaterThanOrEqual(8); // 4 services, 1 node, 2 teams, the operator
      const probe = [
        // A raw NATS client: CONNECT without credentials, then a forged JobFinished.
        `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}; printf "CONNECT {\\"verbose\\":false}\\r\\nPUB gpunet.evt.JobFinished 2\\r\\n{}\\r\\nPING\\r\\n" >&3; timeout 3 cat <&3' | tr -d '\\r' | sed 's/^/NATS: /'`,
        `for f in ${files.map((f) => join(keys, f)).join(' ')} ${network().dataDir}/nats/nats.conf ${network().dataDir}/state.json; do if cat "$f" >/dev/null 2>&1; then echo "READ $f"; else echo "DENIED $f"; fi; done`,
        `ls ${keys} >/dev/null 2>&1 && echo "LISTED keys" || echo "DENIED listing keys"`,
        'echo probe-end',
      ].join('\n');
      const confinement = readFileSync(join(network().dataDir, 'logs', 'node-1.log'), 'utf8').split('\n').filter((l) => l.includes('"job confinement"')).at(-1)!;
      expect(JSON.parse(confinement)).toMatchObject({ jobUsers: '61000-61999' });
      const client = network().client();
      const { jobId } = await client.submit({ ...scriptJob(probe, { name: 'bus-probe' }), request: { gpus: 1, timeLimit: '1m', network: true } } as never);
      const view: JobView = await client.waitFor(jobId, { timeoutMs: 60_000 });
      expect(view.state).toBe('completed');
      // The probe's last lines may reach the log stream after the view says completed.
      const out = await until(
        'the probe\'s NATS exchange in its log',
        async () => {
          const lines: string[] = [];
          for await (const l of client.logs(jobId)) lines.push(l.line);
          const text = lines.join('\n');
          return /probe-end/.test(text) && text;
        },
        { timeoutMs: 20_000, intervalMs: 500 },
      );
      for (const f of files) expect(out).toContain(`DENIED ${join(keys, f)}`);
      expect(out).toContain(`DENIED ${network().dataDir}/nats/nats.conf`);
      expect(out).not.toMatch(/^READ /m);
      expect(out).toContain('DENIED listing keys');
      // The job reached the port (network: true) and the server turned it away before any publish:
      // nats-server logs a client with no name and no key (the raw probe; every gpunet client names itself).
      expect(natsLog()).toMatch(/cid:\d+ - authentication error - Nkey ""/);
      if (/NATS: /.test(out)) {
        expect(out).toMatch(/NATS: -ERR 'Authorization Violation'/);
        expect(out).not.toMatch(/NATS: PONG/);
      }
      expect(await network().events({ types: [Events.JobFinished.name] })).toHaveLength(1); // the probe's own, by its node
    }),
    90_000,
  );

  it(
    'keeps one team\'s producer identity from another team\'s outputs, logs and charges',
    e2e(async () => {
      // The rival team runs a job whose output and log hold its secret.
      const rival = network().client(RIVAL);
      const { jobId } = await rival.submit(scriptJob(`echo "log: ${SECRET}"; echo "${SECRET}" > "$GPUNET_OUTPUT_DIR/secret.txt"`, { name: 'rival-secret', globs: ['secret.txt'] }));
      expect((await rival.waitFor(jobId, { timeoutMs: 60_000 })).state).toBe('completed');
      const outputs = await until('rival outputs stored', async () => {
        const o = await rival.outputs(jobId);
        return o.stored ? o : undefined;
      }, { timeoutMs: 30_000 });
      const secretFile = outputs.files.find((f) => f.path === 'secret.txt')!;
      // The rival itself reads them (so the secret is really there).
      const own: string[] = [];
      for await (const l of rival.logs(jobId)) own.push(l.line);
      expect(own.join('\n')).toContain(SECRET);

      // Team `local`, with its own valid NATS identity, goes after them directly.
      const nc = await asTeam(network().team);
      const blobs = await BlobStore.open(nc, { create: false });
      await expect(blobs.readBytes(RIVAL, secretFile.sha256)).rejects.toThrow(/Permissions Violation|timeout/i);
      await expect(blobs.uploadBytes(RIVAL, new TextEncoder().encode('attacker bytes'))).rejects.toThrow(/Permissions Violation|timeout/i);
      const jsm = await jetstreamManager(nc);
      await expect(jsm.streams.info(`OBJ_${blobBucket(RIVAL)}`)).rejects.toThrow(/Permissions Violation|timeout/i);
      await expect(jsm.streams.getMessage('GPUNET_LOGS', { last_by_subj: `gpunet.logs.${RIVAL}.${jobId}` })).rejects.toThrow(/Permissions Violation|timeout/i);
      await expect(jetstream(nc).consumers.get('GPUNET_LOGS', { filter_subjects: `gpunet.logs.${RIVAL}.>` })).rejects.toThrow(/Permissions Violation|timeout/i);
      const sub = nc.subscribe(`gpunet.logs.${RIVAL}.>`);
      await expect((async () => {
        for await (const m of sub) return m;
      })()).rejects.toThrow(/Permissions Violation for Subscription/);
      // The ledger's subjects answer intake only: a self-declared team or role gets nothing.
      for (const subject of [querySubject('ledger', 'GetCharges'), querySubject('ledger', 'ListInvoices'), querySubject('ledger', 'AuditJobs'), 'gpunet.cmd.RecordPriceList', 'gpunet.cmd.RebuildLedger']) {
        await expect(nc.request(subject, JSON.stringify({ team: RIVAL, role: 'compliance', jobId }), { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      }
      // Nor can it forge StoreOutputs to replace the rival's outputs.
      await expect(nc.request('gpunet.cmd.StoreOutputs', JSON.stringify({ team: RIVAL, jobId }), { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      const localPub = (await loadIdentityFile(network().teamCredentials(network().team).natsKeyFile)).publicKey;
      await logged(new RegExp(`Publish Violation - Nkey "${localPub}", Subject "\\$JS\\.API\\.STREAM\\.INFO\\.OBJ_${blobBucket(RIVAL)}"`));
      await logged(new RegExp(`Publish Violation - Nkey "${localPub}", Subject "gpunet\\.qry\\.ledger\\.GetCharges"`));
      await logged(new RegExp(`Subscription Violation - Nkey "${localPub}", Subject "gpunet\\.logs\\.${RIVAL}\\.>"`));
      // Through intake, with its API key, the rival's job is not its to read either.
      const local = network().client();
      await expect(local.getJob(jobId)).rejects.toMatchObject({ status: expect.any(Number) });
      // The rival's output is intact and still its own.
      expect((await rival.outputs(jobId)).files.find((f) => f.path === 'secret.txt')?.sha256).toBe(secretFile.sha256);
    }),
    120_000,
  );

  it(
    'gave the network\'s own processes everything they needed: every refusal in nats.log is the attacker\'s',
    e2e(async () => {
      const attacker = (await loadIdentityFile(network().teamCredentials(network().team).natsKeyFile)).publicKey;
      const offenders = new Set([...natsLog().matchAll(/Violation - Nkey "(U[A-Z2-7]+)"/g)].map((m) => m[1]));
      expect(offenders.size).toBeGreaterThan(0); // the attacks above were seen
      expect([...offenders]).toEqual([attacker]);
    }),
  );
});
