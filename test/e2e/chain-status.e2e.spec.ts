/**
 * The chain's verification status over HTTP across real processes (`gpunet up`: intake → NATS →
 * the ledger's VerifyChain), by attack: a fresh network's store verifies, with its signed heads;
 * someone with the store file edits an event row; the next full pass ("verify now") says not
 * verified and names the position and the stream. A producer key is refused the status.
 */
import type { ChainStatus } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { until } from '../support/poll.js';
import { alterEvent } from '../support/store-tamper.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

async function issueKey(role: string): Promise<string> {
  const res = await fetch(`${network().url}/v1/keys`, { method: 'POST', headers: { Authorization: `Bearer ${network().adminApiKey}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ team: network().team, role }) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { apiKey: string }).apiKey;
}

async function chain(key: string, full = false): Promise<{ status: number; body: ChainStatus & { error?: { code: string } } }> {
  const res = await fetch(`${network().url}/v1/audit/chain${full ? '?full=true' : ''}`, { headers: { Authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as ChainStatus & { error?: { code: string } } };
}

beforeAll(async () => {
  net = await TestNetwork.start({ agents: 1, gpus: 1, dirPrefix: 'gpunet-chain-' });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
}, 60_000);

describe('GET /v1/audit/chain', () => {
  it(
    'verifies a fresh store with its signed heads, then names the position of an event row edited in the store file',
    e2e(async () => {
      const compliance = await issueKey('compliance');
      const billing = await issueKey('billing');
      expect((await chain(network().apiKey)).status).toBe(403);

      // The notary signs the heads once at start: ask after its first digest is in the store.
      await until('the first signed digest', async () => (await network().events({ types: ['ChainHeadsSigned'] })).length > 0);
      const fresh = await chain(compliance);
      expect(fresh.status).toBe(200);
      expect(fresh.body).toMatchObject({ verified: true, signatures: 'checked', latestSignedHead: { sequence: expect.any(Number) } });
      expect(BigInt(fresh.body.verifiedUpTo)).toBeGreaterThan(0n);
      // The next question reads only the tail; billing may ask too.
      expect((await chain(billing)).body).toMatchObject({ verified: true, pass: 'tail' });

      // The attack: with the store file, change the first event's data in place.
      const first = (await network().events({}))[0]!;
      alterEvent(network().storeUrl.replace(/^sqlite:/, ''), first.position, { ...(first.data as Record<string, unknown>), tampered: true });
      const now = await chain(compliance, true);
      expect(now.status).toBe(200);
      expect(now.body).toMatchObject({
        verified: false,
        pass: 'full',
        firstBad: { position: first.position.toString(), streamId: first.streamId, reason: expect.stringContaining('hash does not match') },
      });
      // Broken stays broken: the next plain question walks the whole store again.
      expect((await chain(billing)).body).toMatchObject({ verified: false, pass: 'full', firstBad: { position: first.position.toString() } });
    }),
    90_000,
  );
});
