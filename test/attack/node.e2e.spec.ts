/**
 * Attacks on a node by the jobs it runs, through a whole network started with `gpunet up`
 * (agents as root, as node agents run): a `network: false` job goes for the store, the API keys,
 * the state file and the logs; a job leaves files in /tmp and /dev/shm for the next team's job of
 * the same uid; a memory hog and a disk filler meet their default caps; a job asks for more than
 * the node allows; and the start-up of agent `node-1` must leave alone the running job of an
 * agent named `node-1-b`. Each attack worked before (see docs/decisions/0013-*).
 */
import type { JobFinished, JobView } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { jobEvents, scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure } from '../support/network.js';
import { until } from '../support/poll.js';

const MiB = 2 ** 20;
/** This network's job uids: no other test network on the machine uses them. */
const JOB_UIDS = '61700-61731';
/** Where agents on this machine claim job uids (as root). */
const UID_CLAIMS = '/run/gpunet/job-uids';
const PARENT = join(process.cwd(), '.gpunet', 'e2e-attack');
let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

async function stdout(jobId: string): Promise<string[]> {
  const lines: string[] = [];
  for await (const l of network().client().logs(jobId)) if (l.stream === 'stdout') lines.push(l.line);
  return lines;
}

async function finishedOf(jobId: string): Promise<JobFinished> {
  const events = await jobEvents(network(), [jobId], ['JobFinished']);
  return events.at(-1)!.data as JobFinished;
}

beforeAll(async () => {
  // Not under /tmp: a job's private /tmp would hide the data dir entirely, and the file modes are what is tested here.
  await mkdir(PARENT, { recursive: true, mode: 0o755 });
  net = await TestNetwork.start({
    parentDir: PARENT,
    agents: 1,
    gpus: 2,
    env: {
      GPUNET_KILL_GRACE_MS: '1000',
      // Job uids of this network's own: uid claims are machine-wide, and the uid attack below
      // needs job B to get job A's uid, not one another network on the machine left free.
      GPUNET_JOB_UIDS: JOB_UIDS,
      GPUNET_DISK_CHECK_MS: '200',
      // The default caps of one GPU's share: small here, so the hogs meet them quickly.
      GPUNET_JOB_MEMORY_PER_GPU_BYTES: String(128 * MiB),
      GPUNET_JOB_DISK_PER_GPU_BYTES: String(16 * MiB),
      GPUNET_JOB_MAX_MEMORY_BYTES: String(1024 * MiB),
    },
  });
}, 120_000);

afterAll(async () => {
  await net?.stop();
  await rmdir(PARENT).catch(() => undefined); // kept when a failed run left its data dir there
}, 60_000);

