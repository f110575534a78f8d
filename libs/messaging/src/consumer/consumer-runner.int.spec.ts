import { IllegalStateError, TransientError } from '#errors';
import { openEventStore } from '#event-store';
import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { z } from 'zod';
import { startNatsServer, type TestNatsServer } from '../../../../test/support/nats-server.js';
import { testEvent } from '../../test-fixtures/events.js';
import { deferred, waitFor } from '../../test-fixtures/wait-for.js';
import { encodeEvent, type BusEvent } from '../bus-event.js';
import { SqliteInbox } from '../inbox/sqlite-inbox.js';
import { provision } from '../topology/provision.js';
import { JetStreamConsumerRunner, type ConsumerRunnerOptions, type EventRoute } from './consumer-runner.js';
import type { DeadLetter } from './dead-letter.js';

const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

describe('JetStreamConsumerRunner (nats-server)', () => {
  let server: TestNatsServer;
  let nc: NatsConnection;
  let js: JetStreamClient;
  let jsm: JetStreamManager;
  const runners: JetStreamConsumerRunner[] = [];

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
    js = jetstream(nc);
    jsm = await jetstreamManager(nc);
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.close()));
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  /** A stream `<name>.evt.>` with one durable consumer `<name>`, plus the shared dead-letter stream. */
  async function setup(name: string, ackWait = '2s'): Promise<{ publish: (e: BusEvent, msgID?: string) => Promise<void> }> {
    await provision(
      jsm,
      {
        streams: [
          { name: `S_${name}`, subjects: [`${name}.evt.>`] },
          { name: 'DLQ', subjects: ['gpunet.dlq.>'], maxAge: '1d' },
        ],
        consumers: [{ stream: `S_${name}`, durable: name, ackWait }],
      },
      { logger },
    );
    return {
      publish: async (e, msgID) => {
        const m = encodeEvent(e, (x) => `${name}.evt.${x.type}`);
        await js.publish(m.subject, m.payload, { headers: m.headers, msgID: msgID ?? m.msgID });
      },
    };
  }

  async function run(name: string, routes: Record<string, EventRoute>, extra: Partial<ConsumerRunnerOptions> = {}): Promise<JetStreamConsumerRunner> {
    const runner = new JetStreamConsumerRunner(js, {
      stream: `S_${name}`,
      durable: name,
      routes,
      logger,
      retry: { backoffBaseMs: 20, backoffMaxMs: 200, maxDeliveries: 5 },
      ...extra,
    });
    await runner.start();
    runners.push(runner);
    return runner;
  }

  async function drained(name: string): Promise<boolean> {
    const ci = await jsm.consumers.info(`S_${name}`, name);
    return ci.num_pending === 0 && ci.num_ack_pending === 0;
  }

  async function deadLetters(durable: string): Promise<DeadLetter[]> {
    const out: DeadLetter[] = [];
    const info = await jsm.streams.info('DLQ');
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const m = await jsm.streams.getMessage('DLQ', { seq });
      if (m && m.subject === `gpunet.dlq.${durable}`) out.push(m.json<DeadLetter>());
    }
    return out;
  }

  it('handles and acks every event, validating data against the route schema', async () => {
    const { publish } = await setup('basic');
    const seen: number[] = [];
    const runner = await run('basic', {
      Counted: { schema: z.object({ n: z.number().int() }), handle: (e) => void seen.push((e.data as { n: number }).n) },
    });
    for (let n = 0; n < 50; n++) await publish(testEvent('Counted', { n }, { jobId: `job-${n % 5}` }));
    await publish(testEvent('SomethingElse', {}, { jobId: 'job-0' })); // no route: acked and skipped
    await waitFor(() => seen.length === 50 && runner.stats.skipped === 1, '50 events handled, 1 skipped');
    await waitFor(() => drained('basic'), 'consumer drained');
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(50).keys()]);
    expect(runner.stats).toMatchObject({ handled: 50, skipped: 1, retried: 0, deadLettered: 0 });
  });

  it('dead-letters a poison message at once, with the reason, and keeps handling the good ones after it', async () => {
    const { publish } = await setup('poison');
    const handled: string[] = [];
    const runner = await run('poison', {
      Good: { schema: z.object({ ok: z.literal(true) }), handle: (e) => void handled.push(e.eventId) },
    });
    // Not JSON at all, on the same job as good messages.
    const h = headers();
    h.set('Gpunet-Job-Id', 'job-p');
    await js.publish('poison.evt.Good', 'this is not json', { headers: h, msgID: 'garbage-1' });
    // JSON, but data fails the schema.
    const bad = testEvent('Good', { ok: 'yes' }, { jobId: 'job-p' });
    await publish(bad);
    const good = Array.from({ length: 10 }, () => testEvent('Good', { ok: true }, { jobId: 'job-p' }));
    for (const e of good) await publish(e);

    await waitFor(() => handled.length === 10, 'good events handled');
    await waitFor(() => drained('poison'), 'consumer drained');
    expect(handled).toEqual(good.map((e) => e.eventId));
    expect(runner.stats).toMatchObject({ deadLettered: 2, retried: 0 });

    const letters = await deadLetters('poison');
    expect(letters).toHaveLength(2);
    const [garbage, invalid] = letters;
    expect(garbage).toMatchObject({
      consumer: 'poison',
      stream: 'S_poison',
      subject: 'poison.evt.Good',
      streamSequence: '1',
      deliveries: 1,
      jobId: 'job-p',
      reason: 'schema_invalid',
      error: { code: 'malformed_message', name: 'MalformedMessageError' },
    });
    expect(Buffer.from(garbage!.payloadBase64, 'base64').toString()).toBe('this is not json');
    expect(garbage!.headers['Gpunet-Job-Id']).toEqual(['job-p']);
    expect(invalid).toMatchObject({ eventId: bad.eventId, type: 'Good', reason: 'schema_invalid', error: { code: 'validation_failed' } });
    expect(invalid!.error.issues).toEqual([expect.objectContaining({ path: 'data.ok' })]);
  });

  it('keeps per-job order through a retryable failure while other jobs go on', async () => {
    const { publish } = await setup('order');
    const log: string[] = [];
    let failuresLeft = 2;
    let a1Attempts = 0;
    await run('order', {
      Step: {
        handle: (e) => {
          const { job, n } = e.data as { job: string; n: number };
          if (job === 'A' && n === 1) {
            a1Attempts++;
            if (failuresLeft-- > 0) throw new TransientError('dependency not ready');
          }
          log.push(`${job}${n}`);
        },
      },
    });
    for (let n = 1; n <= 4; n++) {
      await publish(testEvent('Step', { job: 'A', n }, { jobId: 'A' }));
      await publish(testEvent('Step', { job: 'B', n }, { jobId: 'B' }));
    }
    await waitFor(() => log.length === 8, 'all steps handled');
    await waitFor(() => drained('order'), 'consumer drained');
    expect(log.filter((s) => s.startsWith('A'))).toEqual(['A1', 'A2', 'A3', 'A4']);
    expect(log.filter((s) => s.startsWith('B'))).toEqual(['B1', 'B2', 'B3', 'B4']);
    expect(a1Attempts).toBe(3);
    // Job B was not held up by job A's retries.
    expect(log.indexOf('B4')).toBeLessThan(log.indexOf('A1'));
  });

  it('with one constant key, handles every job in total stream order, one at a time, even through a retry', async () => {
    const { publish } = await setup('total');
    const log: string[] = [];
    let inHandler = 0;
    let maxInHandler = 0;
    let failuresLeft = 1;
    await run(
      'total',
      {
        Step: {
          handle: async (e) => {
            const { job, n } = e.data as { job: string; n: number };
            inHandler++;
            maxInHandler = Math.max(maxInHandler, inHandler);
            await new Promise((r) => setTimeout(r, 2));
            inHandler--;
            if (job === 'A' && n === 2 && failuresLeft-- > 0) throw new TransientError('not yet');
            log.push(`${job}${n}`);
          },
        },
      },
      { keyOf: () => 'global', concurrency: 16 },
    );
    const expected: string[] = [];
    for (let n = 1; n <= 3; n++) {
      for (const job of ['A', 'B', 'C']) {
        await publish(testEvent('Step', { job, n }, { jobId: job }));
        expected.push(`${job}${n}`);
      }
    }
    await waitFor(() => log.length === expected.length, 'all steps handled');
    expect(log).toEqual(expected);
    expect(maxInHandler).toBe(1);
  });

  it('keeps per-job order when the messages held behind a failed one fill max_ack_pending', async () => {
    const { publish } = await setup('saturated');
    await provision(jsm, { consumers: [{ stream: 'S_saturated', durable: 'saturated', ackWait: '2s', maxAckPending: 4 }] }, { logger });
    const log: number[] = [];
    let failed = false;
    await run('saturated', {
      Step: {
        handle: (e) => {
          const { n } = e.data as { n: number };
          if (n === 0 && !failed) {
            failed = true;
            throw new TransientError('not yet');
          }
          log.push(n);
        },
      },
    });
    for (let n = 0; n < 20; n++) await publish(testEvent('Step', { n }, { jobId: 'Z' }));
    await waitFor(() => log.length === 20, 'all 20 handled');
    expect(log).toEqual([...Array(20).keys()]);
  });

  it('keeps per-job order after a consuming process dies while holding messages behind a failed one', async () => {
    const { publish } = await setup('crash', '1s');
    const log: number[] = [];
    const nc2 = await connect({ servers: server.url });
    const dying = new JetStreamConsumerRunner(jetstream(nc2), {
      stream: 'S_crash',
      durable: 'crash',
      logger,
      retry: { backoffBaseMs: 300, backoffMaxMs: 300 },
      routes: {
        Step: {
          handle: (e) => {
            if ((e.data as { n: number }).n === 0) throw new TransientError('not yet');
            log.push((e.data as { n: number }).n);
          },
        },
      },
    });
    await dying.start();
    for (let n = 0; n < 5; n++) await publish(testEvent('Step', { n }, { jobId: 'C' }));
    await waitFor(() => dying.stats.retried === 1 && dying.stats.received >= 5, 'first failed, the rest held');
    // The process "dies": its connection goes without acking, nak'ing or handing anything back.
    await nc2.close();
    await dying.close();
    expect(log).toEqual([]);

    await run('crash', { Step: { handle: (e) => void log.push((e.data as { n: number }).n) } });
    await waitFor(() => log.length === 5, 'all handled after restart', 30_000);
    expect(log).toEqual([0, 1, 2, 3, 4]);
  });

  it('dead-letters a message after maxDeliveries retryable failures, then handles the job\'s next event', async () => {
    const { publish } = await setup('exhaust');
    const attempts: number[] = [];
    const handled: string[] = [];
    const runner = await run(
      'exhaust',
      {
        Flaky: {
          handle: (e, ctx) => {
            if ((e.data as { fail: boolean }).fail) {
              attempts.push(ctx.deliveryCount);
              throw new TransientError('still down');
            }
            handled.push(e.eventId);
          },
        },
      },
      { retry: { maxDeliveries: 3, backoffBaseMs: 10, backoffMaxMs: 50 } },
    );
    const doomed = testEvent('Flaky', { fail: true }, { jobId: 'J' });
    const next = testEvent('Flaky', { fail: false }, { jobId: 'J' });
    await publish(doomed);
    await publish(next);
    await waitFor(() => handled.length === 1, 'the next event handled');
    await waitFor(() => drained('exhaust'), 'consumer drained');
    expect(attempts).toEqual([1, 2, 3]);
    expect(handled).toEqual([next.eventId]);
    expect(runner.stats).toMatchObject({ retried: 2, deadLettered: 1, handled: 1 });
    const [letter] = await deadLetters('exhaust');
    expect(letter).toMatchObject({ eventId: doomed.eventId, jobId: 'J', reason: 'max_deliveries', deliveries: 3, error: { code: 'transient', message: 'still down' } });
  });

  it('dead-letters on a terminal handler error at the first delivery', async () => {
    const { publish } = await setup('terminal');
    let calls = 0;
    const runner = await run('terminal', {
      Cancel: {
        handle: () => {
          calls++;
          throw new IllegalStateError('job already finished');
        },
      },
    });
    await publish(testEvent('Cancel', {}, { jobId: 'T' }));
    await waitFor(() => runner.stats.deadLettered === 1, 'dead letter');
    await waitFor(() => drained('terminal'), 'consumer drained');
    expect(calls).toBe(1);
    const [letter] = await deadLetters('terminal');
    expect(letter).toMatchObject({ reason: 'terminal_error', deliveries: 1, error: { code: 'illegal_state', name: 'IllegalStateError' } });
  });

  it('dead-letters an event whose schema version is not accepted, naming the versions accepted, and handles the next', async () => {
    const { publish } = await setup('versions');
    const handled: string[] = [];
    // `JobFinished` is a version-1 event in the registry: the default accepted versions are [1].
    const runner = await run('versions', { JobFinished: { handle: (e) => void handled.push(e.eventId) } });
    const byHeader = testEvent('JobFinished', {}, { jobId: 'V' });
    const m = encodeEvent(byHeader, (x) => `versions.evt.${x.type}`);
    expect(m.headers.get('Gpunet-Schema-Version')).toBe('1'); // what every publish path sends
    m.headers.set('Gpunet-Schema-Version', '2');
    await js.publish(m.subject, m.payload, { headers: m.headers, msgID: m.msgID });
    const byMetadata = testEvent('JobFinished', {}, { jobId: 'V' });
    byMetadata.metadata.schemaVersion = 3;
    const m3 = encodeEvent(byMetadata, (x) => `versions.evt.${x.type}`);
    expect(m3.headers.get('Gpunet-Schema-Version')).toBe('3'); // the header follows the metadata...
    m3.headers.delete('Gpunet-Schema-Version'); // ...and without it the metadata alone is checked
    await js.publish(m3.subject, m3.payload, { headers: m3.headers, msgID: m3.msgID });
    const next = testEvent('JobFinished', {}, { jobId: 'V' });
    await publish(next);

    await waitFor(() => handled.length === 1 && runner.stats.deadLettered === 2, 'two dead letters, then the next event handled');
    expect(handled).toEqual([next.eventId]);
    const letters = await deadLetters('versions');
    expect(letters.map((l) => [l.eventId, l.reason, l.error.code])).toEqual([
      [byHeader.eventId, 'schema_invalid', 'unsupported_schema_version'],
      [byMetadata.eventId, 'schema_invalid', 'unsupported_schema_version'],
    ]);
    expect(letters[0]!.error.message).toBe('Gpunet-Schema-Version "2" is not accepted for event JobFinished: accepted version 1');
    expect(letters[0]!.error.issues).toEqual([expect.objectContaining({ path: 'Gpunet-Schema-Version' })]);
    expect(letters[1]!.error.message).toBe('metadata.schemaVersion 3 is not accepted for event JobFinished: accepted version 1');
  });

  it('does not handle an event twice when it is published again under another Nats-Msg-Id', async () => {
    const { publish } = await setup('dup');
    const handled: string[] = [];
    const runner = await run('dup', { Once: { handle: (e) => void handled.push(e.eventId) } });
    const e = testEvent('Once', { x: 1 }, { jobId: 'D' });
    await publish(e, 'first-id');
    await publish(e, 'second-id');
    await publish(testEvent('Once', { x: 2 }, { jobId: 'D' }));
    expect((await jsm.streams.info('S_dup')).state.messages).toBe(3);
    await waitFor(() => runner.stats.received === 3 && handled.length === 2, 'all delivered');
    await waitFor(() => drained('dup'), 'consumer drained');
    expect(handled.filter((id) => id === e.eventId)).toHaveLength(1);
    expect(runner.stats).toMatchObject({ handled: 2, duplicates: 1 });
  });

  it('remembers handled events across a restart with a durable inbox', async () => {
    const { publish } = await setup('durable');
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-inbox-'));
    try {
      const handled: string[] = [];
      const routes = { Once: { handle: (e: BusEvent) => void handled.push(e.eventId) } };
      const e = testEvent('Once', {}, { jobId: 'R' });
      const inbox1 = new SqliteInbox({ path: join(dir, 'store.db') });
      const first = await run('durable', routes, { inbox: inbox1 });
      await publish(e, 'm1');
      await waitFor(async () => handled.length === 1 && (await drained('durable')), 'first delivery handled');
      await first.close();
      await inbox1.close();

      const inbox2 = new SqliteInbox({ path: join(dir, 'store.db') });
      const second = await run('durable', routes, { inbox: inbox2 });
      await publish(e, 'm2'); // e.g. the relay re-publishing after the duplicate window
      await waitFor(() => second.stats.duplicates === 1, 'duplicate detected');
      await waitFor(() => drained('durable'), 'consumer drained');
      expect(handled).toEqual([e.eventId]);
      await second.close();
      await inbox2.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('on close, finishes the message in hand and hands back the fetched ones it has not started', async () => {
    const { publish } = await setup('shutdown', '30s');
    const gate = deferred();
    const started: string[] = [];
    const done: string[] = [];
    const routes = {
      Slow: {
        handle: async (e: BusEvent) => {
          started.push(e.eventId);
          if (started.length === 1) await gate.promise;
          done.push(e.eventId);
        },
      },
    };
    const runner = await run('shutdown', routes, { concurrency: 1 });
    const events = Array.from({ length: 5 }, (_, i) => testEvent('Slow', { i }, { jobId: 'S' }));
    for (const e of events) await publish(e);
    await waitFor(() => started.length === 1 && runner.stats.received === 5, 'first event in hand, the rest fetched');

    let closed = false;
    const closing = runner.close().then(() => (closed = true));
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(false);
    gate.resolve();
    await closing;
    expect(done).toEqual([events[0]!.eventId]);

    // The four handed back are redelivered promptly (not after the 30 s ack wait), in order.
    const next = await run('shutdown', routes);
    await waitFor(() => done.length === 5, 'the rest handled after restart', 30_000);
    expect(done).toEqual(events.map((e) => e.eventId));
    await waitFor(() => drained('shutdown'), 'consumer drained');
    expect(next.stats.handled).toBe(4);
  });

  it('ties each event to the store: the stored copy is handled, a forged or altered bus copy is dead-lettered (not_recorded)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-recorded-'));
    const store = await openEventStore(`sqlite:${join(dir, 'events.db')}`);
    try {
      const { publish } = await setup('recorded');
      const jobId = 'job_recorded';
      const meta = { correlationId: 'c1', causationId: 'c1', jobId, producer: 'execution', occurredAt: new Date(0).toISOString() };
      await store.appendToStream('execution-n1-attempt-a1', [{ eventId: randomUUID(), type: 'JobFinished', data: { finishedAt: '2026-01-01T00:00:21.000Z' }, metadata: meta }]);
      const [recorded] = await store.readStream('execution-n1-attempt-a1');
      const handled: BusEvent[] = [];
      await run(
        'recorded',
        { JobFinished: { handle: (e) => void handled.push(e) } },
        {
          recorded: async (e) => {
            if (e.streamId === undefined || e.revision === undefined) return undefined;
            const [copy] = await store.readStream(e.streamId, { fromRevision: e.revision, maxCount: 1 });
            return copy;
          },
        },
      );
      // The attack: a JobFinished the store never recorded, one with no stream, and the recorded
      // one with its finish moved back to bill 0 ms (same id, same hash: only the data is altered).
      const forged = { ...testEvent('JobFinished', { finishedAt: '2026-01-01T00:00:00.000Z' }, { jobId }), streamId: 'execution-n1-attempt-a2', revision: 0n, hash: 'f'.repeat(64) };
      const streamless = testEvent('JobFinished', { finishedAt: '2026-01-01T00:00:00.000Z' }, { jobId });
      const altered = { ...recorded!, data: { finishedAt: '2026-01-01T00:00:00.000Z' } };
      const rehashed = { ...recorded!, eventId: randomUUID(), hash: 'e'.repeat(64) };
      await publish(forged);
      await publish(streamless);
      await publish(rehashed);
      await publish(altered, 'altered-copy');
      await waitFor(() => drained('recorded'), 'consumer drained');
      // Only the store's copy was handled, with the store's data.
      expect(handled).toHaveLength(1);
      expect(handled[0]!.eventId).toBe(recorded!.eventId);
      expect(handled[0]!.data).toEqual({ finishedAt: '2026-01-01T00:00:21.000Z' });
      const letters = await deadLetters('recorded');
      expect(letters.map((l) => [l.reason, l.error.code])).toEqual([['terminal_error', 'not_recorded'], ['terminal_error', 'not_recorded'], ['terminal_error', 'not_recorded']]);
      expect(letters.map((l) => l.eventId).sort()).toEqual([forged.eventId, streamless.eventId, rehashed.eventId].sort());
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
