/**
 * Attack: someone with file access to the SQLite store of a running network (`gpunet up`) rewrites
 * a job's ComputeHeld.heldAt and its usage line to bill less, recomputing the hash chain and the
 * stream heads exactly as the store computes them. Before signed chain heads this passed
 * `gpunet verify`, `gpunet replay job` and, for a bundle re-chained the same way,
 * `gpunet verify --bundle` — each is shown still passing those chain-only checks here. With the
 * heads signed by the ledger's notary (network key, ed25519) it fails: `verify` (the store's own
 * digests), `verify --digests DIR` (digests exported before the attack, also after the attacker
 * deletes the store's digests), `replay invoice` and `replay job` name the stream and the
 * rewritten position; `dispute-bundle` refuses the store; a re-chained bundle fails
 * `verify --bundle --public-key`.
 */
import type { InvoiceView, UsageRecorded } from '#contracts';
import { DIGEST_STREAM } from '#contracts';
import { computeEventHash, GENESIS_HASH, type RecordedEvent } from '#event-store';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { readState } from '../../libs/cli/src/local/state.js';
import { runCli } from '../../libs/cli/src/program.js';
import { billableMs, chargeMicros, deriveInvoice } from '../../services/ledger/src/domain/index.js';
import type { DisputeBundle } from '../../services/ledger/src/replay/bundle.js';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { until } from '../support/poll.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { deleteStream, rechainStream } from '../support/store-tamper.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

