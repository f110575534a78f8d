/**
 * Billing across real processes (`gpunet up`: one agent of 2 simulated GPUs): a `billing` key
 * publishes a price list with the CLI (and over NATS), a producer key may not; a job runs under
 * it; its monthly invoice (a draft: this month is open) shows the attempt's line as the CLI and
 * HTTP give it to a billing key, equal to the ledger's usage line; it replays identically over
 * HTTP, a what-if price list reprices it, and its dispute bundle downloads and checks with
 * `gpunet verify --bundle`; a producer key is refused every invoice route, another team's billing
 * key finds none of them; `gpunet ledger rebuild` recomputes the ledger's projections with
 * byte-identical invoices.
 */
import { Commands, HEADERS, type InvoiceView, type ListInvoicesReply, type ListPriceListsReply, type PriceListPublished, type RebuildLedgerReply, type ReplayInvoiceReply } from '#contracts';
import { requestQuery } from '#messaging';
import { GpunetClient } from '#sdk';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { natsAuthOptions } from '#identity';
import { connect, headers } from '@nats-io/transport-node';
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { readState } from '../../libs/cli/src/local/state.js';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

const billingKey = randomBytes(32).toString('hex');
const otherTeamKey = randomBytes(32).toString('hex');
const sha = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');
const clients: GpunetClient[] = [];
const clientWith = (apiKey: string) => {
  const c = new GpunetClient({ baseUrl: network().url, apiKey });
  clients.push(c);
  return c;
};

async function cli(args: string[], apiKey = network().apiKey): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const code = await runCli(args, { stdout: out, stderr: err, env: { GPUNET_URL: network().url, GPUNET_API_KEY: apiKey }, cwd: network().dataDir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

let jobId = '';

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 2 });
  const state = await readState(net.dataDir);
  await appendFile(
    state!.apiKeysFile,
    `- { id: billing-desk, sha256: ${sha(billingKey)}, team: ${net.team}, role: billing }\n- { id: team-b-billing, sha256: ${sha(otherTeamKey)}, team: team-b, role: billing }\n`,
  );
  await net.kill('intake', 'SIGTERM');
  await net.restart('intake');
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await net?.stop();
}, 60_000);

