/**
 * Audit across real processes (`gpunet up`: two agents of 4 simulated GPUs): the ledger's audit
 * projection over every service's events answers over HTTP (intake → NATS → ledger) and through
 * the CLI; a team key sees its own team, a compliance key every team; every query is recorded as
 * AuditQueried in `ledger-audit`.
 */
import type { AuditJobsReply, AuditQueried, UsageRecorded } from '#contracts';
import { GpunetClient } from '#sdk';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { readState } from '../../libs/cli/src/local/state.js';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure } from '../support/network.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

const complianceKey = randomBytes(32).toString('hex');
const otherTeamKey = randomBytes(32).toString('hex');
/** The local team's billing desk: invoices are for billing keys, not producers. */
const billingKey = randomBytes(32).toString('hex');
const OTHER_TEAM = 'team-b';
const clients: GpunetClient[] = [];
const clientWith = (apiKey: string) => {
  const c = new GpunetClient({ baseUrl: network().url, apiKey });
  clients.push(c);
  return c;
};
const sha = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/** Runs the CLI in-process with a key; stdout as text. */
async function cli(args: string[], apiKey = network().apiKey, env: Record<string, string> = { GPUNET_URL: network().url, GPUNET_API_KEY: apiKey }): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const code = await runCli(args, { stdout: out, stderr: err, env, cwd: network().dataDir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

let localJob = '';
let otherJob = '';

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 4 });
  // Three more keys: a compliance officer, another team, the local team's billing desk. Intake reads the key file at start.
  const state = await readState(net.dataDir);
  await appendFile(
    state!.apiKeysFile,
    `- { id: officer, sha256: ${sha(complianceKey)}, team: compliance-office, role: compliance }\n- { id: team-b-ci, sha256: ${sha(otherTeamKey)}, team: ${OTHER_TEAM}, role: producer }\n- { id: billing-desk, sha256: ${sha(billingKey)}, team: ${net.team}, role: billing }\n`,
  );
  await net.kill('intake', 'SIGTERM');
  await net.restart('intake');

  const local = await net.client().submit(scriptJob('mkdir -p "$GPUNET_OUTPUT_DIR" && printf hello > "$GPUNET_OUTPUT_DIR/result.txt" && sleep 1', { gpus: 2, name: 'audited' }));
  const other = await clientWith(otherTeamKey).submit(scriptJob('exit 3', { gpus: 1 }));
  localJob = local.jobId;
  otherJob = other.jobId;
  await settle(net, [localJob]);
  // The other team's job is over when intake says so (settle reads with the local key).
  const b = clientWith(otherTeamKey);
  await b.waitFor(otherJob, { timeoutMs: 60_000 });
}, 150_000);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await net?.stop();
}, 60_000);

