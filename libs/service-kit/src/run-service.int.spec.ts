import { eventSubject, parseJobSpec, querySubject, type EventData } from '#contracts';
import { encodeEvent, requestQuery } from '#messaging';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Controller, Inject, Module } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { EVENT_WRITER, JetStreamContext, startService, type EventWriter, type RunningService } from './index.js';

/** A handler that stages nothing but says so: enough to see the kit carry an event through. */
@Controller()
class EchoController {
  constructor(@Inject(EVENT_WRITER) private readonly writer: EventWriter) {}

  @EventPattern<string>('JobSubmitted')
  async onSubmitted(@Payload() data: EventData<'JobSubmitted'>, @Ctx() ctx: JetStreamContext): Promise<void> {
    await this.writer.append(
      `storage-job-${data.jobId}`,
      [{ type: 'InputsStaged', data: { jobId: data.jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }],
      { cause: ctx.getEvent() },
    );
  }
}
@Module({ controllers: [EchoController] })
class EchoModule {}

const waitFor = async (what: string, check: () => Promise<boolean>, timeoutMs = 10_000) => {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
};

describe('service kit', () => {
  let nats: TestNatsServer;
  let dir: string;
  let svc: RunningService;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-kit-'));
    svc = await startService({
      name: 'storage',
      module: EchoModule,
      env: { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: `sqlite:${join(dir, 'events.db')}`, GPUNET_LOG_LEVEL: 'silent' },
    });
    nc = await connect({ servers: nats.url });
  });
  afterAll(async () => {
    await nc?.close();
    await svc?.stop();
    await nats?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a bad environment naming the variable and the fix', async () => {
    await expect(startService({ name: 'storage', module: EchoModule, env: { GPUNET_LOG_LEVEL: 'loud' } })).rejects.toMatchObject({
      issues: [expect.objectContaining({ path: 'GPUNET_LOG_LEVEL', fix: expect.stringContaining('set GPUNET_LOG_LEVEL') })],
    });
  });

  it('answers its health query', async () => {
    const reply = await requestQuery(nc, querySubject('storage', 'Health'), {}, {}, { timeoutMs: 3_000 });
    expect(reply).toMatchObject({ service: 'storage', instance: 'storage', status: 'ok' });
  });

  it('provisions its consumer and streams from deploy/topology.yaml', async () => {
    const jsm = await jetstreamManager(nc);
    const streams = (await jsm.streams.names().next()).sort();
    expect(streams).toEqual(['GPUNET_DLQ', 'GPUNET_EVENTS', 'GPUNET_LOGS', 'GPUNET_WORK']);
    expect((await jsm.consumers.info('GPUNET_EVENTS', 'storage')).config.durable_name).toBe('storage');
  });

  it('consumes an event from the bus, appends with a derived id, relays its own stream only, and ignores a redelivery', async () => {
    const spec = parseJobSpec({ work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } });
    if (!spec.ok) throw new Error('fixture spec invalid');
    const { store } = svc.ctx;
    const submitted = {
      eventId: '0190a6c2-7f3e-7b4a-9c1d-2e3f4a5b6c7d',
      type: 'JobSubmitted',
      data: { jobId: 'job-kit-1', team: 'team-a', spec: spec.spec, submittedAt: new Date().toISOString() },
      metadata: { correlationId: 'corr-1', causationId: 'corr-1', producer: 'intake', occurredAt: new Date().toISOString(), jobId: 'job-kit-1', team: 'team-a' },
    };
    // Intake's stream is not this service's: the kit's relay must not publish it, so publish it as intake's relay would.
    await store.appendToStream('intake-job-job-kit-1', [submitted]);
    const js = (await import('@nats-io/jetstream')).jetstream(nc);
    const [recorded] = await store.readStream('intake-job-job-kit-1');
    const body = encodeEvent(recorded!).payload;
    const subject = eventSubject('JobSubmitted', recorded!.metadata);
    await js.publish(subject, body, { msgID: submitted.eventId });
    await js.publish(subject, body, { msgID: `${submitted.eventId}-again` }); // same event id: a duplicate
    await waitFor('InputsStaged in the store', async () => (await store.readStream('storage-job-job-kit-1')).length > 0);
    const staged = await store.readStream('storage-job-job-kit-1');
    expect(staged).toHaveLength(1);
    expect(staged[0]?.eventId).toBe(svc.ctx.writer.eventIdFor(submitted.eventId, 'InputsStaged'));
    expect(staged[0]?.metadata).toMatchObject({ correlationId: 'corr-1', causationId: submitted.eventId, producer: 'storage', jobId: 'job-kit-1' });
    const jsm = await jetstreamManager(nc);
    await waitFor('InputsStaged on the bus', async () => (await jsm.streams.info('GPUNET_EVENTS')).state.messages >= 3);
    const onBus = await jsm.streams.getMessage('GPUNET_EVENTS', { last_by_subj: eventSubject('InputsStaged', staged[0]!.metadata) });
    expect(onBus?.header.get('Nats-Msg-Id')).toBe(staged[0]?.eventId);
    await new Promise((r) => setTimeout(r, 300));
    expect((await jsm.streams.info('GPUNET_EVENTS')).state.messages).toBe(3); // 2 published by the test + 1 relayed
  });

  it('treats handling the same cause again as a no-op, even when the new decision is stamped later', async () => {
    const cause = { eventId: '0190a6c2-7f3e-7b4a-9c1d-aaaaaaaaaaaa', metadata: { correlationId: 'corr-2', jobId: 'job-kit-2' } };
    const staged = (at: string) => [{ type: 'InputsStaged' as const, data: { jobId: 'job-kit-2', inputs: [], totalBytes: 0, stagedAt: at } }];
    const first = await svc.ctx.writer.append('storage-job-job-kit-2', staged('2026-11-30T05:00:00.000Z'), { cause, expectedRevision: 'no_stream' });
    const again = await svc.ctx.writer.append('storage-job-job-kit-2', staged('2026-11-30T05:00:09.000Z'), { cause, expectedRevision: 'no_stream' });
    expect(again).toEqual({ ...first, alreadyRecorded: true });
    expect(first.alreadyRecorded).toBe(false);
    const events = await svc.ctx.store.readStream('storage-job-job-kit-2');
    expect(events.map((e) => (e.data as { stagedAt: string }).stagedAt)).toEqual(['2026-11-30T05:00:00.000Z']);
    // Without a cause nothing is derived, so a clash stays an error for the caller to see.
    await expect(svc.ctx.writer.append('storage-job-job-kit-2', staged('2026-11-30T05:00:10.000Z'), { expectedRevision: 'no_stream' })).rejects.toThrow(/expected revision/);
  });

  it('rejects data that breaks the contract before anything is written', async () => {
    await expect(
      svc.ctx.writer.append('storage-job-bad', [{ type: 'InputsStaged', data: { jobId: 'bad', inputs: [], totalBytes: -1, stagedAt: 'yesterday' } }]),
    ).rejects.toMatchObject({ issues: expect.arrayContaining([expect.objectContaining({ path: expect.stringContaining('totalBytes') })]) });
    expect(await svc.ctx.store.readStream('storage-job-bad')).toEqual([]);
  });
});
