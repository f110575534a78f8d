/**
 * Estimates before submitting, across real processes (`gpunet up`: one agent of 4 simulated
 * GPUs priced 1 µ per GPU-ms): over HTTP with the SDK, over NATS (`gpunet.qry.intake.EstimateJob`)
 * and with the CLI; the estimate follows the live plan and submits nothing. An estimate is
 * recorded: a job submitted on it (`--estimate`) is held to it, and capacity counts its error.
 */
import { HEADERS, Queries, type EstimateJobReply } from '#contracts';
import { requestQuery } from '#messaging';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { OFF_CONTRACT_HEADER } from '../support/bus/bus-contract.js';
import { scriptJob } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const MINUTE = 60_000;

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 4, teams: ['rival'] });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

/** Runs the CLI against the network with the team's key (or `apiKey`): exit code and stdout. */
async function cli(args: string[], apiKey = network().apiKey): Promise<{ code: number; text: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  err.resume();
  const code = await runCli(args, { stdout: out, stderr: err, env: { GPUNET_URL: network().url, GPUNET_API_KEY: apiKey }, cwd: network().dataDir });
  return { code, text: Buffer.concat(chunks).toString('utf8') };
}

describe('gpunet estimate', () => {
  it(
    'on idle GPUs: starts now, ends after its time limit, costs its whole time limit at the ledger\'s rate, and submits nothing',
    e2e(async () => {
      const before = await network().events({ types: ['JobSubmitted'] });
      const e = await network().client().estimate(scriptJob('echo hi', { gpus: 2, timeLimit: '10m' }));
      expect(e).toMatchObject({ runnable: true, reason: 'StartsNow', gpuModel: 'sim-gpu' });
      expect(Date.parse(e.expectedStart!)).toBe(Date.parse(e.at));
      expect(Date.parse(e.expectedEnd!) - Date.parse(e.expectedStart!)).toBe(10 * MINUTE);
      // sim-gpu: 1 µ per GPU-ms = 3,600,000 µ per GPU-hour; 2 GPUs × 10 min.
      expect(e.charge).toMatchObject({ amountMicros: 2 * 10 * MINUTE, rateMicrosPerGpuHour: 3_600_000, priceListVersion: 1 });
      expect(await network().events({ types: ['JobSubmitted'] })).toHaveLength(before.length);
    }),
    30_000,
  );

  it(
    'behind a running job that holds every GPU: starts when its time limit ends; too large for any node: cannot run',
    e2e(async () => {
      const client = network().client();
      const { jobId } = await client.submit(scriptJob('sleep 60', { gpus: 4, timeLimit: '2m' }));
      const view = await until('the blocker holds its GPUs', async () => {
        const v = await client.getJob(jobId);
        return v.attempts[0]?.heldAt !== undefined ? v : undefined;
      }, { timeoutMs: 20_000 });
      const heldUntil = Date.parse(view.attempts[0]!.heldAt!) + 2 * MINUTE;
      // Placement learns of ComputeHeld on the bus: until then it counts from JobPlaced.
      const e = await until('the estimate counts from the hold', async () => {
        const r = await client.estimate(scriptJob('echo after', { gpus: 1, timeLimit: '5m' }));
        return Date.parse(r.expectedStart ?? '') === heldUntil ? r : undefined;
      }, { timeoutMs: 10_000 });
      expect(e).toMatchObject({ runnable: true, reason: 'Resources' });
      expect(Date.parse(e.expectedEnd!)).toBe(Date.parse(e.expectedStart!) + 5 * MINUTE);

      expect(await client.estimate(scriptJob('echo big', { gpus: 8 }))).toEqual(expect.objectContaining({ runnable: false, reason: 'NoNodeFits' }));
      await client.cancel(jobId);
    }),
    60_000,
  );

  it(
    'answers the same over NATS with the API key header, and names the field of an invalid spec',
    e2e(async () => {
      const nc = await network().nats();
      const h = natsHeaders();
      h.set(HEADERS.authorization, `Bearer ${network().apiKey}`);
      const q = Queries.EstimateJob;
      const spec = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } };
      const e = await requestQuery<EstimateJobReply>(nc, q.subject, { spec }, { response: q.replySchema }, { headers: h });
      expect(e).toMatchObject({ runnable: true, gpuModel: 'sim-gpu', charge: { amountMicros: MINUTE } });
      const bad = { spec: { ...spec, request: { gpus: 0, timeLimit: '1m' } } };
      // Refused on purpose: the bus check counts these apart.
      const h1 = natsHeaders();
      h1.set(OFF_CONTRACT_HEADER, 'an invalid request, to see it refused');
      await expect(requestQuery(nc, q.subject, bad, {}, { headers: h1 })).rejects.toThrow();
      const h2 = natsHeaders();
      h2.set(HEADERS.authorization, `Bearer ${network().apiKey}`);
      h2.set(OFF_CONTRACT_HEADER, 'an invalid request, to see it refused');
      await expect(requestQuery(nc, q.subject, bad, {}, { headers: h2 })).rejects.toMatchObject({ issues: [expect.objectContaining({ path: 'spec.request.gpus' })] });
    }),
    30_000,
  );

  it(
    'gpunet estimate job.yaml prints it for people, and one JSON document with --json',
    e2e(async () => {
      const dir = network().dataDir;
      await writeFile(join(dir, 'est.yaml'), 'work:\n  kind: script\n  script: { inline: "true" }\nrequest:\n  gpus: 1\n  timeLimit: 30m\n');
      const run = async (args: string[]) => {
        const out = new PassThrough();
        const err = new PassThrough();
        const chunks: Buffer[] = [];
        out.on('data', (c: Buffer) => chunks.push(c));
        err.resume();
        const env = { GPUNET_URL: network().url, GPUNET_API_KEY: network().apiKey };
        const code = await runCli(args, { stdout: out, stderr: err, env, cwd: dir });
        return { code, text: Buffer.concat(chunks).toString('utf8') };
      };
      const human = await run(['estimate', 'est.yaml']);
      expect(human.code).toBe(0);
      expect(human.text).toMatch(/^starts: {3}(now|in .+) \(/m);
      expect(human.text).toMatch(/charge: {3}at most 1\.800000 /);
      const json = await run(['estimate', 'est.yaml', '--json']);
      expect(json.code).toBe(0);
      expect(JSON.parse(json.text)).toMatchObject({ runnable: true, charge: { amountMicros: 30 * MINUTE } });
    }),
    30_000,
  );

  it(
    'is recorded, and a job submitted on it is held to it: its JobSubmitted and JobPlaced carry the estimate, and capacity counts its start and end errors; another team cannot use it',
    e2e(async () => {
      const client = network().client();
      await writeFile(join(network().dataDir, 'held.yaml'), 'work:\n  kind: script\n  script: { inline: "sleep 1" }\nrequest:\n  gpus: 1\n  timeLimit: 2m\n');
      const before = (await client.capacity({ hours: 1 })).quotes!;
      const estimated = await cli(['estimate', 'held.yaml']);
      expect(estimated.code).toBe(0);
      const estimateId = /^estimate: (est_[0-9a-f]{32}) — hold the job to it: /m.exec(estimated.text)?.[1];
      expect(estimated.text).toContain(`gpunet submit held.yaml --estimate ${estimateId}`);
      const given = (await network().events({ types: ['EstimateGiven'] })).find((e) => (e.data as { estimateId: string }).estimateId === estimateId)!;
      const g = given.data as { team: string; expectedStart: string; expectedEnd: string; quotedAt: string; request: unknown; charge?: { amountMicros: number } };
      expect(g).toMatchObject({ team: network().team, request: { gpus: 1, timeLimitMs: 2 * MINUTE }, gpuModel: 'sim-gpu', charge: { amountMicros: 2 * MINUTE } });

      // Another team: refused on `estimateId`, as an id it was never given; the estimate stays unused.
      const stolen = await network()
        .client('rival')
        .submit(scriptJob('sleep 1', { gpus: 1, timeLimit: '2m' }), { estimateId: estimateId! })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(stolen).toMatchObject({ status: 400, issues: [expect.objectContaining({ path: 'estimateId', message: expect.stringContaining('is not an estimate given to your team') })] });

      const submitted = await cli(['submit', 'held.yaml', '--estimate', estimateId!, '--wait']);
      expect(submitted.code).toBe(0);
      const jobId = /^submitted: (job_[0-9a-f]{32}), held to estimate /m.exec(submitted.text)?.[1];
      expect(jobId).toBeDefined();
      const record = (await network().events({ types: ['JobSubmitted'] })).find((e) => (e.data as { jobId: string }).jobId === jobId)!;
      expect((record.data as { quote?: unknown }).quote).toEqual({ expectedStart: g.expectedStart, expectedEnd: g.expectedEnd, quotedAt: g.quotedAt, estimateId });
      const used = (await network().events({ types: ['EstimateUsed'] })).filter((e) => (e.data as { estimateId: string }).estimateId === estimateId);
      expect(used.map((e) => (e.data as { usedBy: string }).usedBy)).toEqual([jobId]);
      const placed = (await network().events({ types: ['JobPlaced'] })).find((e) => (e.data as { jobId: string }).jobId === jobId)!;
      const quote = (placed.data as { quote?: { expectedStart: string; expectedEnd?: string } }).quote!;
      expect([Date.parse(quote.expectedStart), Date.parse(quote.expectedEnd!)]).toEqual([Date.parse(g.expectedStart), Date.parse(g.expectedEnd)]);
      // A second job on the same estimate is refused: it is the first job's promise.
      expect((await cli(['submit', 'held.yaml', '--estimate', estimateId!])).code).not.toBe(0);

      // Placement folds the job's end: capacity's quote accuracy counts its start and its end.
      const after = await until('capacity counts the job\'s start and end', async () => {
        const q = (await client.capacity({ hours: 1 })).quotes!;
        return q.started > before.started && q.ended > before.ended ? q : undefined;
      }, { timeoutMs: 20_000 });
      expect(after.ended).toBe(before.ended + 1);
      expect(after.medianEndErrorMs).toEqual(expect.any(Number));
    }),
    60_000,
  );

  it(
    'at submit, refuses a deadline the plan cannot meet with the earliest finish, or accepts it with a warning under Gpunet-Deadline-Policy: warn',
    e2e(async () => {
      const client = network().client();
      const { jobId: blocker } = await client.submit(scriptJob('sleep 60', { gpus: 4, timeLimit: '10m' }));
      await until('the blocker is placed', async () => ((await client.getJob(blocker)).attempts.length > 0 ? true : undefined), { timeoutMs: 20_000 });
      const late = { ...scriptJob('echo late', { gpus: 1, timeLimit: '1m' }), request: { gpus: 1, timeLimit: '1m', deadline: '+5m' } };
      const before = (await network().events({ types: ['JobSubmitted'] })).length;
      const refused = await client.submit(late).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toMatchObject({ status: 400, issues: [expect.objectContaining({ path: 'request.deadline', message: expect.stringMatching(/earliest possible finish is \S+Z/) })] });
      expect(await network().events({ types: ['JobSubmitted'] })).toHaveLength(before);

      const warned = await client.submit(late, { deadlinePolicy: 'warn' });
      expect(warned.warnings).toEqual([expect.objectContaining({ path: 'request.deadline' })]);
      // A deadline the plan meets is accepted without warnings.
      const fine = await client.submit({ ...late, request: { ...late.request, deadline: '+1h' } });
      expect(fine.warnings).toBeUndefined();
      // The estimate each deadline was accepted on is in the job's record, to be held against its actual start and end.
      const quoteOf = async (jobId: string) =>
        ((await network().events({ types: ['JobSubmitted'] })).find((e) => (e.data as { jobId: string }).jobId === jobId)!.data as { deadlineAt: string; quote?: { expectedStart: string; expectedEnd: string; quotedAt: string } });
      const warnedRecord = await quoteOf(warned.jobId);
      expect(Date.parse(warnedRecord.quote!.expectedEnd)).toBeGreaterThan(Date.parse(warnedRecord.deadlineAt));
      const fineRecord = await quoteOf(fine.jobId);
      expect(Date.parse(fineRecord.quote!.expectedEnd)).toBeLessThanOrEqual(Date.parse(fineRecord.deadlineAt));
      expect(Date.parse(fineRecord.quote!.expectedEnd) - Date.parse(fineRecord.quote!.expectedStart)).toBe(MINUTE);
      await Promise.all([blocker, warned.jobId, fine.jobId].map((id) => client.cancel(id)));
    }),
    60_000,
  );

  it(
    'a queued job whose deadline passes ends `deadline` without running, and is billed nothing',
    e2e(async () => {
      const client = network().client();
      const { jobId: blocker } = await client.submit(scriptJob('sleep 60', { gpus: 4, timeLimit: '10m' }));
      await until('the blocker is placed', async () => ((await client.getJob(blocker)).attempts.length > 0 ? true : undefined), { timeoutMs: 20_000 });
      const spec = { ...scriptJob('echo never', { gpus: 1, timeLimit: '1m' }), request: { gpus: 1, timeLimit: '1m', deadline: '+3s' } };
      const { jobId } = await client.submit(spec, { deadlinePolicy: 'warn' });
      const view = await until('the job ends at its deadline', async () => {
        const v = await client.getJob(jobId);
        return v.state === 'deadline' ? v : undefined;
      }, { timeoutMs: 15_000 });
      expect(view.attempts).toEqual([]);
      const withdrawn = (await network().events({ types: ['JobWithdrawn'] })).filter((e) => (e.data as { jobId: string }).jobId === jobId);
      expect(withdrawn.map((e) => (e.data as { outcome: string }).outcome)).toEqual(['deadline']);
      expect(Date.parse(withdrawn[0]!.metadata.occurredAt)).toBeGreaterThanOrEqual(Date.parse(view.submittedAt) + 3_000);
      expect((await client.charges({ jobId })).lines).toEqual([]);
      await client.cancel(blocker);
    }),
    60_000,
  );

  it(
    'gpunet status shows a waiting job\'s place in the live plan and its expected start',
    e2e(async () => {
      const client = network().client();
      const { jobId: blocker } = await client.submit(scriptJob('sleep 60', { gpus: 4, timeLimit: '3m' }));
      const held = await until('the blocker holds its GPUs', async () => (await client.getJob(blocker)).attempts[0]?.heldAt, { timeoutMs: 20_000 });
      const { jobId } = await client.submit(scriptJob('echo waiting', { gpus: 2, timeLimit: '1m' }));
      const entry = await until('the plan counts from the hold', async () => {
        const e = (await client.queue(jobId)).pending[0];
        return e?.expectedStart !== undefined && Date.parse(e.expectedStart) === Date.parse(held) + 3 * MINUTE ? e : undefined;
      }, { timeoutMs: 15_000 });
      expect(entry).toMatchObject({ jobId, reason: 'Resources', rank: 1 });
      // A job that no longer waits (the running blocker) has no entry.
      expect((await client.queue(blocker)).pending).toEqual([]);

      const env = { GPUNET_URL: network().url, GPUNET_API_KEY: network().apiKey };
      const chunks: Buffer[] = [];
      const out = new PassThrough();
      out.on('data', (c: Buffer) => chunks.push(c));
      const err = new PassThrough();
      err.resume();
      expect(await runCli(['status', jobId], { stdout: out, stderr: err, env, cwd: network().dataDir })).toBe(0);
      expect(Buffer.concat(chunks).toString('utf8')).toMatch(new RegExp(`queue {6}#\\d+ in line, Resources; expected start in .+ \\(${entry.expectedStart!.replace(/\./g, '\\.')}\\)`));
      // The first start shown is recorded as the job's quote, once; later ones are not.
      const quoted = (await network().events({ types: ['JobQuoted'] })).filter((e) => (e.data as { jobId: string }).jobId === jobId);
      expect(quoted).toHaveLength(1);
      const quote = quoted[0]!.data as { expectedStart: string; quotedAt: string };
      expect(Date.parse(quote.quotedAt)).toBeGreaterThanOrEqual(Date.parse(held));
      // Cancelling the blocker frees its GPUs: the job starts, and its JobPlaced carries the quote it was given.
      await client.cancel(blocker);
      const placed = await until('the job is placed', async () => (await network().events({ types: ['JobPlaced'] })).find((e) => (e.data as { jobId: string }).jobId === jobId), { timeoutMs: 30_000 });
      expect((placed.data as { quote?: unknown }).quote).toEqual({ expectedStart: new Date(Date.parse(quote.expectedStart)).toISOString(), quotedAt: new Date(Date.parse(quote.quotedAt)).toISOString() });
      await client.cancel(jobId);
    }),
    60_000,
  );

  it(
    'gpunet capacity: free GPUs per model per hour from the live plan, as a table and with --json',
    e2e(async () => {
      const client = network().client();
      const { jobId } = await client.submit(scriptJob('sleep 60', { gpus: 3, timeLimit: '90m' }));
      await until('it is placed', async () => ((await client.getJob(jobId)).attempts.length > 0 ? true : undefined), { timeoutMs: 20_000 });
      // Busy for 90 min from its hold: hours 0 and 1 have 1 free sim-gpu, hour 2 on all 4.
      const c = await until('the plan holds it', async () => {
        const r = await client.capacity({ hours: 3 });
        return r.hours[0]?.free[0]?.gpus === 1 ? r : undefined;
      }, { timeoutMs: 10_000 });
      expect(c.totals).toEqual([{ gpuModel: 'sim-gpu', gpus: 4 }]);
      expect(c.hours.map((h) => h.free)).toEqual([[{ gpuModel: 'sim-gpu', gpus: 1 }], [{ gpuModel: 'sim-gpu', gpus: 1 }], [{ gpuModel: 'sim-gpu', gpus: 4 }]]);

      const env = { GPUNET_URL: network().url, GPUNET_API_KEY: network().apiKey };
      const run = async (args: string[]) => {
        const chunks: Buffer[] = [];
        const out = new PassThrough();
        out.on('data', (b: Buffer) => chunks.push(b));
        const err = new PassThrough();
        err.resume();
        const code = await runCli(args, { stdout: out, stderr: err, env, cwd: network().dataDir });
        return { code, text: Buffer.concat(chunks).toString('utf8') };
      };
      const human = await run(['capacity']);
      expect(human.code).toBe(0);
      expect(human.text).toMatch(/hour \(UTC\)\s+sim-gpu/);
      expect(human.text.trim().split('\n').filter((l) => /\d\/4$/.test(l.trim()))).toHaveLength(24);
      const json = await run(['capacity', '--hours', '2', '--json']);
      expect(JSON.parse(json.text).hours).toHaveLength(2);

      // GPU quotas (decision 0027): a billing key sets one with `gpunet quota set`; the team's
      // next job of the model waits with QuotaExceeded and capacity shows the quota in use.
      const billing = await network().client(network().team, network().adminApiKey).createApiKey({ team: network().team, role: 'billing', name: 'e2e-billing' });
      const asBilling = async (args: string[]) => {
        const out = new PassThrough();
        const chunks: Buffer[] = [];
        out.on('data', (b: Buffer) => chunks.push(b));
        const err = new PassThrough();
        err.resume();
        const code = await runCli(args, { stdout: out, stderr: err, env: { GPUNET_URL: network().url, GPUNET_API_KEY: billing.apiKey }, cwd: network().dataDir });
        return { code, text: Buffer.concat(chunks).toString('utf8') };
      };
      expect((await run(['quota', 'set', '--team', network().team, '--model', 'sim-gpu', '--gpus', '3'])).code).not.toBe(0);
      const set = await asBilling(['quota', 'set', '--team', network().team, '--model', 'sim-gpu', '--gpus', '3', '--gpu-hours', '100', '--borrow', 'off']);
      expect(set.code).toBe(0);
      expect(set.text).toMatch(new RegExp(`${network().team}\\s+sim-gpu\\s+3\\s+3\\s+0\\s+0\\.\\d/100\\s+off`));
      const { jobId: over } = await client.submit(scriptJob('echo over', { gpus: 1, timeLimit: '10m' }));
      const waiting = await until('it waits at its quota', async () => {
        const q = (await client.queue(over)).pending[0];
        return q?.reason === 'QuotaExceeded' ? q : undefined;
      }, { timeoutMs: 20_000 });
      expect(waiting.reasonDetail).toContain('holds 3 of its 3 sim-gpu GPUs');
      const withQuotas = await run(['capacity', '--hours', '1']);
      expect(withQuotas.text).toMatch(/TEAM\s+GPU MODEL\s+QUOTA\s+IN USE\s+BORROWED/);
      const shown = await run(['quota', 'show', '--json']);
      expect(JSON.parse(shown.text).quotas).toEqual([expect.objectContaining({ team: network().team, gpuModel: 'sim-gpu', gpus: 3, inUse: 3, waiting: 1 })]);
      expect((await asBilling(['quota', 'set', '--team', network().team, '--model', 'sim-gpu', '--gpus', 'none', '--gpu-hours', 'none'])).code).toBe(0);
      await Promise.all([jobId, over].map((id) => client.cancel(id)));
    }),
    90_000,
  );
});