describe('billing', () => {
  it(
    'a billing key publishes a price list with the CLI and over NATS; other roles may not',
    e2e(async () => {
      const file = join(network().dataDir, 'prices.yaml');
      // sim-gpu at 7.20/h (2 µ per GPU-ms) with a minimum of 5.00 per line.
      await writeFile(file, 'currency: EUR\nratesMicrosPerGpuHour:\n  sim-gpu: 7200000\ndefaultRateMicrosPerGpuHour: 2000000\nminimumChargeMicros: 5000000\n');
      const denied = await cli(['prices', 'publish', file]);
      expect(denied.code).toBe(2);
      expect(denied.err).toMatch(/billing/);

      const published = await cli(['prices', 'publish', file, '--json'], billingKey);
      expect(published.code).toBe(0);
      const v2 = JSON.parse(published.out) as PriceListPublished;
      expect(v2).toMatchObject({ version: 2, currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 7_200_000 }, minimumChargeMicros: 5_000_000, publishedBy: `${network().team}/billing-desk` });

      const past = join(network().dataDir, 'past.yaml');
      await writeFile(past, 'currency: EUR\neffectiveFrom: "2020-01-01T00:00:00Z"\nratesMicrosPerGpuHour: { sim-gpu: 1 }\n');
      const refused = await cli(['prices', 'publish', past], billingKey);
      expect(refused.code).toBe(2);
      expect(refused.err).toMatch(/effectiveFrom/);

      const listed = JSON.parse((await cli(['prices', 'list', '--json'])).out) as ListPriceListsReply;
      expect(listed.versions.map((v) => v.version)).toEqual([1, 2]);
      expect(listed.current).toBe(2);
      expect((await cli(['prices', 'list'])).out).toMatch(/2\*/);

      // NATS: the same command, the key in the Authorization header, from the team's own NATS identity.
      const nc = await connect({ ...(await natsAuthOptions(network().teamCredentials(network().team).natsKeyFile)), servers: network().natsUrl });
      try {
        const ask = (key: string) => {
          const h = headers();
          h.set(HEADERS.authorization, `Bearer ${key}`);
          const c = Commands.PublishPriceList;
          return requestQuery<PriceListPublished>(nc, c.subject, { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 7_200_000 }, minimumChargeMicros: 5_000_000 }, { request: c.schema, response: c.replySchema }, { headers: h });
        };
        await expect(ask(network().apiKey)).rejects.toMatchObject({ code: 'forbidden' });
        expect(await ask(billingKey)).toMatchObject({ version: 3, publishedBy: `${network().team}/billing-desk` });
      } finally {
        await nc.close();
      }
    }),
    60_000,
  );

  it(
    "the month's invoice is a draft with the attempt's line, as the ledger recorded its usage",
    e2e(async () => {
      const submitted = await network().client().submit(scriptJob('sleep 1', { gpus: 1, name: 'billed' }));
      jobId = submitted.jobId;
      await settle(network(), [jobId]);
      const [usage] = (await network().client().charges({ jobId })).lines;
      expect(usage).toMatchObject({ priceListVersion: 3, rateMicrosPerGpuHour: 7_200_000, amountMicros: 5_000_000 });

      const list = JSON.parse((await cli(['invoices', 'list', '--json'], billingKey)).out) as ListInvoicesReply;
      const month = new Date().toISOString().slice(0, 7);
      const id = `inv-${network().team}-${month}`;
      expect(list.invoices.find((i) => i.invoiceId === id)).toMatchObject({ status: 'draft', month, lines: 1, totals: [{ currency: 'EUR', amountMicros: 5_000_000 }] });

      const shown = await cli(['invoice', 'show', id, '--json'], billingKey);
      expect(shown.code).toBe(0);
      const invoice = JSON.parse(shown.out) as InvoiceView;
      expect(invoice.lines).toEqual([
        expect.objectContaining({
          jobId,
          run: 1,
          nodeId: usage!.nodeId,
          gpuModel: 'sim-gpu',
          gpus: 1,
          heldFrom: usage!.heldFrom,
          finishedAt: usage!.finishedAt,
          billableMs: usage!.billableMs,
          rateMicrosPerGpuHour: 7_200_000,
          amountMicros: 5_000_000,
          minimumApplied: true,
        }),
      ]);
      expect(invoice.lines[0]!.eventIds.length).toBeGreaterThanOrEqual(3);
      expect(invoice.postings.map((p) => [p.account, p.side, p.amountMicros])).toEqual([
        [`receivable:${network().team}`, 'debit', 5_000_000],
        ['revenue:compute', 'credit', 5_000_000],
      ]);
      // The text form, and `gpunet invoice <id>` is the same invoice; `gpunet invoice <job-id>` keeps the charges.
      expect((await cli(['invoice', id], billingKey)).out).toMatch(/draft/);
      expect((await cli(['invoice', jobId])).out).toMatch(/total 5\.000000 EUR/);
      // Another team's invoice is not found, even by its billing key.
      await expect(clientWith(otherTeamKey).invoice(id)).rejects.toMatchObject({ status: 404 });
    }),
    90_000,
  );

  it(
    'a producer key is refused the invoices, their replay and their bundle, naming the roles that may; another team\'s billing key finds none of them; a billing key replays, runs a what-if and downloads a bundle that verifies',
    e2e(async () => {
      const id = `inv-${network().team}-${new Date().toISOString().slice(0, 7)}`;
      const call = (key: string, method: string, path: string, body?: unknown) =>
        fetch(`${network().url}${path}`, { method, headers: { Authorization: `Bearer ${key}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      // The recorded line is the 5.00 minimum: a what-if minimum of 8.00 makes it 8.00.
      const whatIf = { prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 36_000_000 }, minimumChargeMicros: 8_000_000 } };
      const routes: [string, string, unknown?][] = [
        ['GET', '/v1/invoices'],
        ['GET', `/v1/invoices/${id}`],
        ['POST', `/v1/invoices/${id}/replay`, {}],
        ['POST', `/v1/invoices/${id}/replay`, whatIf],
        ['GET', `/v1/invoices/${id}/dispute-bundle`],
      ];
      for (const [method, path, body] of routes) {
        const res = await call(network().apiKey, method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 403]);
        const { error } = (await res.json()) as { error: { code: string; message: string } };
        expect(error.code).toBe('forbidden');
        expect(error.message).toMatch(/role producer, which may not do invoices:read; that needs a key with role compliance or billing or admin/);
      }
      // Team b's billing key: team a's invoice does not exist for it (the list is its own team's).
      for (const [method, path, body] of routes.slice(1)) {
        const res = await call(otherTeamKey, method, path, body);
        expect([method, path, res.status]).toEqual([method, path, 404]);
      }
      expect(((await (await call(otherTeamKey, 'GET', '/v1/invoices')).json()) as ListInvoicesReply).invoices.map((i) => i.invoiceId)).not.toContain(id);

      // The billing key: identical, then a what-if, then the bundle as a file.
      const same = (await (await call(billingKey, 'POST', `/v1/invoices/${id}/replay`)).json()) as ReplayInvoiceReply;
      expect(same).toMatchObject({ invoiceId: id, invoiceStatus: 'draft', whatIf: false, identical: true });
      expect(same.lines.every((l) => l.identical && l.recordedAmountMicros === l.replayedAmountMicros)).toBe(true);
      const priced = (await (await call(billingKey, 'POST', `/v1/invoices/${id}/replay`, whatIf)).json()) as ReplayInvoiceReply;
      expect(priced).toMatchObject({ whatIf: true, identical: false });
      expect(priced.totals).toEqual([{ currency: 'EUR', recordedMicros: 5_000_000, replayedMicros: 8_000_000, identical: false }]);
      const bad = await call(billingKey, 'POST', `/v1/invoices/${id}/replay`, { prices: { currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': '2.50' } } });
      expect(bad.status).toBe(400);
      expect(JSON.stringify(await bad.json())).toMatch(/prices\.ratesMicrosPerGpuHour/);

      const res = await call(billingKey, 'GET', `/v1/invoices/${id}/dispute-bundle`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${id}.bundle.json"`);
      const file = join(network().dataDir, `${id}.bundle.json`);
      await writeFile(file, await res.text());
      const checked = await cli(['verify', '--bundle', file]);
      expect(checked.err).toBe('');
      expect(checked.code).toBe(0);
      expect(checked.out).toMatch(new RegExp(`holds: invoice ${id}`));
    }),
    60_000,
  );

  it(
    'gpunet ledger rebuild recomputes the projections from zero with byte-identical invoices',
    e2e(async () => {
      const before = await clientWith(billingKey).invoices();
      const denied = await cli(['ledger', 'rebuild']);
      expect(denied.code).toBe(2);
      const run = await cli(['ledger', 'rebuild', '--json'], billingKey);
      expect(run.code).toBe(0);
      const reply = JSON.parse(run.out) as RebuildLedgerReply;
      expect(reply.identical).toBe(true);
      expect(reply.invoices.map((i) => i.invoiceId)).toEqual(before.invoices.map((i) => i.invoiceId).sort());
      expect(reply.invoices.every((i) => i.before === i.after)).toBe(true);
      expect((await cli(['ledger', 'rebuild'], billingKey)).out).toMatch(/every invoice byte-identical/);
    }),
    60_000,
  );
});