/** The CLI in-process; `keyless` runs it outside the network's data directory, so no public key is known (the check as it was). */
async function cli(args: string[], options: { keyless?: boolean } = {}): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const dataDir = options.keyless ? join(network().dataDir, 'elsewhere') : network().dataDir;
  const code = await runCli([...args, '--data-dir', dataDir], { stdout: out, stderr: err, env: {}, cwd: network().dataDir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

const file = () => network().storeUrl.replace(/^sqlite:/, '');
const path = (name: string) => join(network().dataDir, name);
let jobId = '';
let invoiceId = '';
let publicKey = '';
let held: RecordedEvent;
const SHIFT_MS = 600;

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 2 });
  await mkdir(path('elsewhere'));
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('a store rewritten with a recomputed chain, against signed chain heads', () => {
  it(
    'gpunet up gives the signing key to the ledger only, 0600 in a 0700 directory, and records the public key',
    e2e(async () => {
      const state = (await readState(network().dataDir))!;
      expect(state.signingPublicKey).toMatch(/^U[A-Z2-7]{55}$/);
      publicKey = state.signingPublicKey!;
      const { stat } = await import('node:fs/promises');
      expect((await stat(state.signingKeyFile!)).mode & 0o777).toBe(0o600);
      expect((await stat(join(network().dataDir, 'keys'))).mode & 0o777).toBe(0o700);
      const holders = state.processes.filter((p) => Object.values(p.env ?? {}).includes(state.signingKeyFile!)).map((p) => p.name);
      expect(holders).toEqual(['ledger']);
      expect(JSON.stringify(state)).not.toContain((await readFile(state.signingKeyFile!, 'utf8')).trim());
    }),
  );

  it(
    'a job runs to completion; its heads are signed on demand and exported; everything verifies',
    e2e(async () => {
      const submitted = await network().client().submit(scriptJob('sleep 1', { gpus: 2, name: 'tampered' }));
      jobId = submitted.jobId;
      const { events } = await settle(network(), [jobId]);
      held = events.find((e) => e.type === 'ComputeHeld')!;
      // The ledger's last word on the job (after its usage line): the replays below compare it too.
      await until('the job\'s JobEnded to be recorded', async () => (await jobEvents(network(), [jobId], ['JobEnded'])).length === 1, { timeoutMs: 60_000, intervalMs: 200 });
      invoiceId = `inv-${network().team}-${new Date().toISOString().slice(0, 7)}`;

      const signed = await cli(['digests', 'sign', '--json']);
      expect(signed.err).toBe('');
      expect(signed.code).toBe(0);
      const reply = JSON.parse(signed.out) as { signed: boolean; digest: { sequence: number; position: string; publicKey: string } };
      expect(reply.digest.publicKey).toBe(publicKey);
      expect(BigInt(reply.digest.position)).toBeGreaterThanOrEqual(held.position);
      // Nothing moved since: the same digest, not a new one.
      expect(JSON.parse((await cli(['digests', 'sign', '--json'])).out)).toMatchObject({ signed: false, digest: { sequence: reply.digest.sequence } });

      const exported = await cli(['digests', 'export', 'digests']);
      expect(exported.code).toBe(0);
      expect((await readdir(path('digests'))).length).toBe(reply.digest.sequence);

      const ok = await cli(['verify', '--digests', 'digests']);
      expect(ok.code).toBe(0);
      expect(ok.out).toMatch(/signed heads hold: \d+ digest\(s\) checked \(\d+ exported earlier, every one still in the store\)/);
      expect((await cli(['replay', 'job', jobId])).code).toBe(0);

      // Invoices are a billing key's (a producer reads charges): the operator issues one.
      const issued = await fetch(`${network().url}/v1/keys`, { method: 'POST', headers: { Authorization: `Bearer ${network().adminApiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ team: network().team, role: 'billing' }) });
      expect(issued.status).toBe(201);
      const billingKey = ((await issued.json()) as { apiKey: string }).apiKey;
      const invoice = (await network().client(network().team, billingKey).invoice(invoiceId)) as InvoiceView;
      await writeFile(path('invoice.json'), JSON.stringify(invoice));
      expect((await cli(['replay', 'invoice', invoiceId, '--invoice', 'invoice.json'])).code).toBe(0);

      const bundled = await cli(['dispute-bundle', invoiceId, '--out', 'bundle.json']);
      expect(bundled.code).toBe(0);
      expect(bundled.out).toContain(`--public-key ${publicKey}`);
      const checked = await cli(['verify', '--bundle', 'bundle.json', '--public-key', publicKey]);
      expect(checked.out).toMatch(/signed heads hold/);
      expect(checked.code).toBe(0);
    }),
    120_000,
  );

  it(
    'attack: a re-chained dispute bundle passes the chain-only check and fails verify --bundle --public-key',
    e2e(async () => {
      const bundle = JSON.parse(await readFile(path('bundle.json'), 'utf8')) as DisputeBundle;
      const all = bundle.streams.flatMap((s) => s.events);
      const e = all.find((x) => x.eventId === held.eventId)!;
      const data = e.data as { heldAt: string };
      data.heldAt = new Date(Date.parse(data.heldAt) + SHIFT_MS).toISOString();
      const s = bundle.streams.find((x) => x.streamId === e.streamId)!;
      const rechain = () => {
        let prev = GENESIS_HASH;
        for (const x of s.events) {
          x.hash = computeEventHash(prev, { ...x, revision: BigInt(x.revision), position: BigInt(x.position) });
          prev = x.hash;
        }
        s.head = { ...s.head, hash: prev };
        const ordered = [...all].sort((a, b) => Number(BigInt(a.position) - BigInt(b.position))).map((x) => ({ ...x, position: BigInt(x.position) }));
        bundle.invoice = deriveInvoice(ordered, { team: network().team, month: bundle.invoice.month, asOf: BigInt(bundle.invoice.derivedAtPosition) });
      };
      rechain();
      // The agent signed ComputeHeld when it reported it: the edit breaks the node's signature, key or no key.
      await writeFile(path('forged-signed.json'), JSON.stringify(bundle));
      const nodeSigned = await cli(['verify', '--bundle', 'forged-signed.json', '--json'], { keyless: true });
      expect(nodeSigned.code).toBe(1);
      expect(nodeSigned.out).toMatch(/report signature on event .* does not hold/);
      // So the attacker drops the node's signature as well, and re-chains again.
      const meta = e.metadata as { report?: unknown };
      delete meta.report;
      bundle.reports = (bundle.reports ?? []).filter((r) => r.eventId !== e.eventId);
      rechain();
      await writeFile(path('forged.json'), JSON.stringify(bundle));

      const before = await cli(['verify', '--bundle', 'forged.json'], { keyless: true });
      expect(before.code).toBe(0);
      const after = await cli(['verify', '--bundle', 'forged.json', '--public-key', publicKey, '--json']);
      expect(after.code).toBe(1);
      const report = JSON.parse(after.out) as { ok: boolean; problems: { check: string; streamId?: string; message: string }[] };
      expect(report.problems[0]).toMatchObject({ check: 'signature', streamId: held.streamId });
      expect(report.problems[0]!.message).toMatch(/edited and re-chained/);
      // The key from a file works the same.
      await writeFile(path('network.pub'), `${publicKey}\n`);
      expect((await cli(['verify', '--bundle', 'forged.json', '--public-key', 'network.pub'])).code).toBe(1);
    }),
    60_000,
  );

  it(
    'attack: heldAt, the usage line and JobEnded rewritten, chain recomputed: chain-only checks pass; verify, --digests, replay invoice and replay job name the position',
    e2e(async () => {
      const usageStream = `ledger-usage-${jobId}`;
      // The attacker: triggers dropped, heldAt moved later, the usage line made to agree, every hash and head recomputed.
      const heldAt = Date.parse((held.data as { heldAt: string }).heldAt) + SHIFT_MS;
      expect(rechainStream(file(), held.streamId, (e) => (e.type === 'ComputeHeld' ? { ...e.data, heldAt: new Date(heldAt).toISOString() } : undefined))).toEqual([held.position]);
      let rewritten: { billableMs: number; amountMicros: number } | undefined;
      rechainStream(file(), usageStream, (e) => {
        const u = e.data as unknown as UsageRecorded;
        const ms = billableMs(heldAt, Date.parse(u.finishedAt));
        rewritten = { billableMs: ms, amountMicros: chargeMicros(u.gpus, ms, u.rateMicrosPerGpuHour) };
        return { ...e.data, heldFrom: new Date(heldAt).toISOString(), ...rewritten };
      });
      // And the job's end, whose billed total is the usage line's: a careful attacker leaves nothing that disagrees.
      rechainStream(file(), `ledger-job-${jobId}`, (e) => {
        if (e.type !== 'JobEnded') return undefined;
        const billed = (e.data as { billed: { billableMs: number; totals: { currency: string; amountMicros: number }[] } }).billed;
        return { ...e.data, billed: { billableMs: rewritten!.billableMs, totals: billed.totals.map((t) => ({ ...t, amountMicros: rewritten!.amountMicros })) } };
      });

      // As it was: the chain holds, and the job's usage line replays identical.
      const chainOnly = await cli(['verify', '--store', network().storeUrl], { keyless: true });
      expect(chainOnly.code).toBe(0);
      expect(chainOnly.out).toMatch(/the hash chain holds/);
      const replayedBefore = await cli(['replay', 'job', jobId, '--store', network().storeUrl, '--json'], { keyless: true });
      expect(JSON.parse(replayedBefore.out)).toMatchObject({ identical: true });
      expect(replayedBefore.code).toBe(0);

      const at = `position ${held.position} in stream ${held.streamId}`;
      const verify = await cli(['verify']);
      expect(verify.code).toBe(1);
      expect(verify.out).toContain(`the store does not match its signed heads at ${at} (revision 0)`);
      const withDigests = await cli(['verify', '--digests', 'digests', '--json']);
      expect(withDigests.code).toBe(1);
      expect(JSON.parse(withDigests.out)).toMatchObject({ ok: false, firstBadPosition: held.position.toString(), streamId: held.streamId, revision: '0' });

      const invoice = await cli(['replay', 'invoice', invoiceId, '--invoice', 'invoice.json']);
      expect(invoice.code).toBe(1);
      expect(invoice.out).toContain(`replay of invoice ${invoiceId} refused: the store does not verify`);
      expect(invoice.out).toContain(at);
      const job = await cli(['replay', 'job', jobId, '--json']);
      expect(job.code).toBe(1);
      expect(JSON.parse(job.out)).toMatchObject({ verified: false, identical: false, firstBadPosition: held.position.toString(), streamId: held.streamId });
      const bundle = await cli(['dispute-bundle', invoiceId, '--out', 'after.json']);
      expect(bundle.code).toBe(1);
      expect(bundle.out).toContain(at);
    }),
    90_000,
  );

  it(
    'attack: the store\'s digests deleted as well: verify alone says nothing vouches for the history; verify --digests DIR names the missing digest',
    e2e(async () => {
      deleteStream(file(), DIGEST_STREAM);
      const alone = await cli(['verify']);
      expect(alone.code).toBe(0);
      expect(alone.out).toMatch(/the store records no signed digest yet/);
      expect(alone.out).toMatch(/events after position 0 are not covered by a signature yet/);
      const exported = await cli(['verify', '--digests', 'digests']);
      expect(exported.code).toBe(1);
      expect(exported.out).toMatch(/digest #1 \(covering position \d+, signed .*\) was exported earlier but is not in the store/);
    }),
    60_000,
  );
});
