/**
 * A partitioned ledger on an authenticated nats-server (decision 0014) whose permissions were
 * rendered for two event partitions (decision 0030): the real ledger process, with its own NKey,
 * creates its partition's durable (`ledger-p1`) and its relay publishes on the partitioned subject
 * (`…PriceListPublished._._.0`), with no violation logged. The same server refuses another
 * service's forgery of that subject, so a server that allowed everything would fail here too.
 */
import { defaultPermissionsFile, parsePermissionTemplates, renderServerConfig } from '#bus-auth';
import { createIdentityFile, type Identity } from '#identity';
import { missingConsumers, provision } from '#messaging';
import { startService, topologyFor, type RunningService } from '#service-kit';
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import YAML from 'yaml';
import { ledgerService } from '../../services/ledger/src/ledger.definition.js';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));

describe('a partitioned ledger on an authenticated nats-server', () => {
  let nats: TestNatsServer;
  let dir: string;
  let ledger: RunningService | undefined;
  let intake: NatsConnection;
  let operator: NatsConnection;
  const ids: Record<string, { file: string; identity: Identity }> = {};

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpunet-partition-auth-'));
    for (const name of ['ledger', 'intake', 'operator']) {
      // The file's name is the identity's (`svc-ledger`): the kit takes its inbox prefix from it.
      const file = join(dir, 'keys', `${name === 'operator' ? name : `svc-${name}`}.nk`);
      ids[name] = { file, identity: await createIdentityFile(file) };
    }
    const templates = parsePermissionTemplates(readFileSync(defaultPermissionsFile(), 'utf8'));
    const identities = [
      { kind: 'service' as const, id: 'ledger', publicKey: ids.ledger!.identity.publicKey },
      { kind: 'service' as const, id: 'intake', publicKey: ids.intake!.identity.publicKey },
      { kind: 'operator' as const, publicKey: ids.operator!.identity.publicKey },
    ];
    nats = await startNatsServer({ config: (storeDir) => renderServerConfig(templates, { listen: '127.0.0.1:-1', storeDir, identities, eventPartitions: 2 }) });
    const topology = YAML.parse(await readFile(join(REPO, 'deploy/topology.yaml'), 'utf8')) as { eventPartitions: number };
    topology.eventPartitions = 2;
    await writeFile(join(dir, 'topology.yaml'), YAML.stringify(topology));
    ledger = await startService({
      ...ledgerService,
      env: {
        GPUNET_NATS_URL: nats.url,
        GPUNET_NATS_NKEY_FILE: ids.ledger!.file,
        GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`,
        GPUNET_TOPOLOGY_FILE: join(dir, 'topology.yaml'),
        GPUNET_PARTITION: '1/2',
        GPUNET_LOG_LEVEL: 'silent',
      },
    });
    const as = async (name: string) => connect({ servers: nats.url, authenticator: nkeyAuthenticator(ids[name]!.identity.seed), inboxPrefix: `_INBOX_${name === 'operator' ? 'operator' : `svc-${name}`}`, noAsyncTraces: true });
    intake = await as('intake');
    operator = await as('operator');
  }, 60_000);

  afterAll(async () => {
    await intake?.close();
    await operator?.close();
    await ledger?.stop();
    await nats?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('holds the ledger\'s events in the store until every durable the events stream keeps them for exists; no service may make another\'s', async () => {
    const jsm = await jetstreamManager(operator);
    // The price list is in the store, and nothing is on the bus: an interest stream would drop
    // it, since only ledger-p1 (not its partition) exists (decision 0038).
    await until('the first price list in the store', async () => ((await ledger!.ctx.store.readAll({ filter: { types: ['PriceListPublished'] } })).length > 0 ? true : undefined), { timeoutMs: 20_000 });
    const asIntake = await jetstreamManager(intake);
    expect(await missingConsumers(asIntake, (await topologyFor(join(dir, 'topology.yaml'), 'intake', [])).standing)).toEqual(['GPUNET_EVENTS/storage-released', 'GPUNET_EVENTS/storage', 'GPUNET_EVENTS/placement', 'GPUNET_EVENTS/ledger-p0']);
    expect((await jsm.streams.info('GPUNET_EVENTS')).state.messages).toBe(0);
    // A service may look at another's durable, never make it: on nats-server 2.9 a create right
    // would let it change one that exists (narrow its filter).
    await expect(asIntake.consumers.add('GPUNET_EVENTS', { durable_name: 'ledger-p0', ack_policy: AckPolicy.Explicit, filter_subject: 'gpunet.evt.JobFinished.*.*.0' })).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(asIntake.consumers.add('GPUNET_EVENTS', { durable_name: 'ledger-p1', ack_policy: AckPolicy.Explicit, filter_subject: 'gpunet.evt.JobFinished.*.*.1' })).rejects.toThrow(/Permissions Violation|timeout/i);
    // Nor storage's second durable (decision 0054), which only storage's rules name beside its own.
    await expect(asIntake.consumers.add('GPUNET_EVENTS', { durable_name: 'storage-released', ack_policy: AckPolicy.Explicit, filter_subject: 'gpunet.evt.>' })).rejects.toThrow(/Permissions Violation|timeout/i);
    expect((await jsm.consumers.info('GPUNET_EVENTS', 'ledger-p1')).config.filter_subject).toBe('gpunet.evt.*.*.*.1');
    // The operator makes them, as `gpunet up` does.
    const topology = await topologyFor(join(dir, 'topology.yaml'), 'operator', []);
    await provision(jsm, { streams: topology.streams, standing: topology.standing }, { logger: pino({ level: 'silent' }) });
  }, 60_000);

  it('lets the ledger consume its partition and publish its events on their partition; refuses another service forging them', async () => {
    const jsm = await jetstreamManager(operator);
    expect((await jsm.consumers.info('GPUNET_EVENTS', 'ledger-p1')).config.filter_subject).toBe('gpunet.evt.*.*.*.1');
    const subjects = async () => (await jsm.streams.info('GPUNET_EVENTS', { subjects_filter: '>' })).state.subjects ?? {};
    // The first price list (no job: partition 0), published by the ledger's relay under its own key.
    await until('the first price list on its partitioned subject', async () => ((await subjects())['gpunet.evt.PriceListPublished._._.0'] === 1 ? true : undefined), { timeoutMs: 20_000 });
    // No violation by the ledger's key (the intake key's refused attempts above are its own).
    expect(nats.log()).not.toContain(`Violation - Nkey "${ids.ledger!.identity.publicKey}"`);
    expect(nats.log()).toContain(`Violation - Nkey "${ids.intake!.identity.publicKey}"`);

    const errors: Error[] = [];
    void (async () => {
      for await (const s of intake.status()) if (s.type === 'error') errors.push(s.error as Error);
    })();
    intake.publish('gpunet.evt.PriceListPublished._._.1', '{"forged":true}');
    await intake.flush();
    await until('the forgery refused', () => errors.some((e) => e.message.includes('gpunet.evt.PriceListPublished._._.1')), { timeoutMs: 5_000, intervalMs: 20 });
    expect(Object.keys(await subjects())).toEqual(['gpunet.evt.PriceListPublished._._.0']);
  }, 60_000);
});
