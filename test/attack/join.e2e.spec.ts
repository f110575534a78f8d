/**
 * Joining a GPU machine with a one-time token (decision 0022), and the attacks on it: a token
 * forged, spent twice, expired, or used for another node id, and the `joiner` identity every
 * token carries trying anything but a join. The machine makes its own key (the seed never leaves
 * it); the store keeps the token's hash only; NATS admits the node once the authorization is
 * rendered again from the enrolled keys.
 */
import { Commands, Events, querySubject } from '#contracts';
import { inboxPrefix, natsAuthOptions } from '#identity';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
let machine: string; // the GPU machine's directory: where `gpunet node join` keeps the node's seed
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const opened: NatsConnection[] = [];

async function cli(args: string[], cwd = network().dataDir): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  const code = await runCli(args, { stdout: out, stderr: err, env: { ...process.env, GPUNET_DATA_DIR: network().dataDir }, cwd });
  return { code, out: Buffer.concat(o).toString('utf8'), err: Buffer.concat(e).toString('utf8') };
}

/** `gpunet nodes token` as the operator: the token it printed. */
async function issue(nodeId: string, ttl = '1h'): Promise<string> {
  const r = await cli(['nodes', 'token', nodeId, '--ttl', ttl, '--json']);
  expect([r.code, r.err]).toEqual([0, expect.stringContaining('shown only now')]);
  return (JSON.parse(r.out) as { token: string }).token;
}

/** `gpunet node join` on the GPU machine (a directory of its own, no data dir of the network). */
async function join_(token: string, keyFile: string): Promise<{ code: number; out: string; err: string }> {
  const r = await cli(['node', 'join', '--nats', network().natsUrl, '--token', token, '--key-file', keyFile, '--json'], machine);
  // With --json an error is a document on stdout; a refusal is read from either.
  return { ...r, err: r.code === 0 ? r.err : `${r.err}${r.out}` };
}

