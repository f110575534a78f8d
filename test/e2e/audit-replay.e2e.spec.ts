/**
 * Replay and dispute bundles of a finalized invoice through the CLI and the ledger's built replay
 * tool (a real child process), on a store chained with an HMAC key: the store holds a month whose
 * invoice the ledger finalized, and later events; `gpunet replay invoice` re-derives it as of its
 * recorded position, `--prices` shows what another list would have charged and writes nothing,
 * the bundle checks offline only with the key, and one edited event is named.
 */
import type { InvoiceFinalized } from '#contracts';
import { openEventStore, type EventStore, type EventToAppend } from '#event-store';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { deriveInvoice } from '../../services/ledger/src/domain/index.js';

const KEY = 'dispute-chain-key';
const TEAM = 'team-a';
const INVOICE = `inv-${TEAM}-2026-06`;
let dir = '';
let storeUrl = '';
let store: EventStore;

function ev(type: string, data: unknown, team?: string): EventToAppend {
  const id = randomUUID();
  const jobId = (data as { jobId?: string }).jobId;
  return { eventId: id, type, data, metadata: { correlationId: id, causationId: id, producer: 'fixture', occurredAt: '2026-06-10T00:00:00.000Z', ...(team ? { team } : {}), ...(jobId ? { jobId } : {}) } };
}

async function job(jobId: string, heldAt: string, finishedAt: string): Promise<void> {
  const attemptId = `${jobId}-a1`;
  await store.appendToStream(`execution-node-1-attempt-${attemptId}`, [
    ev('ComputeHeld', { jobId, attemptId, nodeId: 'node-1', gpuIndices: [0, 1], gpuModel: 'sim-gpu', gpus: 2, heldAt }, TEAM),
    ev('JobFinished', { jobId, attemptId, nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt }, TEAM),
  ]);
}

async function cli(args: string[], env: Record<string, string> = { GPUNET_CHAIN_KEY: KEY }): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const code = await runCli(args, { stdout: out, stderr: err, env, cwd: dir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gpunet-dispute-'));
  storeUrl = `sqlite:${join(dir, 'events.db')}`;
  store = await openEventStore(storeUrl, { chainKey: KEY });
  await store.appendToStream('ledger-pricelist', [
    ev('PriceListPublished', { version: 1, currency: 'EUR', effectiveFrom: '2026-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: { 'sim-gpu': 3_600_000 }, publishedAt: '2026-01-01T00:00:00.000Z' }),
  ]);
  await job('job-1', '2026-06-10T10:00:00.000Z', '2026-06-10T10:20:34.567Z');
  await job('job-2', '2026-06-11T10:00:00.000Z', '2026-06-11T11:00:00.000Z');
  // The ledger finalizes June at the head, with its own derivation, in the invoice's stream.
  const events = await store.readAll({ maxCount: 10_000 });
  const invoice = deriveInvoice(events, { team: TEAM, month: '2026-06', asOf: await store.headPosition() });
  const finalized: InvoiceFinalized = { invoice, finalizedAt: '2026-07-04T00:00:00.000Z', cutoffMs: 259_200_000 };
  await store.appendToStream(`ledger-invoice-${TEAM}-2026-06`, [ev('InvoiceFinalized', finalized, TEAM)]);
  // Later events of the same team do not change a replay as of the recorded position.
  await job('job-3', '2026-06-29T10:00:00.000Z', '2026-06-29T10:30:00.000Z');
}, 30_000);

afterAll(async () => {
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('disputing a finalized invoice', () => {
  it(
    'gpunet replay invoice re-derives it as of its recorded position: identical, exit 0; a what-if price list: the changed lines, exit 1, nothing written',
    async () => {
      const same = await cli(['replay', 'invoice', INVOICE, '--store', storeUrl]);
      expect(same.err).toBe('');
      expect(same.code).toBe(0);
      expect(same.out).toMatch(/= job-1-a1@node-1 {2}same {2}2469134 micro-EUR {2}events( \S+){3}/);
      expect(same.out).not.toContain('job-3');
      expect(same.out).toContain('identical: 2 line(s), byte for byte');

      await writeFile(join(dir, 'half.json'), JSON.stringify({ currency: 'EUR', ratesMicrosPerGpuHour: { 'sim-gpu': 1_800_000 } }));
      const head = await store.headPosition();
      const whatIf = await cli(['replay', 'invoice', INVOICE, '--store', storeUrl, '--prices', 'half.json', '--json']);
      expect(whatIf.code).toBe(1);
      const doc = JSON.parse(whatIf.out) as { identical: boolean; whatIf: boolean; lines: { lineId: string; status: string; changes: { field: string; recorded: unknown; derived: unknown }[] }[] };
      expect(doc).toMatchObject({ identical: false, whatIf: true });
      expect(doc.lines.find((l) => l.lineId === 'job-1-a1@node-1')!.changes).toEqual(
        expect.arrayContaining([
          { field: 'rateMicrosPerGpuHour', recorded: 3_600_000, derived: 1_800_000 },
          { field: 'amountMicros', recorded: 2_469_134, derived: 1_234_567 },
        ]),
      );
      expect(await store.headPosition()).toBe(head);
    },
    30_000,
  );

  it(
    'gpunet verify checks the keyed chain only with the key',
    async () => {
      expect((await cli(['verify', '--store', storeUrl])).code).toBe(0);
      const keyless = await cli(['verify', '--store', storeUrl], {});
      expect(keyless.code).toBe(1);
      expect(keyless.out).toMatch(/the hash chain is broken at position 1/);
    },
    30_000,
  );

  it(
    'the dispute bundle of a finalized invoice checks offline with the key, not without it, and names an edited event',
    async () => {
      const made = await cli(['dispute-bundle', INVOICE, '--store', storeUrl, '--out', 'bundle.json']);
      expect(made.err).toBe('');
      expect(made.code).toBe(0);
      expect(made.out).toContain(`invoice ${INVOICE} (finalized, 2 line(s)`);
      const bundle = JSON.parse(await readFile(join(dir, 'bundle.json'), 'utf8')) as {
        chain: string;
        invoiceStatus: string;
        finalizedEventId: string;
        streams: { streamId: string; events: { eventId: string; type: string; data: { jobId?: string; finishedAt?: string } }[] }[];
      };
      expect(bundle).toMatchObject({ chain: 'hmac-sha256', invoiceStatus: 'finalized' });
      expect(bundle.streams.map((s) => s.streamId)).toEqual(['execution-node-1-attempt-job-1-a1', 'execution-node-1-attempt-job-2-a1', 'ledger-invoice-team-a-2026-06', 'ledger-pricelist']);

      const ok = await cli(['verify', '--bundle', 'bundle.json']);
      expect(ok.code).toBe(0);
      const keyless = await cli(['verify', '--bundle', 'bundle.json'], {});
      expect(keyless.code).toBe(1);
      expect(keyless.out).toContain('GPUNET_CHAIN_KEY');

      const finished = bundle.streams.flatMap((s) => s.events).find((e) => e.type === 'JobFinished' && e.data.jobId === 'job-2')!;
      finished.data.finishedAt = '2026-06-11T10:30:00.000Z';
      await writeFile(join(dir, 'edited.json'), JSON.stringify(bundle));
      const bad = await cli(['verify', '--bundle', 'edited.json', '--json']);
      expect(bad.code).toBe(1);
      const report = JSON.parse(bad.out) as { ok: boolean; problems: { check: string; eventId?: string }[] };
      expect(report.ok).toBe(false);
      expect(report.problems[0]).toMatchObject({ check: 'chain', eventId: finished.eventId });
    },
    30_000,
  );
});
