/**
 * The ledger's notary in a real ledger (in-process, a real nats-server and SQLite file): it signs
 * at start, at its interval, on demand over `gpunet.cmd.SignChainHeads` and not again while the
 * store has not moved; a ledger without the key answers that it holds none; a key file others may read stops
 * the ledger's start instead of being used.
 */
import { Commands, DIGEST_STREAM, type SignChainHeadsReply } from '#contracts';
import { createIdentityFile } from '#identity';
import { requestQuery } from '#messaging';
import { openEventStore, SqliteEventStore } from '#event-store';
import { startService, type RunningService } from '#service-kit';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { until } from '../../../../test/support/poll.js';
import { ledgerService } from '../ledger.definition.js';
import { verifyStoreDigests } from './store-digests.js';

let nats: TestNatsServer;
let nc: NatsConnection;
let dir = '';
const running: RunningService<never>[] = [];

const env = (name: string, extra: Record<string, string> = {}) => ({ GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${join(dir, `${name}.db`)}`, GPUNET_LOG_LEVEL: 'silent', ...extra });
const sign = () => requestQuery<SignChainHeadsReply>(nc, Commands.SignChainHeads.subject, {}, { request: Commands.SignChainHeads.schema, response: Commands.SignChainHeads.replySchema }, { timeoutMs: 10_000 });

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  dir = await mkdtemp(join(tmpdir(), 'gpunet-notary-'));
}, 30_000);

afterAll(async () => {
  await nc?.close();
  for (const r of running) await r.stop().catch(() => undefined);
  await nats?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('the notary in the ledger', () => {
  it('signs the heads at start and on demand, not again while nothing moved, with the key of its file', async () => {
    const keyFile = join(dir, 'keys', 'signing.nk');
    const key = await createIdentityFile(keyFile);
    // One ledger leads a network at a time (decision 0029): each test stops its own before the next starts.
    const ledger = await startService({ ...ledgerService, env: env('signed', { GPUNET_SIGNING_KEY_FILE: keyFile }) });
    running.push(ledger as unknown as RunningService<never>);
    const store = ledger.ctx.store;
    // At start: the first price list is recorded, then signed.
    await until('the first digest', async () => (await store.readStream(DIGEST_STREAM)).length > 0, { timeoutMs: 20_000 });
    const first = await sign();
    expect(first).toMatchObject({ signed: false, digest: { sequence: 1, publicKey: key.publicKey } });

    await store.appendToStream('placement-node-x', [{ eventId: crypto.randomUUID(), type: 'NodeRegistered', data: {}, metadata: { correlationId: 'c', causationId: 'c', producer: 'fixture', occurredAt: new Date().toISOString() } }]);
    const second = await sign();
    expect(second).toMatchObject({ signed: true, digest: { sequence: 2, publicKey: key.publicKey } });
    expect(second.digest!.heads.map((h) => h.streamId)).toEqual([DIGEST_STREAM, 'placement-node-x']);
    expect(await sign()).toMatchObject({ signed: false, digest: { sequence: 2 } });
    expect(await verifyStoreDigests(store, { publicKey: key.publicKey })).toMatchObject({ ok: true, digests: 2 });
    await ledger.stop();
  }, 60_000);

  it('a ledger stopped during its first pass over a large store stops after the digest in hand, not at the head', async () => {
    const keyFile = join(dir, 'keys', 'stopping.nk');
    await createIdentityFile(keyFile);
    const url = `sqlite:${join(dir, 'stopping.db')}`;
    // 40,000 streams: a first pass of 40 digests of 1,000 heads each, each over every head signed so far.
    const seed = await openEventStore(url);
    if (!(seed instanceof SqliteEventStore)) throw new Error('expected the SQLite store');
    const meta = { correlationId: 'c', causationId: 'c', producer: 'fixture', occurredAt: new Date().toISOString() };
    await seed.appendMany(Array.from({ length: 40_000 }, (_, i) => ({ streamId: `placement-node-${i}`, events: [{ eventId: crypto.randomUUID(), type: 'NodeRegistered', data: {}, metadata: meta }] })));
    await seed.close();
    const ledger = await startService({ ...ledgerService, env: { ...env('stopping', { GPUNET_SIGNING_KEY_FILE: keyFile }), GPUNET_STORE_URL: url } });
    running.push(ledger as unknown as RunningService<never>);
    // Stopped at once: the pass began at bootstrap and is far from the head.
    await ledger.stop();
    const store = await openEventStore(url);
    const digests = await store.readStream(DIGEST_STREAM);
    const head = await store.headPosition();
    await store.close();
    expect(digests.length).toBeGreaterThan(0);
    // The last digest recorded covers less than the store: the stop did not wait for the pass to end.
    expect(BigInt((digests.at(-1)!.data as { position: string }).position)).toBeLessThan(head - 1n);
  }, 60_000);

  it('signs at its interval when the store moved, unasked', async () => {
    const keyFile = join(dir, 'interval', 'signing.nk');
    await createIdentityFile(keyFile);
    const ledger = await startService({ ...ledgerService, env: env('interval', { GPUNET_SIGNING_KEY_FILE: keyFile, GPUNET_DIGEST_INTERVAL: '200ms' }) });
    try {
      const store = ledger.ctx.store;
      const digests = async () => (await store.readStream(DIGEST_STREAM)).length;
      await until('the first digest', async () => (await digests()) === 1, { timeoutMs: 20_000 });
      await store.appendToStream('placement-node-y', [{ eventId: crypto.randomUUID(), type: 'NodeRegistered', data: {}, metadata: { correlationId: 'c', causationId: 'c', producer: 'fixture', occurredAt: new Date().toISOString() } }]);
      await until('a digest of the new event, unasked', async () => (await digests()) === 2, { timeoutMs: 20_000 });
      const [, second] = await store.readStream(DIGEST_STREAM);
      expect((second!.data as { heads: { streamId: string }[] }).heads.map((h) => h.streamId)).toEqual([DIGEST_STREAM, 'placement-node-y']);
    } finally {
      await ledger.stop();
    }
  }, 60_000);

  it('a ledger without the key signs nothing and says how to give it one', async () => {
    const ledger = await startService({ ...ledgerService, env: env('unsigned') });
    running.push(ledger as unknown as RunningService<never>);
    await expect(sign()).rejects.toMatchObject({ message: expect.stringMatching(/holds no signing key: start the ledger with GPUNET_SIGNING_KEY_FILE/) });
    expect(await ledger.ctx.store.readStream(DIGEST_STREAM)).toEqual([]);
  }, 60_000);

  it('attack: a key file others may read does not start the ledger', async () => {
    const keyFile = join(dir, 'open', 'signing.nk');
    await createIdentityFile(keyFile);
    await chmod(keyFile, 0o644);
    await expect(startService({ ...ledgerService, env: env('open', { GPUNET_SIGNING_KEY_FILE: keyFile }) })).rejects.toThrow(/mode 644: it must be readable by its owner only/);
  }, 60_000);
});
