/**
 * Attacks on a real nats-server started with the config libs/bus-auth renders from
 * deploy/nats-permissions.yaml: each identity tries what its template does not allow, and each
 * attempt must be refused by nats-server and logged by it (what an operator reads in
 * `<data-dir>/logs/nats.log` of `gpunet up`). Each refusal sits beside the allowed twin of the
 * same action, so a server that refused everything would fail these tests too.
 */
import { BlobStore, blobBucket } from '#blobs';
import { jest } from '@jest/globals';
import { eventSubject, feedSubject, querySubject } from '#contracts';
import { newIdentity, type Identity } from '#identity';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { LEASE_BUCKET } from '#service-kit';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { until } from '../../../test/support/poll.js';
import { defaultPermissionsFile } from './files.js';
import { identityNameOf, parsePermissionTemplates, type IdentityRef } from './permissions.js';
import { renderServerConfig } from './server-config.js';

jest.setTimeout(30_000);
const templates = parsePermissionTemplates(readFileSync(defaultPermissionsFile(), 'utf8'));
const who = {
  intake: { kind: 'service', id: 'intake' },
  ledger: { kind: 'service', id: 'ledger' },
  placement: { kind: 'service', id: 'placement' },
  storage: { kind: 'service', id: 'storage' },
  recorder: { kind: 'service', id: 'recorder' },
  n1: { kind: 'node', id: 'n1' },
  n2: { kind: 'node', id: 'n2' },
  a: { kind: 'team', id: 'a' },
  b: { kind: 'team', id: 'b' },
  operator: { kind: 'operator' },
} satisfies Record<string, IdentityRef>;
type Who = keyof typeof who;
const keys = Object.fromEntries(Object.keys(who).map((k) => [k, newIdentity()])) as Record<Who, Identity>;

let server: TestNatsServer;
const open: NatsConnection[] = [];
const identityOf = new Map<NatsConnection, Who>();
let dir: string;

async function as(name: Who): Promise<NatsConnection> {
  const nc = await connect({ servers: server.url, authenticator: nkeyAuthenticator(keys[name].seed), inboxPrefix: `_INBOX_${identityNameOf(who[name])}`, noAsyncTraces: true, timeout: 15_000 });
  open.push(nc);
  identityOf.set(nc, name);
  return nc;
}

/** Resolves once nats-server has logged a refusal matching `pattern`. */
const logged = (pattern: RegExp) => until(`nats-server to log ${pattern}`, () => pattern.test(server.log()), { timeoutMs: 20_000, intervalMs: 20 });
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** nats-server 2.9's log line of a refusal: `[ERR] … - Publish Violation - Nkey "U…", Subject "…"`, naming who tried what. */
const violation = (what: 'Publish' | 'Subscription', name: Who, subject: string) => new RegExp(`\\[ERR\\].* - ${what} Violation - Nkey "${keys[name].publicKey}", Subject "${escape(subject)}"`);

/** A core publish the server refuses: the connection reports it, and nothing reaches a subscriber. */
async function refusedPublish(nc: NatsConnection, subject: string): Promise<void> {
  const errors: Error[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error as Error);
  })();
  nc.publish(subject, '{"forged":true}');
  await nc.flush();
  await until(`a permission error for ${subject}`, () => errors.some((e) => e.message.includes(subject)), { timeoutMs: 20_000, intervalMs: 20 });
  await logged(violation('Publish', identityOf.get(nc)!, subject));
}

/** A subscription the server refuses: it ends with a permission error and receives nothing. */
async function refusedSubscribe(nc: NatsConnection, subject: string): Promise<void> {
  const sub = nc.subscribe(subject);
  const received: unknown[] = [];
  const ended = (async () => {
    try {
      for await (const m of sub) received.push(m);
    } catch (err) {
      return err;
    }
    return undefined;
  })();
  expect(String(await ended)).toMatch(/Permissions Violation for Subscription/i);
  expect(received).toEqual([]);
  await logged(violation('Subscription', identityOf.get(nc)!, subject));
}

