/**
 * gpunet across separate hosts: the control plane on three control hosts over a 3-node NATS
 * cluster and PostgreSQL on c1, one agent on each GPU host, a producer's CLI on c1. Jobs run on
 * both GPU hosts and are billed, every fact in the store (test/support/gpunet-on-hosts.ts).
 */
import type { JobPlaced, UsageRecorded } from '#contracts';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GpunetOnHosts } from '../support/gpunet-on-hosts.js';
import { until } from '../support/poll.js';

let g: GpunetOnHosts | undefined;
let failed = false;

beforeAll(async () => {
  g = await GpunetOnHosts.start({ gpuHosts: 2, gpus: 1 });
}, 240_000);

afterAll(async () => {
  await g?.stop({ keep: failed });
}, 120_000);

/** A test body whose failure keeps the data directory and shows every process's last log lines. */
const onHosts = (body: (net: GpunetOnHosts) => Promise<void>) => async () => {
  try {
    await body(g!);
  } catch (err) {
    failed = true;
    throw new Error(`${(err as Error).message}\n\n${g!.logTails()}\n(data and logs kept in ${g!.dir})`, { cause: err });
  }
};

describe('gpunet on separate hosts', () => {
  it('runs a producer\'s jobs from the CLI on a control host on both GPU hosts, each completed and billed', onHosts(async (net) => {
    const script = join(net.dir, 'job.sh');
    await writeFile(script, 'echo hello from a GPU host; sleep 1\n', { mode: 0o644 });
    const submitted = await Promise.all(
      [1, 2, 3, 4].map(async (i) => {
        const r = await net.cli(['submit', '--script', script, '--interpreter', 'sh', '--name', `hosts-${i}`, '--time-limit', '1m', '--wait', '--json']);
        if (r.code !== 0) throw new Error(`gpunet submit exited ${r.code}:\n${r.stdout}\n${r.stderr}`);
        // `--json --wait`: the submission, with the job's final view under `job`.
        const doc = JSON.parse(r.stdout) as { jobId: string; job: { state: string; attempts: { nodeId: string }[] } };
        return { jobId: doc.jobId, state: doc.job.state };
      }),
    );
    expect(submitted.map((s) => s.state)).toEqual(['completed', 'completed', 'completed', 'completed']);
    const store = await net.store();
    const jobIds = new Set(submitted.map((s) => s.jobId));
    const events = await until('every job billed in the store', async () => {
      const all = (await store.readAll({ maxCount: 10_000 })).filter((e) => jobIds.has(e.metadata.jobId ?? ''));
      return all.filter((e) => e.type === 'UsageRecorded').length === 4 ? all : undefined;
    }, { timeoutMs: 60_000, intervalMs: 250 });
    const nodes = new Set(events.filter((e) => e.type === 'JobPlaced').map((e) => (e.data as JobPlaced).nodeId));
    expect([...nodes].sort()).toEqual(['node-1', 'node-2']);
    for (const u of events.filter((e) => e.type === 'UsageRecorded')) expect((u.data as UsageRecorded).billableMs).toBeGreaterThan(0);
    expect(await store.verify()).toMatchObject({ ok: true });
  }), 180_000);

  it('runs each single writer as one leader, its standby waiting on another control host (decision 0029)', onHosts(async (net) => {
    for (const role of ['placement', 'storage', 'ledger', 'recorder']) {
      expect(await net.leaderOf(role)).toEqual({ name: role, terms: 1 });
      const standby = `${role}-standby`;
      expect(net.hostOf(standby).name).not.toBe(net.hostOf(role).name);
      await until(`${standby} to wait for the lease`, async () => (await readFile(join(net.dir, 'logs', `${standby}.log`), 'utf8')).includes('"msg":"leader: standby, waiting for the lease"') || undefined, { timeoutMs: 30_000, intervalMs: 250 });
    }
  }), 60_000);
});