/** Can this seed file's identity connect to the network's NATS? */
async function admitted(keyFile: string): Promise<boolean> {
  try {
    const nc = await connect({ ...(await natsAuthOptions(keyFile)), servers: network().natsUrl, reconnect: false, timeout: 5_000 });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

beforeAll(async () => {
  machine = await mkdtemp(join(tmpdir(), 'gpunet-gpu-machine-'));
  net = await TestNetwork.start({ agents: 0 });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  await net?.stop();
  await rm(machine, { recursive: true, force: true });
}, 60_000);

describe('gpunet node join with a one-time token', () => {
  it(
    'enrolls the key the machine made (its seed stays there), records only the token\'s hash, and NATS admits the node once the authorization is rendered again',
    e2e(async () => {
      const token = await issue('gpu-7');
      const secret = token.split('.')[2]!;
      const keyFile = join(machine, 'gpu-7.nk');
      const r = await join_(token, keyFile);
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      const reply = JSON.parse(r.out) as { status: string; publicKey: string; tokenId: string };
      expect(reply.status).toBe('joined');
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);

      const [issued] = await network().events({ types: ['NodeJoinTokenIssued'] });
      const enrolled = (await network().events({ types: [Events.NodeEnrolled.name] })).find((e) => (e.data as { nodeId: string }).nodeId === 'gpu-7');
      expect(enrolled?.data).toMatchObject({ publicKey: reply.publicKey, enrolledBy: `join token ${reply.tokenId}` });
      expect((await network().events({ types: ['NodeJoinTokenUsed'] })).map((e) => e.data)).toEqual([expect.objectContaining({ nodeId: 'gpu-7', tokenId: reply.tokenId, publicKey: reply.publicKey })]);
      // The store never saw the secret (nor any seed): only its hash.
      const all = JSON.stringify((await network().events()).map((e) => [e.data, e.metadata]));
      expect(all).not.toContain(secret);
      expect(all).not.toMatch(/SU[A-Z2-7]{56}/);
      expect(issued!.data).toMatchObject({ nodeId: 'gpu-7', tokenId: reply.tokenId });

      // Enrolled is not yet admitted: NATS knows the key once the operator renders the authorization again.
      expect(await admitted(keyFile)).toBe(false);
      const rendered = await cli(['nats', 'authorization', '--reload', '--json']);
      expect(rendered.code).toBe(0);
      expect((JSON.parse(rendered.out) as { nodes: string[] }).nodes).toContain('gpu-7');
      await until('NATS to admit gpu-7 after the reload', () => admitted(keyFile), { timeoutMs: 30_000, intervalMs: 100 });
      const list = await cli(['nodes', 'list', '--json']);
      expect((JSON.parse(list.out) as { nodes: { nodeId: string }[] }).nodes.map((n) => n.nodeId)).toContain('gpu-7');
    }),
    90_000,
  );

  it(
    'refuses a token spent before, one expired, one for another node id, and a forged one; none enrolls anything',
    e2e(async () => {
      const before = (await network().events({ types: [Events.NodeEnrolled.name] })).length;
      const token = await issue('gpu-8');
      const first = await join_(token, join(machine, 'gpu-8.nk'));
      expect(first.code).toBe(0);
      const again = await join_(token, join(machine, 'gpu-8-thief.nk'));
      expect(again.code).toBe(2);
      expect(again.err).toMatch(/refused the join \(used\)[\s\S]*spent at[\s\S]*ask the operator for a new token/);

      const expired = await issue('gpu-9', '1ms');
      const late = await join_(expired, join(machine, 'gpu-9.nk'));
      expect([late.code, late.err]).toEqual([2, expect.stringMatching(/refused the join \(expired\)/)]);

      const forOther = (await issue('gpu-10')).split('.');
      forOther[1] = 'gpu-11';
      const other = await join_(forOther.join('.'), join(machine, 'gpu-11.nk'));
      expect([other.code, other.err]).toEqual([2, expect.stringMatching(/refused the join \(other_node\)/)]);

      const forged = token.split('.');
      forged[1] = 'gpu-12';
      forged[2] = Buffer.alloc(32, 7).toString('base64url');
      const fake = await join_(forged.join('.'), join(machine, 'gpu-12.nk'));
      expect([fake.code, fake.err]).toEqual([2, expect.stringMatching(/refused the join \(unknown_token\)/)]);

      // Only gpu-8's first join enrolled anything, with the key of the machine that spent the token.
      const enrolled = (await network().events({ types: [Events.NodeEnrolled.name] })).slice(before).map((e) => e.data as { nodeId: string });
      expect(enrolled.map((e) => e.nodeId)).toEqual(['gpu-8']);
    }),
    90_000,
  );

  it(
    'lets the joiner identity (whose seed every token carries) ask for a join and nothing else',
    e2e(async () => {
      const joinerSeed = (await issue('gpu-13')).split('.')[3]!;
      const nc = await connect({ authenticator: nkeyAuthenticator(new TextEncoder().encode(joinerSeed)), inboxPrefix: inboxPrefix('joiner'), servers: network().natsUrl, noAsyncTraces: true });
      opened.push(nc);
      const publicKey = `U${'A'.repeat(55)}`;
      for (const [subject, body] of [
        [Commands.EnrollNode.subject, { nodeId: 'gpu-13', publicKey, enrolledBy: 'joiner' }],
        [Commands.IssueJoinToken.subject, { nodeId: 'gpu-13', secretSha256: 'a'.repeat(64), expiresAt: '2099-01-01T00:00:00.000Z' }],
        [querySubject('execution', 'ListNodes'), {}],
        ['gpunet.cmd.SubmitJob', {}],
        ['gpunet.report.gpu-13.event', {}],
        ['$JS.API.INFO', {}],
      ] as const) {
        await expect(nc.request(subject, JSON.stringify(body), { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      }
      nc.publish('gpunet.hb.gpu-13', '{}');
      const sub = nc.subscribe('gpunet.>');
      await expect((async () => {
        for await (const m of sub) return m;
      })()).rejects.toThrow(/Permissions Violation for Subscription/);
      expect((await network().events({ types: [Events.NodeEnrolled.name] })).some((e) => (e.data as { nodeId: string }).nodeId === 'gpu-13')).toBe(false);
    }),
    60_000,
  );
});