beforeAll(async () => {
  const identities = (Object.keys(who) as Who[]).map((k) => ({ ...who[k], publicKey: keys[k].publicKey }));
  server = await startNatsServer({ config: (storeDir) => renderServerConfig(templates, { listen: '127.0.0.1:4222', storeDir, identities }) });
  dir = await mkdtemp(join(tmpdir(), 'gpunet-bus-auth-'));
  // The operator provisions what the control plane would: the streams, the nodes' consumers, the teams' buckets.
  const op = await as('operator');
  const jsm = await jetstreamManager(op);
  await jsm.streams.add({ name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'] });
  await jsm.streams.add({ name: 'GPUNET_LOGS', subjects: ['gpunet.logs.>'] });
  await jsm.streams.add({ name: 'GPUNET_WORK', subjects: ['gpunet.work.>'] });
  for (const n of ['n1', 'n2']) await jsm.consumers.add('GPUNET_WORK', { durable_name: `execution-${n}`, ack_policy: AckPolicy.Explicit, filter_subject: `gpunet.work.${n}.>` });
  const blobs = await BlobStore.open(op);
  for (const t of ['a', 'b']) await blobs.ensureBucket(t);
}, 30_000);

afterAll(async () => {
  for (const nc of open) await nc.close().catch(() => undefined);
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('before: nats-server as `gpunet up` started it without authorization', () => {
  it('let anyone connect without credentials and forge events, read every reply and every team\'s bucket', async () => {
    const open = await startNatsServer();
    try {
      const anyone = await connect({ servers: open.url });
      const jsm = await jetstreamManager(anyone);
      await jsm.streams.add({ name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'] });
      await jetstream(anyone).publish(eventSubject('JobFinished', { team: 'b', jobId: 'job_1' }), '{"forged":true}');
      expect((await jsm.streams.info('GPUNET_EVENTS')).state.messages).toBe(1);
      const spy = anyone.subscribe('_INBOX.>', { max: 1 });
      const victim = await connect({ servers: open.url });
      victim.subscribe('gpunet.qry.ledger.GetCharges', { callback: (_e, m) => void m.respond('{"team":"b","totalMicros":42}') });
      await victim.flush();
      await victim.request('gpunet.qry.ledger.GetCharges', '{}');
      for await (const m of spy) expect(m.string()).toContain('"team":"b"');
      const blobs = await BlobStore.open(anyone);
      const stored = await blobs.uploadBytes('b', new TextEncoder().encode('b secret'));
      expect(Buffer.from(await blobs.readBytes('b', stored.sha256)).toString()).toBe('b secret');
      await victim.close();
      await anyone.close();
    } finally {
      await open.stop();
    }
  });
});

describe('why a team gets no consumer rights (nats-server 2.9)', () => {
  it('a user allowed to create filtered consumers of a stream can still make the server deliver onto any subject it may not publish on', async () => {
    const t = newIdentity();
    const op = newIdentity();
    const own = await startNatsServer({
      config: (storeDir) =>
        [
          `jetstream { store_dir: "${storeDir}" }`,
          'authorization { users = [',
          `  { nkey: ${op.publicKey}, permissions: { publish: [">"], subscribe: [">"] } }`,
          // Only its own filter on the create subject, nothing on the event subjects.
          `  { nkey: ${t.publicKey}, permissions: { publish: ["$JS.API.INFO", "$JS.API.CONSUMER.CREATE.FEED.*.feed.t.>"], subscribe: ["_INBOX.>"] } }`,
          '] }',
        ].join('\n'),
    });
    try {
      const admin = await connect({ servers: own.url, authenticator: nkeyAuthenticator(op.seed) });
      await (await jetstreamManager(admin)).streams.add({ name: 'FEED', subjects: ['feed.>'] });
      const team = await connect({ servers: own.url, authenticator: nkeyAuthenticator(t.seed) });
      // The server takes the push consumer: its deliver subject is never checked against the creator's rights.
      const made = await (await jetstreamManager(team)).consumers.add('FEED', { name: 'p', filter_subject: 'feed.t.>', deliver_subject: eventSubject('JobFinished', { team: 't', jobId: 'job_1' }), ack_policy: AckPolicy.None });
      expect(made.config.deliver_subject).toBe('gpunet.evt.JobFinished.t.job_1');
      await team.close();
      await admin.close();
    } finally {
      await own.stop();
    }
  });
});

describe('who may connect', () => {
  it('refuses a connection without credentials, and one with a key it does not know', async () => {
    await expect(connect({ servers: server.url, reconnect: false, timeout: 15_000 })).rejects.toThrow(/Authorization Violation/i);
    const stranger = newIdentity();
    await expect(connect({ servers: server.url, reconnect: false, timeout: 15_000, authenticator: nkeyAuthenticator(stranger.seed) })).rejects.toThrow(/Authorization Violation/i);
    await logged(/authentication error/i);
    // The identities it knows get in.
    expect((await as('a')).info?.server_id).toBeDefined();
  });
});

describe('a producer team', () => {
  it('cannot publish events, or forge a price list, a cancel, a placement, a release or StoreOutputs', async () => {
    const nc = await as('a');
    for (const type of ['JobFinished', 'PriceListPublished', 'JobCancelRequested', 'JobPlaced', 'ComputeReleased'] as const) {
      await refusedPublish(nc, eventSubject(type, { team: 'a', jobId: 'job_1' }));
    }
    await expect(nc.request('gpunet.cmd.StoreOutputs', '{}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/i);
    const events = await (await jetstreamManager(await as('operator'))).streams.info('GPUNET_EVENTS');
    expect(events.state.messages).toBe(0);
  });

  it('cannot ask the subjects behind intake (charges, audit, price lists, rebuild); intake can', async () => {
    const ledger = await as('ledger');
    const answered: string[] = [];
    ledger.subscribe('gpunet.qry.ledger.>', { callback: (_e, m) => void (answered.push(m.subject), m.respond('{"ok":true,"data":{}}')) });
    ledger.subscribe('gpunet.cmd.RecordPriceList', { callback: (_e, m) => void (answered.push(m.subject), m.respond('{"ok":true,"data":{}}')) });
    await ledger.flush();
    const team = await as('a');
    for (const subject of [querySubject('ledger', 'GetCharges'), querySubject('ledger', 'AuditJobs'), querySubject('ledger', 'GetInvoice'), 'gpunet.cmd.RecordPriceList', 'gpunet.cmd.RebuildLedger', querySubject('placement', 'Estimate')]) {
      await expect(team.request(subject, '{"team":"b","role":"compliance"}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/i);
      await logged(violation('Publish', 'a', subject));
    }
    expect(answered).toEqual([]);
    // Intake may, and the ledger may answer it (allow_responses), though it may not publish on intake's inbox otherwise.
    const intake = await as('intake');
    expect((await intake.request(querySubject('ledger', 'GetCharges'), '{}', { timeout: 15_000 })).string()).toContain('"ok":true');
    expect((await intake.request('gpunet.cmd.RecordPriceList', '{}', { timeout: 15_000 })).string()).toContain('"ok":true');
    await refusedPublish(ledger, '_INBOX_svc-intake.forged');
  });

  it('cannot listen to the event stream, other teams\' logs, another identity\'s inbox or the shared _INBOX', async () => {
    const nc = await as('a');
    for (const subject of ['gpunet.evt.>', 'gpunet.logs.b.>', 'gpunet.logs.>', '_INBOX_svc-ledger.>', '_INBOX_team-b.>', '_INBOX.>', 'gpunet.hb.*', '>']) await refusedSubscribe(nc, subject);
    // Its own logs it may follow.
    const own = nc.subscribe('gpunet.logs.a.>', { max: 1 });
    await nc.flush();
    (await as('operator')).publish('gpunet.logs.a.job-1', 'line');
    for await (const m of own) expect(m.string()).toBe('line');
  });

  it('follows its own feed\'s notifications only: never another team\'s, never the raw events (its own neither), and cannot forge one', async () => {
    const a = await as('a');
    const own = a.subscribe('gpunet.feed.a.>', { max: 1 });
    await a.flush();
    // Intake announces entries; a team may not.
    const intake = await as('intake');
    intake.publish(feedSubject('b', 'job_b1'), '{"team":"b"}');
    intake.publish(feedSubject('a', 'job_a1'), '{"team":"a"}');
    for await (const m of own) expect([m.subject, m.string()]).toEqual(['gpunet.feed.a.job_a1', '{"team":"a"}']);
    for (const subject of ['gpunet.feed.b.>', 'gpunet.feed.>', 'gpunet.feed.*.*', 'gpunet.feed.*.job_b1', 'gpunet.evt.*.a.*', 'gpunet.evt.*.b.*', 'gpunet.evt.JobFinished.a.job_a1']) await refusedSubscribe(a, subject);
    for (const subject of [feedSubject('b', 'job_b1'), feedSubject('a', 'job_a1')]) await refusedPublish(a, subject);
  });

  it('cannot make any consumer of the event or log streams: no push consumer onto an event subject, no filter (own team\'s or wider), no ordered consumer', async () => {
    const a = await as('a');
    const jsm = await jetstreamManager(a);
    await jetstream(await as('operator')).publish(eventSubject('JobFinished', { team: 'b', jobId: 'job_b1' }), '{"secret":"b"}');
    // nats-server 2.9 does not check a push consumer's deliver subject against its creator's rights:
    // a team allowed to create one could have the server republish events anywhere. So none at all.
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['push onto an event subject', () => jsm.consumers.add('GPUNET_EVENTS', { name: 'push', deliver_subject: eventSubject('JobFinished', { team: 'b', jobId: 'job_x' }), ack_policy: AckPolicy.None, filter_subject: 'gpunet.evt.*.a.*' })],
      ['pull on its own team\'s events', () => jsm.consumers.add('GPUNET_EVENTS', { name: 'own', ack_policy: AckPolicy.None, filter_subject: 'gpunet.evt.*.a.*' })],
      ['pull on every event', () => jsm.consumers.add('GPUNET_EVENTS', { name: 'wide', ack_policy: AckPolicy.None, filter_subject: 'gpunet.evt.>' })],
      ['push on another team\'s logs', () => jsm.consumers.add('GPUNET_LOGS', { name: 'logs', ack_policy: AckPolicy.None, filter_subject: 'gpunet.logs.b.>', deliver_subject: 'gpunet.logs.a.copy' })],
      ['ordered consumer of events', async () => (await jetstream(a).consumers.get('GPUNET_EVENTS')).next({ expires: 1_000 })],
    ];
    for (const [what, attempt] of attempts) expect([what, await attempt().then(() => 'allowed', (e: unknown) => String(e))]).toEqual([what, expect.stringMatching(/Permissions Violation|timeout/i)]);
    await logged(violation('Publish', 'a', '$JS.API.CONSUMER.CREATE.GPUNET_EVENTS.push.gpunet.evt.*.a.*'));
    expect((await (await jetstreamManager(await as('operator'))).consumers.list('GPUNET_EVENTS').next()).length).toBe(0);
  });

  it('cannot list, read or write another team\'s bucket, nor create a stream that would capture others\' subjects; its own bucket works', async () => {
    const bytes = new TextEncoder().encode('team b secret outputs');
    const path = join(dir, 'b.bin');
    await writeFile(path, bytes);
    const b = await BlobStore.open(await as('b'), { create: false });
    const stored = await b.uploadFile('b', path);
    expect(stored.skipped).toBe(false);
    expect(await b.exists('b', stored.sha256)).toBe(true);

    const ncA = await as('a');
    const a = await BlobStore.open(ncA, { create: false });
    const mine = await a.uploadBytes('a', new TextEncoder().encode('team a data'));
    expect(await a.exists('a', mine.sha256)).toBe(true);
    await expect(a.exists('b', stored.sha256)).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(a.downloadTo('b', stored.sha256, join(dir, 'stolen.bin'))).rejects.toThrow();
    await expect(a.uploadBytes('b', new TextEncoder().encode('attacker bytes'))).rejects.toThrow();
    await logged(violation('Publish', 'a', `$JS.API.STREAM.INFO.OBJ_${blobBucket('b')}`));
    const jsm = await jetstreamManager(ncA);
    await expect(jsm.streams.list().next()).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(jsm.streams.getMessage(`OBJ_${blobBucket('b')}`, { last_by_subj: `$O.${blobBucket('b')}.M.>` })).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(jsm.direct.getMessage(`OBJ_${blobBucket('b')}`, { seq: 1 })).rejects.toThrow(/Permissions Violation|timeout/i);
    await refusedPublish(ncA, `$O.${blobBucket('b')}.C.forged`);
    // A stream of its own naming another identity's inbox would copy every reply the ledger sends intake.
    await expect(jsm.streams.add({ name: `OBJ_${blobBucket('a')}x`, subjects: ['_INBOX_svc-intake.>'] })).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(jsm.consumers.add(`OBJ_${blobBucket('a')}`, { durable_name: 'push', deliver_subject: eventSubject('JobFinished', { team: 'b', jobId: 'job_1' }), ack_policy: AckPolicy.None })).rejects.toThrow(/Permissions Violation|timeout/i);
    // Team b's object is untouched.
    const check = await BlobStore.open(await as('operator'));
    expect(await check.readBytes('b', stored.sha256)).toEqual(Buffer.from(bytes));
  });
});

describe('an execution node', () => {
  it('publishes its own heartbeats only, and cannot publish price lists or usage', async () => {
    const op = await as('operator');
    const seen = op.subscribe('gpunet.hb.*');
    await op.flush();
    const n1 = await as('n1');
    n1.publish('gpunet.hb.n1', '{"nodeId":"n1"}');
    await refusedPublish(n1, 'gpunet.hb.n2');
    for (const type of ['PriceListPublished', 'UsageRecorded', 'JobPlaced', 'JobSubmitted'] as const) await refusedPublish(n1, eventSubject(type, { team: 'a', jobId: 'job_1' }));
    for await (const m of seen) {
      expect(m.subject).toBe('gpunet.hb.n1');
      break;
    }
  });

  it('consumes its own work consumer, never another node\'s, and cannot publish any event', async () => {
    await jetstream(await as('operator')).publish('gpunet.work.n1.JobPlaced', '{}');
    const js = jetstream(await as('n1'));
    const own = await js.consumers.get('GPUNET_WORK', 'execution-n1');
    const batch = await own.fetch({ max_messages: 1, expires: 2_000 });
    let got = 0;
    for await (const m of batch) {
      expect(m.subject).toBe('gpunet.work.n1.JobPlaced');
      m.ack();
      got++;
    }
    expect(got).toBe(1);
    await expect(js.consumers.get('GPUNET_WORK', 'execution-n2')).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'n1', '$JS.API.CONSUMER.INFO.GPUNET_WORK.execution-n2'));
    const n1 = await as('n1');
    await expect(n1.request('$JS.API.CONSUMER.MSG.NEXT.GPUNET_WORK.execution-n2', '{"batch":1}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation/i);
    await expect((await jetstreamManager(n1)).streams.add({ name: 'CAPTURE', subjects: ['gpunet.hb.>'] })).rejects.toThrow(/Permissions Violation|timeout/i);
    // A node reports to the recorder; it never publishes an event itself, not even its own kind.
    const finished = eventSubject('JobFinished', { team: 'a', jobId: 'job_1' });
    await expect(jetstream(n1).publish(finished, '{}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation|timeout|no responders/i);
    await logged(violation('Publish', 'n1', finished));
  });

  it('reads and writes its own bucket only (never a team\'s, never another node\'s) and logs only on its own subjects; storage reaches both kinds', async () => {
    const storage = await as('storage');
    const team = await BlobStore.open(storage);
    const secret = await team.uploadBytes('a', new TextEncoder().encode('team a input'));
    const n1Bucket = await BlobStore.open(storage, { node: 'n1' });
    await BlobStore.open(storage, { node: 'n2' }).then((b) => b.ensureBucket('a'));
    expect(await n1Bucket.copyFrom(team, 'a', secret.sha256)).toMatchObject({ copiedBytes: secret.size });

    const n1 = await as('n1');
    const own = await BlobStore.open(n1, { node: 'n1', create: false });
    expect(Buffer.from(await own.readBytes('a', secret.sha256)).toString()).toBe('team a input');
    const output = await own.uploadBytes('a', new TextEncoder().encode('n1 output'));
    expect(await team.copyFrom(n1Bucket, 'a', output.sha256)).toMatchObject({ copiedBytes: output.size });
    expect(await own.remove('a', secret.sha256)).toBe(true);

    await expect((await BlobStore.open(n1, { create: false, stallTimeoutMs: 5_000 })).readBytes('a', secret.sha256)).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'n1', '$JS.API.STREAM.INFO.OBJ_gpunet-blobs-a'));
    await expect((await BlobStore.open(n1, { node: 'n2', create: false, stallTimeoutMs: 5_000 })).stat('a', secret.sha256)).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'n1', '$JS.API.STREAM.INFO.OBJ_gpunet-node-n2'));
    await expect((await jetstreamManager(n1)).streams.purge('OBJ_gpunet-blobs-a')).rejects.toThrow(/Permissions Violation|timeout/i);
    await refusedPublish(n1, 'gpunet.data.n2.stage');
    await refusedPublish(n1, 'gpunet.data.n2.read');

    const js = jetstream(n1);
    expect((await js.publish('gpunet.logs.a.job-1.n1', '{}')).stream).toBe('GPUNET_LOGS');
    await expect(js.publish('gpunet.logs.a.job-1.n2', '{}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'n1', 'gpunet.logs.a.job-1.n2'));
  });

  it('a read through storage (decision 0036): storage has the server answer the node\'s own inbox with a chunk of the team\'s blob; the node still cannot ask the team\'s bucket itself', async () => {
    const storage = await as('storage');
    const team = await BlobStore.open(storage);
    const blob = await team.uploadBytes('a', new TextEncoder().encode('read for n1'));
    const source = await team.chunkSource('a', blob.sha256);
    const n1 = await as('n1');
    // The node asks on its own read subject; storage (here the test, with storage's identity) forwards a direct get with the node's reply subject.
    const served = storage.subscribe('gpunet.data.n1.read', { max: 1, callback: (_err, msg) => source.forward(0, msg.reply!) });
    await storage.flush();
    const reply = await n1.request('gpunet.data.n1.read', '{}', { timeout: 15_000 });
    expect(reply.headers?.get('Nats-Sequence')).toMatch(/^[1-9][0-9]*$/);
    expect(Buffer.from(reply.data).toString()).toBe('read for n1');
    await served.closed;
    // The same direct get sent by the node itself is refused: only storage may ask the team's bucket.
    await expect(n1.request('$JS.API.DIRECT.GET.OBJ_gpunet-blobs-a', '{"seq":1}', { timeout: 15_000 })).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'n1', '$JS.API.DIRECT.GET.OBJ_gpunet-blobs-a'));
  });
});

describe('a single writer\'s lease (decision 0029)', () => {
  it('placement takes and renews its own lease only: never another role\'s key, never a purge or delete of the bucket; ledger cannot take placement\'s', async () => {
    const placement = await as('placement');
    const kv = await new Kvm(jetstream(placement)).create(LEASE_BUCKET, { history: 1, ttl: 6_000 });
    const revision = await kv.create('placement', '{"holder":"p1"}');
    expect(await kv.update('placement', '{"holder":"p1"}', revision)).toBeGreaterThan(revision);
    expect((await kv.get('placement'))?.string()).toBe('{"holder":"p1"}');

    await refusedPublish(placement, `$KV.${LEASE_BUCKET}.ledger`);
    await expect((await jetstreamManager(placement)).streams.purge(`KV_${LEASE_BUCKET}`)).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'placement', `$JS.API.STREAM.PURGE.KV_${LEASE_BUCKET}`));
    await expect((await jetstreamManager(placement)).streams.delete(`KV_${LEASE_BUCKET}`)).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'placement', `$JS.API.STREAM.DELETE.KV_${LEASE_BUCKET}`));

    const ledger = await as('ledger');
    await refusedPublish(ledger, `$KV.${LEASE_BUCKET}.placement`);
    expect((await kv.get('placement'))?.string()).toBe('{"holder":"p1"}');
  });

  it('the ledger takes and renews its own lease key only: placement\'s and storage\'s keys cannot be written, deleted or read through it', async () => {
    const placement = await as('placement');
    const placementKv = await new Kvm(jetstream(placement)).create(LEASE_BUCKET, { history: 1, ttl: 6_000 });
    await placementKv.put('placement', '{"holder":"p2"}');
    const ledger = await as('ledger');
    const kv = await new Kvm(jetstream(ledger)).create(LEASE_BUCKET, { history: 1, ttl: 6_000 });
    // Its own key (unpartitioned: `ledger`), as the lease does it: create, update on its revision, read, delete on release.
    const revision = await kv.create('ledger', '{"holder":"l1"}');
    expect(await kv.update('ledger', '{"holder":"l1"}', revision)).toBeGreaterThan(revision);
    expect((await kv.get('ledger'))?.string()).toBe('{"holder":"l1"}');

    // What a ledger taking over placement's role would do: its KV writes never reach the bucket.
    await expect(kv.put('placement', '{"holder":"ledger"}', { timeout: 3_000 })).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'ledger', `$KV.${LEASE_BUCKET}.placement`));
    await expect(kv.delete('placement')).rejects.toThrow(/Permissions Violation|timeout/i);
    await refusedPublish(ledger, `$KV.${LEASE_BUCKET}.storage`);
    await expect(kv.get('placement')).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'ledger', `$JS.API.DIRECT.GET.KV_${LEASE_BUCKET}.$KV.${LEASE_BUCKET}.placement`));
    await expect((await jetstreamManager(ledger)).streams.purge(`KV_${LEASE_BUCKET}`)).rejects.toThrow(/Permissions Violation|timeout/i);
    await logged(violation('Publish', 'ledger', `$JS.API.STREAM.PURGE.KV_${LEASE_BUCKET}`));
    expect((await placementKv.get('placement'))?.string()).toBe('{"holder":"p2"}');
    await kv.delete('ledger', { previousSeq: (await kv.get('ledger'))!.revision });
  });

  it('the recorder takes its own lease key (`recorder`) only: never the ledger\'s or placement\'s', async () => {
    const recorder = await as('recorder');
    const kv = await new Kvm(jetstream(recorder)).create(LEASE_BUCKET, { history: 1, ttl: 6_000 });
    const revision = await kv.create('recorder', '{"holder":"r1"}');
    expect(await kv.update('recorder', '{"holder":"r1"}', revision)).toBeGreaterThan(revision);
    await refusedPublish(recorder, `$KV.${LEASE_BUCKET}.ledger`);
    await refusedPublish(recorder, `$KV.${LEASE_BUCKET}.placement`);
    await refusedPublish(recorder, `$KV.${LEASE_BUCKET}.ledger-p0`);
  });
});
