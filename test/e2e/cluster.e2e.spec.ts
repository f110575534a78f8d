/**
 * `gpunet up --cluster`: three nats-servers on this machine forming one JetStream cluster (from
 * deploy/nats/cluster.conf, routes authenticated), the store on PostgreSQL, every stream and
 * durable consumer of deploy/topology.yaml at three replicas, a job run to its end, and
 * a GPU machine joining through the cluster, and `gpunet down` stopping all of it.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { natsAuthOptions } from '#identity';
import { connect } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { isAlive } from '../../libs/cli/src/local/processes.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';
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
  const code = await runCli(args, { stdout: out, stderr: err, env: { ...process.env, GPUNET_DATA_DIR: network().dataDir }, cwd: network().dataDir });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

beforeAll(async () => {
  db = await createTestDatabase();
  net = await TestNetwork.start({ agents: 1, gpus: 2, postgresUrl: db.url, cluster: true });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
  await db?.drop();
}, 60_000);

describe('gpunet up --cluster', () => {
  it(
    'runs three nats-servers of one cluster with authenticated routes, R3 streams and consumers, a job to its end, a GPU machine joining through it, and down stops everything',
    e2e(async () => {
      const servers = network().processes.filter((p) => p.role === 'nats');
      expect(servers.map((p) => p.name)).toEqual(['nats-1', 'nats-2', 'nats-3']);
      expect(network().natsUrl.split(',')).toHaveLength(3);
      expect(network().storeUrl).toBe(db!.url);
      for (const s of servers) {
        const conf = readFileSync(s.command[s.command.length - 1]!, 'utf8');
        expect(conf).toMatch(/cluster \{[\s\S]*authorization \{[\s\S]*password: "[A-Za-z0-9_-]{40,}"/);
        expect(conf).toContain('include "../authorization.conf"');
      }

      const jsm = await jetstreamManager(await network().nats());
      for (const stream of ['GPUNET_EVENTS', 'GPUNET_DLQ', 'GPUNET_LOGS', 'GPUNET_WORK']) {
        const info = await jsm.streams.info(stream);
        expect([stream, info.config.num_replicas]).toEqual([stream, 3]);
        // The leader and two followers, on three different servers.
        expect(new Set([info.cluster!.leader, ...info.cluster!.replicas!.map((r) => r.name)]).size).toBe(3);
      }
      for (const durable of ['placement', 'ledger', 'storage', 'storage-released']) {
        const info = await jsm.consumers.info('GPUNET_EVENTS', durable);
        expect([durable, info.cluster!.replicas?.length]).toEqual([durable, 2]);
      }
      expect((await jsm.consumers.info('GPUNET_WORK', 'execution-node-1')).cluster!.replicas).toHaveLength(2);
      // The team's blob bucket (made by `up` as the operator) is replicated too.
      expect((await jsm.streams.info('OBJ_gpunet-blobs-local')).config.num_replicas).toBe(3);

      const { jobId } = await network().client().submit(scriptJob('echo clustered', { gpus: 1 }));
      const settled = await settle(network(), [jobId]);
      expect(settled.views.get(jobId)?.state).toBe('completed');
      expect(settled.events.filter((e) => e.type === 'UsageRecorded')).toHaveLength(1);

      // A GPU machine joins through the cluster: token, join, the authorization rendered again and
      // reloaded on all three servers, then its key is admitted by each of them.
      const token = JSON.parse((await cli(['nodes', 'token', 'gpu-1', '--json'])).out) as { token: string };
      const keyFile = join(network().dataDir, 'gpu-1.nk');
      const joined = await cli(['node', 'join', '--nats', network().natsUrl, '--token', token.token, '--key-file', keyFile, '--json']);
      expect([joined.code, joined.err]).toEqual([0, '']);
      expect((await cli(['nats', 'authorization', '--reload', '--json'])).code).toBe(0);
      expect(readFileSync(join(network().dataDir, 'nats', 'authorization.conf'), 'utf8')).toContain((JSON.parse(joined.out) as { publicKey: string }).publicKey);
      for (const url of network().natsUrl.split(',')) {
        await until(`${url} to admit gpu-1`, async () => {
          try {
            const nc = await connect({ ...(await natsAuthOptions(keyFile)), servers: url, reconnect: false, timeout: 5_000 });
            await nc.close();
            return true;
          } catch {
            return false;
          }
        }, { timeoutMs: 30_000, intervalMs: 100 });
      }

      const all = [...network().processes];
      await network().stop();
      expect(all.filter((p) => isAlive(p.pid)).map((p) => p.name)).toEqual([]);
    }),
    120_000,
  );

  it('refuses --cluster without --postgres, naming the fix', async () => {
    const out = new PassThrough();
    const err = new PassThrough();
    const e: Buffer[] = [];
    err.on('data', (c: Buffer) => e.push(c));
    const code = await runCli(['up', '--cluster', '--data-dir', `${db!.name}-unused`], { stdout: out, stderr: err, env: process.env, cwd: '/tmp' });
    expect(code).not.toBe(0);
    expect(Buffer.concat(e).toString('utf8')).toMatch(/--cluster needs --postgres[\s\S]*fix: pass `--postgres postgres:\/\//);
  });
});