describe('gpunet audit', () => {
  it(
    'audit job answers what ran, how long, on what, what came back and what it cost, with the timeline of every service',
    e2e(async () => {
      const a = await network().client().auditJob(localJob);
      expect(a).toMatchObject({ jobId: localJob, team: network().team, name: 'audited', outcome: 'completed' });
      // What ran: the submitted spec and its digest, and what the agent recorded it ran (JobStarted.work).
      expect(a.work.spec.work).toMatchObject({ kind: 'script' });
      expect(a.work.specSha256).toMatch(/^[0-9a-f]{64}$/);
      expect(a.work).toMatchObject({ digestSource: 'recorded', workKind: 'script', workDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
      const started = (await network().events({ types: ['JobStarted'], jobId: localJob }))[0]!;
      expect(a.work.workDigest).toBe((started.data as { work?: { digest: string } }).work?.digest);
      // On what: one attempt, its node and GPU ids as placed and held.
      expect(a.attempts).toHaveLength(1);
      const attempt = a.attempts[0]!;
      expect(network().nodeIds).toContain(attempt.nodeId);
      expect(attempt).toMatchObject({ gpuModel: 'sim-gpu', gpus: 2, outcome: 'completed', exitCode: 0 });
      expect(attempt.gpuIndices).toHaveLength(2);
      // How long: integer ms per phase; held contains running, and equals the billed time.
      for (const k of ['stagingMs', 'queuedMs', 'heldMs', 'runningMs', 'outputMs', 'releaseMs'] as const) expect(Number.isInteger(a.durations[k])).toBe(true);
      expect(a.durations.runningMs!).toBeGreaterThanOrEqual(1000);
      expect(a.durations.heldMs!).toBeGreaterThanOrEqual(a.durations.runningMs!);
      // What it cost: the ledger's usage line, and held time is what it billed.
      expect(a.cost.lines).toHaveLength(1);
      const line = a.cost.lines[0] as UsageRecorded;
      expect(line.billableMs).toBe(a.durations.heldMs);
      expect(a.cost.totals).toEqual([{ currency: line.currency, amountMicros: line.amountMicros }]);
      // What came back: the file with its size and sha256.
      expect(a.outputs?.files).toEqual(expect.arrayContaining([{ path: 'result.txt', size: 5, sha256: createHash('sha256').update('hello').digest('hex') }]));
      // The timeline spans every service, in store order.
      const producers = new Set(a.timeline.map((e) => e.producer));
      for (const p of ['intake', 'storage', 'placement', 'ledger']) expect(producers).toContain(p);
      expect(a.timeline.map((e) => e.type)).toEqual(expect.arrayContaining(['JobSubmitted', 'InputsStaged', 'JobPlaced', 'ComputeHeld', 'JobStarted', 'JobFinished', 'OutputsStored', 'ComputeReleased', 'UsageRecorded']));
      const positions = a.timeline.map((e) => BigInt(e.position));
      expect(positions).toEqual([...positions].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)));
    }),
    30_000,
  );

  it(
    'a team key sees only its team; a compliance key sees every team and filters by team, node, GPU model and outcome',
    e2e(async () => {
      const mine = await network().client().auditJobs();
      expect(mine.jobs.map((j) => j.jobId)).toContain(localJob);
      expect(mine.jobs.every((j) => j.team === network().team)).toBe(true);
      // Another team's job: 404 for a team key, as if it did not exist; naming another team: 403.
      await expect(network().client().auditJob(otherJob)).rejects.toMatchObject({ status: 404 });
      await expect(network().client().auditJobs({ team: OTHER_TEAM })).rejects.toMatchObject({ status: 403 });

      const officer = clientWith(complianceKey);
      const all = await officer.auditJobs();
      expect(all.jobs.map((j) => j.jobId)).toEqual(expect.arrayContaining([localJob, otherJob]));
      expect((await officer.auditJob(otherJob)).outcome).toBe('failed');
      expect((await officer.auditJobs({ team: OTHER_TEAM })).jobs.map((j) => j.jobId)).toEqual([otherJob]);
      expect((await officer.auditJobs({ outcome: 'failed' })).jobs.map((j) => j.jobId)).toEqual([otherJob]);
      expect((await officer.auditJobs({ gpuModel: 'no-such-model' })).jobs).toEqual([]);
      const node = (await officer.auditJob(localJob)).attempts[0]!.nodeId;
      expect((await officer.auditJobs({ node })).jobs.map((j) => j.jobId)).toContain(localJob);
      expect((await officer.auditJobs({ from: '2999-01-01T00:00:00Z' })).jobs).toEqual([]);
      // A page at a time: limit and offset over the same oldest-first order.
      const first = await officer.auditJobs({ limit: 1 });
      const second = await officer.auditJobs({ limit: 1, offset: 1 });
      expect(first.total).toBe(all.total);
      expect([...first.jobs, ...second.jobs].map((j) => j.jobId)).toEqual(all.jobs.slice(0, 2).map((j) => j.jobId));
      // A filter value that is not valid names its parameter.
      await expect(officer.auditJobs({ outcome: 'finished' })).rejects.toMatchObject({ status: 400, issues: [expect.objectContaining({ path: 'outcome' })] });
    }),
    30_000,
  );

  it(
    'every audit query is recorded in ledger-audit: who asked (key, team, role), what, when; before it is answered',
    e2e(async () => {
      const officer = clientWith(complianceKey);
      const reply = await officer.auditJob(localJob);
      const recorded = await network().events({ types: ['AuditQueried'] });
      const mine = recorded.find((e) => e.eventId === reply.recordedAs);
      expect(mine).toBeDefined();
      expect(mine!.streamId).toBe('ledger-audit');
      expect(BigInt(mine!.position)).toBeLessThanOrEqual(BigInt(reply.asOfPosition));
      const data = mine!.data as AuditQueried;
      expect(data).toMatchObject({ query: 'AuditJob', parameters: { jobId: localJob }, requestedBy: { keyId: 'officer', team: 'compliance-office', role: 'compliance', allTeams: true } });
      expect(Date.parse(data.askedAt)).not.toBeNaN();
      // A team key's list is recorded with its team as the filter; naming another team is refused (403) and recorded as refused.
      const list = await network().client().auditJobs({ outcome: 'completed' });
      const listed = (await network().events({ types: ['AuditQueried'] })).find((e) => e.eventId === list.recordedAs)!.data as AuditQueried;
      expect(listed).toMatchObject({ query: 'AuditJobs', parameters: { team: network().team, outcome: 'completed' }, requestedBy: { keyId: network().team, allTeams: false } });
      expect(listed.refused).toBeUndefined();
      const before = (await network().events({ types: ['AuditQueried'] })).length;
      await expect(network().client().auditJobs({ team: OTHER_TEAM })).rejects.toMatchObject({ status: 403, message: expect.stringMatching(/compliance/) });
      const after = await network().events({ types: ['AuditQueried'] });
      expect(after).toHaveLength(before + 1);
      expect(after.at(-1)!.data).toMatchObject({ query: 'AuditJobs', parameters: { team: OTHER_TEAM }, requestedBy: { keyId: network().team }, refused: expect.stringMatching(/is not yours/) });
    }),
    30_000,
  );

  it(
    'gpunet audit jobs prints a table, --format json the reply and --format csv one line per job; gpunet audit job the five answers',
    e2e(async () => {
      const table = await cli(['audit', 'jobs']);
      expect(table.code).toBe(0);
      expect(table.out).toMatch(/JOB +TEAM +SUBMITTED \(UTC\) +OUTCOME/);
      expect(table.out).toContain(localJob);

      const json = await cli(['audit', 'jobs', '--format', 'json', '--outcome', 'completed']);
      expect(json.code).toBe(0);
      const doc = JSON.parse(json.out) as Omit<AuditJobsReply, 'recordedAs'> & { recordedAs: string[] };
      expect(doc.jobs.map((j) => j.jobId)).toContain(localJob);
      expect(doc.recordedAs).toHaveLength(1);
      // --limit beyond one query's page is fetched page by page, each query recorded.
      const paged = JSON.parse((await cli(['audit', 'jobs', '--format', 'json', '--limit', '1'], complianceKey)).out) as typeof doc;
      expect(paged.jobs).toHaveLength(1);
      expect(paged.total).toBeGreaterThanOrEqual(2);

      const csv = await cli(['audit', 'jobs', '--format', 'csv'], complianceKey);
      expect(csv.code).toBe(0);
      const [header, ...rows] = csv.out.trimEnd().split('\n');
      expect(header).toBe('jobId,team,name,submittedAt,outcome,attempts,nodes,gpuModels,gpus,stagingMs,queuedMs,heldMs,runningMs,outputMs,releaseMs,outputFiles,outputBytes,billableMs,currency,amountMicros');
      expect(rows.map((r) => r.split(',')[0])).toEqual(expect.arrayContaining([localJob, otherJob]));
      const row = rows.find((r) => r.startsWith(localJob))!.split(',');
      expect(row[4]).toBe('completed');
      expect(row[11]).toMatch(/^\d+$/);

      const one = await cli(['audit', 'job', localJob]);
      expect(one.code).toBe(0);
      for (const heading of ['what ran', 'how long', 'on what', 'what came back', 'what it cost', 'timeline']) expect(one.out).toContain(heading);
      expect(one.out).toContain('result.txt');

      const denied = await cli(['audit', 'jobs', '--team', OTHER_TEAM]);
      expect(denied.code).toBe(2);
      expect(denied.err).toMatch(/compliance/);
    }),
    30_000,
  );
});

