import 'reflect-metadata';
import { IllegalStateError, NotFoundError, TransientError, ValidationError } from '#errors';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Controller, Inject, Injectable, Module, type INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import { pino } from 'pino';
import { lastValueFrom } from 'rxjs';
import { z } from 'zod';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { waitFor } from '../../test-fixtures/wait-for.js';
import { encodeEvent } from '../bus-event.js';
import { QueryTimeoutError } from '../errors.js';
import type { TopologyDefinition } from '../topology/topology.js';
import { JetStreamExceptionFilter, JetStreamTransportModule } from './jetstream-exception.filter.js';
import { BusRecord, JetStreamClient } from './jetstream.client.js';
import { JetStreamContext } from './jetstream.context.js';
import { JetStreamServer } from './jetstream.server.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

const events = {
  JobSubmitted: z.object({ jobId: z.string(), gpus: z.number().int().positive(), mode: z.enum(['ok', 'flaky', 'illegal']).default('ok') }),
  JobCancelled: z.object({ jobId: z.string() }),
};
const queries = {
  'gpunet.qry.test.GetJob': {
    request: z.object({ jobId: z.string().min(1) }),
    response: z.object({ jobId: z.string(), gpus: z.number() }),
  },
};
const topology: TopologyDefinition = {
  streams: [
    { name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'] },
    { name: 'GPUNET_DLQ', subjects: ['gpunet.dlq.>'], maxAge: '7d' },
  ],
  consumers: [{ stream: 'GPUNET_EVENTS', durable: 'testsvc', ackWait: '5s', filterSubjects: ['gpunet.evt.JobSubmitted', 'gpunet.evt.JobCancelled'] }],
};

const SEEN = Symbol('SEEN');
interface Seen {
  submitted: { jobId: string; gpus: number; deliveryCount: number; correlationId: string; eventId: string }[];
  cancelled: string[];
}

@Injectable()
class JobsStore {
  constructor(@Inject(SEEN) readonly seen: Seen) {}
}

@Controller()
class JobsController {
  constructor(private readonly store: JobsStore) {}

  // The type argument picks the untyped overload, so the typed @Ctx() parameter is accepted (Nest 12 typings).
  @EventPattern<string>('JobSubmitted')
  onSubmitted(@Payload() data: z.output<typeof events.JobSubmitted>, @Ctx() ctx: JetStreamContext): void {
    if (data.mode === 'flaky' && ctx.getDeliveryCount() < 3) throw new TransientError('node registry not reachable yet');
    if (data.mode === 'illegal') throw new IllegalStateError(`job ${data.jobId} already placed`);
    ctx.getLogger().info('job submitted');
    this.store.seen.submitted.push({
      jobId: data.jobId,
      gpus: data.gpus,
      deliveryCount: ctx.getDeliveryCount(),
      correlationId: ctx.getCorrelationId(),
      eventId: ctx.getEvent().eventId,
    });
  }

  @EventPattern('JobCancelled')
  async onCancelled(@Payload() data: { jobId: string }): Promise<void> {
    await Promise.resolve();
    this.store.seen.cancelled.push(data.jobId);
  }

  @MessagePattern('gpunet.qry.test.GetJob')
  getJob(@Payload() req: { jobId: string }): { jobId: string; gpus: number } {
    const job = this.store.seen.submitted.find((j) => j.jobId === req.jobId);
    if (!job) throw new NotFoundError(`job ${req.jobId} does not exist`);
    return { jobId: job.jobId, gpus: job.gpus };
  }

  @MessagePattern('gpunet.qry.test.Slow')
  async slow(): Promise<string> {
    await new Promise((r) => setTimeout(r, 1_000));
    return 'late';
  }
}

describe('Nest JetStream transport (nats-server)', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let app: INestMicroservice;
  let strategy: JetStreamServer;
  let client: JetStreamClient;
  const seen: Seen = { submitted: [], cancelled: [] };

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    jsm = await jetstreamManager(nc);

    @Module({ imports: [JetStreamTransportModule], controllers: [JobsController], providers: [JobsStore, { provide: SEEN, useValue: seen }] })
    class AppModule {}

    strategy = new JetStreamServer({
      servers: server.url,
      topology,
      consumers: [{ durable: 'testsvc', retry: { backoffBaseMs: 20, backoffMaxMs: 100, maxDeliveries: 5 } }],
      events,
      queries,
      logger,
    });
    app = await NestFactory.createMicroservice(AppModule, { strategy, logger: false });
    await app.listen();
    client = new JetStreamClient({ servers: server.url, events, queries, producer: 'test', timeoutMs: 2_000 });
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await app?.close();
    await nc?.close();
    await server?.stop();
  });

  it('provisions the topology at listen', async () => {
    expect(strategy.provisionReport?.streams.map((s) => s.name)).toEqual(['GPUNET_EVENTS', 'GPUNET_DLQ']);
    const ci = await jsm.consumers.info('GPUNET_EVENTS', 'testsvc');
    expect(ci.config.ack_policy).toBe('explicit');
  });

  it('routes emitted events to their @EventPattern handlers with the envelope in the context', async () => {
    const ack = await lastValueFrom(client.emit('JobSubmitted', new BusRecord({ jobId: 'job-1', gpus: 2 }, { jobId: 'job-1', correlationId: 'req-1' })));
    expect(ack).toMatchObject({ stream: 'GPUNET_EVENTS', duplicate: false });
    await lastValueFrom(client.emit('JobCancelled', new BusRecord({ jobId: 'job-1' }, { jobId: 'job-1' })));
    await waitFor(() => seen.cancelled.includes('job-1'), 'JobCancelled handled');
    expect(seen.submitted).toEqual([expect.objectContaining({ jobId: 'job-1', gpus: 2, deliveryCount: 1, correlationId: 'req-1' })]);
  });

  it('validates emitted data against the contract before publishing', async () => {
    const err = await lastValueFrom(client.emit('JobSubmitted', { jobId: 'job-x', gpus: 0 })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).issues).toEqual([expect.objectContaining({ path: 'data.gpus' })]);
  });

  it('keeps the error class through Nest: a retryable error is retried, a terminal one dead-lettered at once', async () => {
    await lastValueFrom(client.emit('JobSubmitted', new BusRecord({ jobId: 'job-flaky', gpus: 1, mode: 'flaky' }, { jobId: 'job-flaky' })));
    await lastValueFrom(client.emit('JobSubmitted', new BusRecord({ jobId: 'job-illegal', gpus: 1, mode: 'illegal' }, { jobId: 'job-illegal' })));
    await waitFor(() => seen.submitted.some((j) => j.jobId === 'job-flaky'), 'flaky job handled on its third delivery');
    expect(seen.submitted.find((j) => j.jobId === 'job-flaky')!.deliveryCount).toBe(3);
    await waitFor(async () => (await jsm.streams.info('GPUNET_DLQ')).state.messages === 1, 'one dead letter');
    const letter = (await jsm.streams.getMessage('GPUNET_DLQ', { seq: 1 }))!.json<{ reason: string; error: { code: string }; deliveries: number }>();
    expect(letter).toMatchObject({ reason: 'terminal_error', error: { code: 'illegal_state' }, deliveries: 1 });
    expect(strategy.consumerStats().testsvc).toMatchObject({ deadLettered: 1 });
  });

  it('dead-letters an event whose data fails its schema on the server side, and keeps consuming', async () => {
    const js = jetstream(nc);
    const bad = encodeEvent({
      eventId: 'bad-1',
      type: 'JobSubmitted',
      data: { jobId: 'job-bad', gpus: 'two' },
      metadata: { correlationId: 'c', causationId: 'c', jobId: 'job-bad', producer: 'rogue', occurredAt: '2026-01-01T00:00:00Z' },
    });
    await js.publish(bad.subject, bad.payload, { msgID: bad.msgID, headers: bad.headers });
    await lastValueFrom(client.emit('JobSubmitted', new BusRecord({ jobId: 'job-after-bad', gpus: 1 }, { jobId: 'job-bad' })));
    await waitFor(() => seen.submitted.some((j) => j.jobId === 'job-after-bad'), 'next event of the job handled');
    const info = await jsm.streams.info('GPUNET_DLQ');
    const letter = (await jsm.streams.getMessage('GPUNET_DLQ', { seq: info.state.last_seq }))!.json<{ reason: string; eventId: string; error: { issues: { path: string }[] } }>();
    expect(letter).toMatchObject({ reason: 'schema_invalid', eventId: 'bad-1' });
    expect(letter.error.issues).toEqual([expect.objectContaining({ path: 'data.gpus' })]);
  });

  it('answers @MessagePattern queries through send, validated by the same contracts, with errors mapped', async () => {
    await expect(lastValueFrom(client.send('gpunet.qry.test.GetJob', { jobId: 'job-1' }))).resolves.toEqual({ jobId: 'job-1', gpus: 2 });
    await expect(lastValueFrom(client.send('gpunet.qry.test.GetJob', { jobId: 'nope' }))).rejects.toBeInstanceOf(NotFoundError);
    await expect(lastValueFrom(client.send('gpunet.qry.test.GetJob', { jobId: '' }))).rejects.toBeInstanceOf(ValidationError);
    // Without local validation the server answers validation_failed with the field issues.
    const raw = await nc.request('gpunet.qry.test.GetJob', JSON.stringify({}), { timeout: 2000 });
    expect(raw.json()).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'jobId' }] } });
    const quick = new JetStreamClient({ connection: nc, timeoutMs: 100 });
    await quick.connect();
    await expect(lastValueFrom(quick.send('gpunet.qry.test.Slow', {}))).rejects.toBeInstanceOf(QueryTimeoutError);
    await quick.close();
  });

  it('exports the exception filter used by the module', () => {
    expect(new JetStreamExceptionFilter()).toBeInstanceOf(JetStreamExceptionFilter);
  });
});
