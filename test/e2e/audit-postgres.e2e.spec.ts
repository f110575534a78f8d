/**
 * The audit and replay on the production store: a network of real processes on PostgreSQL
 * (`gpunet up --postgres`). The ledger's audit projection follows the PostgreSQL store, records
 * each query in it, and the replay tool reads it.
 */
import type { AuditQueried } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';

let db: TestDatabase | undefined;
let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const code = await runCli(args, { stdout: out, stderr: err, env: { GPUNET_URL: network().url, GPUNET_API_KEY: network().apiKey }, cwd: network().dataDir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

beforeAll(async () => {
  db = await createTestDatabase();
  net = await TestNetwork.start({ agents: 1, gpus: 2, postgresUrl: db.url });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
  await db?.drop();
}, 60_000);

describe('audit and replay on PostgreSQL', () => {
  it(
    'audit job answers from the PostgreSQL store and records the query there; replay job and verify read it',
    e2e(async () => {
      const { jobId } = await network().client().submit(scriptJob('sleep 1', { gpus: 2 }));
      await settle(network(), [jobId]);
      const a = await network().client().auditJob(jobId);
      expect(a).toMatchObject({ jobId, outcome: 'completed', attempts: [{ gpus: 2, outcome: 'completed' }] });
      expect(a.cost.lines).toHaveLength(1);
      expect(a.durations.heldMs).toBe(a.cost.lines[0]!.billableMs);
      const recorded = (await network().events({ types: ['AuditQueried'] })).find((e) => e.eventId === a.recordedAs);
      expect(recorded?.streamId).toBe('ledger-audit');
      expect((recorded!.data as AuditQueried).parameters).toEqual({ jobId });

      const list = await cli(['audit', 'jobs', '--format', 'csv']);
      expect(list.code).toBe(0);
      expect(list.out.split('\n').filter((l) => l.startsWith(jobId))).toHaveLength(1);

      const replay = await cli(['replay', 'job', jobId, '--store', network().storeUrl]);
      expect(replay.err).toBe('');
      expect(replay.code).toBe(0);
      expect(replay.out).toContain('identical: 1 line(s)');
      const verify = await cli(['verify', '--store', network().storeUrl]);
      expect(verify.code).toBe(0);
      expect(verify.out).toMatch(/the hash chain holds/);
    }),
    90_000,
  );
});