describe('gpunet replay, verify and dispute-bundle', () => {
  /** The local team's invoice of the month its job finished in (a draft: the month is open). */
  async function invoiceId(): Promise<string> {
    const line = (await network().client().charges({ jobId: localJob })).lines[0]!;
    return `inv-${network().team}-${line.finishedAt.slice(0, 7)}`;
  }

  it(
    'gpunet verify walks the store\'s hash chain; gpunet replay job re-derives the job\'s usage line from the agents\' events (exit 0, identical)',
    e2e(async () => {
      const v = await cli(['verify', '--data-dir', network().dataDir]);
      expect(v.code).toBe(0);
      expect(v.out).toMatch(/the hash chain holds: \d+ event\(s\) in \d+ stream\(s\)/);

      const r = await cli(['replay', 'job', localJob, '--store', network().storeUrl]);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      expect(r.out).toMatch(new RegExp(`= ${localJob}-\\S+@node-\\d  same  \\d+ micro-EUR  events( [0-9a-f-]{36}){4}`));
      expect(r.out).toMatch(/identical: 1 line\(s\)/);
      const json = JSON.parse((await cli(['replay', 'job', localJob, '--store', network().storeUrl, '--json'])).out) as { identical: boolean; lines: { eventIds: string[] }[] };
      const held = (await network().events({ types: ['ComputeHeld'], jobId: localJob }))[0]!;
      expect(json.identical).toBe(true);
      expect(json.lines[0]!.eventIds[0]).toBe(held.eventId);
    }),
    60_000,
  );

  it(
    'gpunet verify names the position of an event edited behind the store\'s back (a copy of the store, its guard triggers dropped)',
    e2e(async () => {
      const copy = join(network().dataDir, 'tampered-store.db');
      const live = new Database(network().storeUrl.replace(/^sqlite:/, ''), { readonly: true });
      await live.backup(copy);
      live.close();
      const finished = (await network().events({ types: ['JobFinished'], jobId: localJob }))[0]!;
      const db = new Database(copy);
      db.exec('DROP TRIGGER IF EXISTS events_no_update;');
      const data = { ...(finished.data as Record<string, unknown>), finishedAt: new Date(Date.parse((finished.data as { finishedAt: string }).finishedAt) - 60_000).toISOString() };
      expect(db.prepare('UPDATE events SET data = ? WHERE position = ?').run(JSON.stringify(data), Number(finished.position)).changes).toBe(1);
      db.close();
      const v = await cli(['verify', '--store', `sqlite:${copy}`]);
      expect(v.code).toBe(1);
      expect(v.out).toContain(`the hash chain is broken at position ${finished.position} in stream ${finished.streamId}`);
      // The live store is untouched and still holds.
      expect((await cli(['verify', '--store', network().storeUrl])).code).toBe(0);
    }),
    60_000,
  );

  it(
    'dispute-bundle writes the invoice, its events in whole chained streams and their heads; verify --bundle checks it with no network and no store, and names a tampered event',
    e2e(async () => {
      const id = await invoiceId();
      const file = join(network().dataDir, 'dispute.json');
      const made = await cli(['dispute-bundle', id, '--store', network().storeUrl, '--out', file]);
      expect(made.err).toBe('');
      expect(made.code).toBe(0);
      const bundle = JSON.parse(await readFile(file, 'utf8')) as {
        invoice: { invoiceId: string; lines: { jobId: string; eventIds: string[] }[] };
        streams: { streamId: string; head: { hash: string }; events: { eventId: string; type: string; hash: string; data: Record<string, unknown> }[] }[];
      };
      expect(bundle.invoice.invoiceId).toBe(id);
      expect(bundle.invoice.lines.map((l) => l.jobId)).toContain(localJob);
      // The heads are the store's own: each stream's last event as recorded.
      const store = await network().store();
      for (const s of bundle.streams) expect(s.head.hash).toBe((await store.readStream(s.streamId)).at(-1)!.hash);

      // Offline: an environment with no network settings, no store URL, and a directory without state.
      const offline = { HOME: network().dataDir };
      const ok = await cli(['verify', '--bundle', file, '--data-dir', join(network().dataDir, 'nowhere')], '', offline);
      expect(ok.err).toBe('');
      expect(ok.code).toBe(0);
      expect(ok.out).toMatch(new RegExp(`holds: invoice ${id}`));

      // Tamper with one event: the JobFinished of the job, a minute earlier.
      const finished = bundle.streams.flatMap((s) => s.events).find((e) => e.type === 'JobFinished' && e.data.jobId === localJob)!;
      finished.data.finishedAt = new Date(Date.parse(finished.data.finishedAt as string) - 60_000).toISOString();
      const tampered = join(network().dataDir, 'tampered.json');
      await writeFile(tampered, JSON.stringify(bundle));
      const bad = await cli(['verify', '--bundle', tampered], '', offline);
      expect(bad.code).toBe(1);
      expect(bad.out).toContain('does NOT hold');
      expect(bad.out).toContain(finished.eventId);
    }),
    60_000,
  );

  it(
    'replay invoice: the draft the ledger serves replays identically (exit 0); an altered copy and a what-if price list exit 1 with a line-by-line diff naming events, and write nothing',
    e2e(async () => {
      const id = await invoiceId();
      // The draft as the ledger serves it (`gpunet invoice show --json`), kept as a customer would keep it.
      const shown = await cli(['invoice', 'show', id, '--json'], billingKey);
      expect(shown.code).toBe(0);
      const invoice = JSON.parse(shown.out) as { derivedAtPosition: string; lines: { lineId: string; jobId: string; amountMicros: number; eventIds: string[] }[] };
      const copy = join(network().dataDir, 'invoice.json');
      await writeFile(copy, JSON.stringify(invoice));

      const same = await cli(['replay', 'invoice', id, '--store', network().storeUrl, '--invoice', copy]);
      expect(same.err).toBe('');
      expect(same.code).toBe(0);
      expect(same.out).toContain(`replayed as of store position ${invoice.derivedAtPosition}`);
      expect(same.out).toMatch(/identical: \d+ line\(s\), byte for byte/);
      // Without a copy, a draft has nothing recorded to replay against: a usage error saying what to pass.
      const none = await cli(['replay', 'invoice', id, '--store', network().storeUrl]);
      expect(none.code).toBe(2);
      expect(none.err).toContain('--invoice');

      const line = invoice.lines.find((l) => l.jobId === localJob)!;
      line.amountMicros += 1;
      await writeFile(copy, JSON.stringify(invoice));
      const altered = await cli(['replay', 'invoice', id, '--store', network().storeUrl, '--invoice', copy]);
      expect(altered.code).toBe(1);
      expect(altered.out).toContain(`~ ${line.lineId}  changed`);
      expect(altered.out).toContain(line.eventIds[0]);
      expect(altered.out).toMatch(/amountMicros: \d+ → \d+/);

      line.amountMicros -= 1;
      await writeFile(copy, JSON.stringify(invoice));
      const prices = join(network().dataDir, 'what-if.yaml');
      await writeFile(prices, 'currency: EUR\nratesMicrosPerGpuHour:\n  sim-gpu: 7200000\n');
      const ledgerEvents = async () => (await network().events({ streamPrefix: 'ledger-' })).length;
      const before = await ledgerEvents();
      const whatIf = await cli(['replay', 'invoice', id, '--store', network().storeUrl, '--invoice', copy, '--prices', prices]);
      expect(whatIf.code).toBe(1);
      expect(whatIf.out).toContain('under the what-if price list (nothing written)');
      expect(whatIf.out).toMatch(/rateMicrosPerGpuHour: 3600000 → 7200000/);
      expect(await ledgerEvents()).toBe(before);
    }),
    60_000,
  );
});