describe('attack: a job against the node', () => {
  it(
    'cannot read the store, the API keys, the state file or the logs of `gpunet up` (0600 files in 0700 directories)',
    e2e(async () => {
      const data = network().dataDir;
      const targets = ['events.db', 'events.db-wal', 'api-keys.yaml', 'state.json', 'logs/intake.log', 'logs/node-1.log', 'logs/ledger.log', 'nats'].filter((f) => existsSync(join(data, f)));
      expect(targets).toEqual(expect.arrayContaining(['events.db', 'api-keys.yaml', 'state.json', 'logs/intake.log', 'nats']));
      const body = [
        'echo "uid=$(id -u)"',
        ...targets.map((f) => `if cat ${join(data, f)} >/dev/null 2>&1 || ls ${join(data, f)}/ >/dev/null 2>&1; then echo "READ ${f}"; else echo "refused ${f}"; fi`),
        `if ls ${data} >/dev/null 2>&1; then echo "LISTED data dir"; else echo "refused listing"; fi`,
        `if grep -a -l sha256 ${data}/* 2>/dev/null; then echo "GREPPED"; fi`,
      ].join('\n');
      const { jobId } = await network().client().submit(scriptJob(body, { name: 'store-thief' }));
      const { views } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('completed');
      const out = await stdout(jobId);
      expect(out.find((l) => l.startsWith('uid='))).toMatch(/^uid=61\d{3}$/); // a job user, not root
      expect(out.filter((l) => /^(READ|LISTED|GREPPED)/.test(l))).toEqual([]);
      expect(out.filter((l) => l.startsWith('refused'))).toHaveLength(targets.length + 1);

      // And the modes an operator can check.
      const mode = async (p: string) => (await stat(join(data, p))).mode & 0o777;
      for (const f of ['events.db', 'api-keys.yaml', 'state.json', 'logs/intake.log']) expect([f, await mode(f)]).toEqual([f, 0o600]);
      for (const d of ['logs', 'nats']) expect([d, await mode(d)]).toEqual([d, 0o700]);
      expect(await mode('.')).toBe(0o711); // passable to reach nodes/<id>/runs, never listable
      for (const f of await readdir(join(data, 'logs'))) expect([f, await mode(`logs/${f}`)]).toEqual([f, 0o600]);
    }),
    90_000,
  );

  it(
    'job B of the same uid finds nothing job A left in /tmp, /var/tmp and /dev/shm, and nothing of A is left on the host',
    e2e(async () => {
      const tag = `gpunet-attack-${Date.now()}`;
      const leave = [
        'echo "uid=$(id -u)"',
        `echo secret-of-a > /tmp/${tag}-x; echo secret-of-a > /dev/shm/${tag}-y; echo secret-of-a > /var/tmp/${tag}-z`,
        `chmod 666 /tmp/${tag}-x /dev/shm/${tag}-y /var/tmp/${tag}-z`,
        `ls /tmp/${tag}-x /dev/shm/${tag}-y /var/tmp/${tag}-z | wc -l | sed 's/^/left=/'`,
      ].join('\n');
      const look = [
        'echo "uid=$(id -u)"',
        ...[`/tmp/${tag}-x`, `/dev/shm/${tag}-y`, `/var/tmp/${tag}-z`].map((f) => `if cat ${f} 2>/dev/null; then echo "SAW ${f}"; else echo "nothing at ${f}"; fi`),
      ].join('\n');
      const client = network().client();
      const { jobId: a } = await client.submit(scriptJob(leave, { name: 'leaves-files' }));
      await settle(network(), [a]);
      const outA = await stdout(a);
      // The agent hands A's uid back after A's release is recorded, once A's files are gone: B is submitted after that.
      const uidA = outA.find((l) => l.startsWith('uid='))?.slice('uid='.length);
      expect(uidA).toMatch(/^\d+$/);
      await until(`job A's uid ${uidA} handed back`, () => !existsSync(join(UID_CLAIMS, uidA!)));
      const { jobId: b } = await client.submit(scriptJob(look, { name: 'looks-for-them' }));
      await settle(network(), [b]);
      const outB = await stdout(b);
      expect(outA).toContain('left=3'); // A did write them, in its own /tmp
      // The next job got the same uid (handed back clean), which is what made the attack work before.
      expect(outB.find((l) => l.startsWith('uid='))).toBe(outA.find((l) => l.startsWith('uid=')));
      expect(outB.filter((l) => l.startsWith('SAW') || l === 'secret-of-a')).toEqual([]);
      expect(outB.filter((l) => l.startsWith('nothing at'))).toHaveLength(3);
      for (const f of [`/tmp/${tag}-x`, `/dev/shm/${tag}-y`, `/var/tmp/${tag}-z`]) expect([f, existsSync(f)]).toEqual([f, false]);
    }),
    90_000,
  );

  it(
    'a memory hog is stopped by the default memory cap (128 MiB per GPU here), and its record says so',
    e2e(async () => {
      const { jobId } = await network().client().submit(scriptJob('head -c 1073741824 /dev/zero | tail -n 1 > /dev/null; exit 1', { name: 'hog' }));
      const { views } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('failed');
      const finished = await finishedOf(jobId);
      expect(finished.limit).toBe('memory_limit');
      expect(finished.message).toMatch(/memory limit of 134217728 bytes/);
      expect(views.get(jobId)!.attempts[0]!.limit).toBe('memory_limit');
    }),
    90_000,
  );

  it(
    'a job filling its disk past the default cap (16 MiB per GPU here) is stopped, with disk_limit in its record',
    e2e(async () => {
      const fill = 'for i in $(seq 1 200); do head -c 1048576 /dev/zero > "$GPUNET_WORK_DIR/f$i"; sleep 0.05; done; echo never-stopped';
      const { jobId } = await network().client().submit(scriptJob(fill, { name: 'disk-filler' }));
      const { views } = await settle(network(), [jobId]);
      const view: JobView = views.get(jobId)!;
      expect(view.state).toBe('failed');
      expect(view.limit).toBe('disk_limit');
      expect(view.attempts[0]).toMatchObject({ outcome: 'failed', limit: 'disk_limit', message: expect.stringMatching(/disk limit of 16777216 bytes \(resources\.disk\)/) });
      const finished = await finishedOf(jobId);
      expect(finished).toMatchObject({ outcome: 'failed', limit: 'disk_limit', signal: 'SIGKILL' });
      const lines = await stdout(jobId);
      expect(lines).not.toContain('never-stopped');
    }),
    90_000,
  );

  it(
    'a spec asking for more memory than the node allows is refused before compute is held, naming the field and the limit',
    e2e(async () => {
      const { jobId } = await network().client().submit({ ...scriptJob('echo hi', { name: 'greedy' }), resources: { memory: '2GiB', disk: '8MiB' } } as never);
      const { views } = await settle(network(), [jobId]);
      expect(views.get(jobId)!.state).toBe('failed');
      const finished = await finishedOf(jobId);
      expect(finished.message).toMatch(/resources\.memory asks for 2147483648 bytes, more than node node-1 allows one job \(1073741824 bytes, GPUNET_JOB_MAX_MEMORY_BYTES\)/);
      const types = (await jobEvents(network(), [jobId])).map((e) => e.type);
      expect(types).not.toContain('ComputeHeld');
    }),
    90_000,
  );

  it(
    'the start-up of agent node-1 leaves the running job of agent node-1-b alive (its cgroups are not node-1’s)',
    e2e(async () => {
      // A second agent whose id starts with node-1's id plus `-`: an operator joins it to the network.
      await network().addAgent('node-1-b', { GPUNET_GPU_MODEL: 'other-gpu', GPUNET_GPUS: '1' });
      try {
        await until('node-1-b to register', async () => (await network().events({ types: ['NodeRegistered'] })).some((e) => (e.data as { nodeId: string }).nodeId === 'node-1-b'), {
          timeoutMs: 30_000,
          intervalMs: 200,
        });
        // Placement learns of the node from the bus: wait until it has taken every event so far.
        await until('placement to take the registration', async () => {
          const b = await network().consumerBacklog('placement');
          return b.pending === 0 && b.ackPending === 0;
        }, { timeoutMs: 30_000, intervalMs: 200 });
        const client = network().client();
        const { jobId } = await client.submit({
          ...scriptJob('echo started; sleep 12; echo survived', { name: 'bystander', timeLimit: '2m' }),
          request: { gpus: 1, gpuModel: 'other-gpu', timeLimit: '2m' },
        } as never);
        await until('the bystander to run on node-1-b', async () => (await client.getJob(jobId)).state === 'running', { timeoutMs: 30_000, intervalMs: 100 });
        expect((await client.getJob(jobId)).attempts[0]!.nodeId).toBe('node-1-b');
        // node-1 starts again: its start-up removes the cgroups its killed predecessor left.
        await network().kill('node-1', 'SIGKILL');
        await network().restart('node-1');
        const { views } = await settle(network(), [jobId], { timeoutMs: 60_000 });
        expect(views.get(jobId)!.state).toBe('completed');
        expect(await stdout(jobId)).toContain('survived');
      } finally {
        await network().kill('node-1-b', 'SIGTERM', 20_000);
      }
    }),
    150_000,
  );
});
