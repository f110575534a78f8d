/**
 * Attacks on cordon and drain (decision 0031) in a network started with `gpunet up`: only the
 * operator may take a node out of placement's choices. A team tries with its API key over HTTP
 * (403, nothing sent on) and with its own NATS identity straight at placement's command subjects
 * (nats-server refuses the publish); a node tries to drain or uncordon itself, or another node, by
 * publishing the command subject with its node identity (refused the same way). Nothing of any
 * attempt reaches the store; the operator's own cordon, over HTTP with its key, works.
 */
import { Commands, Queries, type NodeAdminReply } from '#contracts';
import { loadIdentityFile, natsAuthOptions } from '#identity';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);
const natsLog = () => readFileSync(join(network().dataDir, 'logs', 'nats.log'), 'utf8');
const logged = (pattern: RegExp) => until(`nats.log to show ${pattern}`, () => pattern.test(natsLog()), { timeoutMs: 10_000, intervalMs: 50 });
const opened: NatsConnection[] = [];
const ADMIN_EVENTS = ['NodeCordoned', 'NodeDrainRequested', 'NodeDrained', 'NodeUncordoned'];

async function connectAs(keyFile: string): Promise<NatsConnection> {
  const nc = await connect({ ...(await natsAuthOptions(keyFile)), servers: network().natsUrl, noAsyncTraces: true });
  opened.push(nc);
  return nc;
}

async function http(method: 'GET' | 'POST', path: string, key: string, body?: unknown): Promise<{ status: number; json: { error?: { code: string; message: string; issues?: { path: string; fix?: string }[] } } & Partial<NodeAdminReply> }> {
  const res = await fetch(`${network().url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : {} };
}

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 2, gpus: 1 });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => undefined);
  await net?.stop();
}, 60_000);

describe('attack: taking a node out of service without being the operator', () => {
  it(
    'a team with its API key is refused over HTTP (403) and with its NATS identity on the command subjects; nothing is recorded',
    e2e(async () => {
      const [node] = network().nodeIds as [string];
      for (const action of ['cordon', 'drain', 'uncordon']) {
        const res = await http('POST', `/v1/nodes/${node}/${action}`, network().apiKey, { reason: 'mine now' });
        expect({ action, status: res.status, code: res.json.error?.code }).toEqual({ action, status: 403, code: 'forbidden' });
        expect(res.json.error?.message).toMatch(/role operator/);
      }
      expect((await http('GET', '/v1/nodes', network().apiKey)).status).toBe(403);

      const team = await connectAs(network().teamCredentials(network().team).natsKeyFile);
      for (const c of [Commands.CordonNode, Commands.DrainNode, Commands.UncordonNode]) {
        await expect(team.request(c.subject, JSON.stringify({ nodeId: node, reason: 'mine now', by: 'operator' }), { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      }
      await expect(team.request(Queries.ListNodeStates.subject, '{}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      const teamKey = (await loadIdentityFile(network().teamCredentials(network().team).natsKeyFile)).publicKey;
      await logged(new RegExp(`Publish Violation - Nkey "${teamKey}", Subject "gpunet\\.cmd\\.CordonNode"`));
      await logged(new RegExp(`Publish Violation - Nkey "${teamKey}", Subject "gpunet\\.cmd\\.DrainNode"`));
      expect(await network().events({ types: ADMIN_EVENTS })).toEqual([]);
    }),
  );

  it(
    'a node publishing the command subject with its own identity is refused, for itself and for another node; the operator\'s cordon works',
    e2e(async () => {
      const [self, other] = network().nodeIds as [string, string];
      const keyFile = join(network().keysDir, `node-${self}.nk`);
      const nodeNc = await connectAs(keyFile);
      const nodeKey = (await loadIdentityFile(keyFile)).publicKey;
      // A node that wants no more work, or wants another's work, or to come back by itself.
      for (const [c, nodeId] of [[Commands.DrainNode, self], [Commands.UncordonNode, self], [Commands.CordonNode, other]] as const) {
        await expect(nodeNc.request(c.subject, JSON.stringify({ nodeId, reason: 'self-service', by: 'operator' }), { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/);
      }
      // Nor can it publish placement's events itself.
      nodeNc.publish(`gpunet.evt.NodeUncordoned._._`, JSON.stringify({ nodeId: self }));
      await logged(new RegExp(`Publish Violation - Nkey "${nodeKey}", Subject "gpunet\\.cmd\\.DrainNode"`));
      await logged(new RegExp(`Publish Violation - Nkey "${nodeKey}", Subject "gpunet\\.cmd\\.CordonNode"`));
      await logged(new RegExp(`Publish Violation - Nkey "${nodeKey}", Subject "gpunet\\.evt\\.NodeUncordoned`));
      expect(await network().events({ types: ADMIN_EVENTS })).toEqual([]);

      // The operator's key does it, named in the record from the key, not from the body.
      const ok = await http('POST', `/v1/nodes/${other}/cordon`, network().adminApiKey, { reason: 'disk errors' });
      expect(ok.status).toBe(200);
      expect(ok.json).toMatchObject({ changed: true, event: 'NodeCordoned', node: { nodeId: other, state: 'cordoned' } });
      const recorded = await network().events({ types: ADMIN_EVENTS });
      expect(recorded.map((e) => [e.type, (e.data as { by: string }).by, (e.data as { reason: string }).reason])).toEqual([['NodeCordoned', expect.stringMatching(/^operator key [^/]+\/\S+$/), 'disk errors']]);
      // A missing reason, an unknown node: 400 naming the field and the fix.
      const noReason = await http('POST', `/v1/nodes/${other}/drain`, network().adminApiKey, {});
      expect(noReason.status).toBe(400);
      expect(noReason.json.error?.issues?.map((i) => i.path)).toEqual(['reason']);
      const unknown = await http('POST', '/v1/nodes/no-such-node/cordon', network().adminApiKey, { reason: 'typo' });
      expect(unknown.status).toBe(400);
      expect(unknown.json.error?.issues).toEqual([{ path: 'nodeId', message: expect.stringMatching(/no-such-node/), fix: expect.stringMatching(/gpunet nodes list/) }]);
      expect((await http('POST', `/v1/nodes/${other}/uncordon`, network().adminApiKey, {})).status).toBe(200);
      const listed = await http('GET', '/v1/nodes', network().adminApiKey);
      expect((listed.json as unknown as { nodes: { nodeId: string; state: string }[] }).nodes.map((n) => n.state)).toEqual(['ready', 'ready']);
    }),
  );
});
