/**
 * Bus throughput: events/s from append (SQLite event store) → outbox relay → JetStream → consumer
 * runner (handled and acked), beside raw JetStream async publish on the same server in the same run.
 *
 *   npm run bench:bus            BENCH_EVENTS (default 20000) events per scenario
 *
 * As in production the producing service (store, appends, relay in one process) and the consuming
 * service (another process) are apart; the clock runs from the first append until the consumer has
 * handled the last event. Scenarios:
 *   bus.pipeline           appends of 100 events (one job stream each), relayed and consumed meanwhile
 *   bus.pipeline.append10  the same with appends of 10 events (bounded by one fsync per append)
 *   bus.relay_consumer     the store filled beforehand: relay → JetStream → consumer alone
 * Ends with one JSON line per figure, e.g.
 *   {"bench":"bus.pipeline","value":N,"unit":"events/s","raw":R,"ratio":X}
 */
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { SqliteEventStore, type EventToAppend } from '#event-store';
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { startNatsServer } from '../../../test/support/nats-server.js';
import { JetStreamConsumerRunner } from '../src/consumer/consumer-runner.js';
import { OutboxRelay } from '../src/outbox/outbox-relay.js';
import { provision } from '../src/topology/provision.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const JOBS = 1000;
const RAW_WINDOW = 1000;
const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' });

function jobEvents(job: number, round: number, count: number): EventToAppend[] {
  const jobId = `job-${job}`;
  return Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    type: 'JobCheckpointed',
    data: { jobId, attempt: 1, checkpoint: round * count + i, bytes: 1_048_576, sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
    metadata: { correlationId: `corr-${jobId}`, causationId: randomUUID(), jobId, team: 'team-a', producer: 'execution', occurredAt: new Date().toISOString() },
  }));
}

/** Raw limit: async publishes to 1,000 subjects of a file stream, RAW_WINDOW PubAcks in flight. */
async function rawPublish(js: JetStreamClient, count: number, payload: string): Promise<number> {
  const started = performance.now();
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < count; i++) {
    const p: Promise<unknown> = js.publish(`raw.${i % 1000}`, payload).then(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= RAW_WINDOW) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return count / ((performance.now() - started) / 1000);
}

/**
 * The consuming service, in its own process: a consumer runner with a no-op handler; tells the
 * parent (IPC) when it is ready and when it has handled `count` events, then stops when told.
 */
async function consumerProcess(servers: string, durable: string, count: number): Promise<void> {
  const nc = await connect({ servers, noAsyncTraces: true });
  let handled = 0;
  const runner = new JetStreamConsumerRunner(jetstream(nc), {
    stream: 'GPUNET_EVENTS',
    durable,
    logger,
    concurrency: 64,
    routes: {
      JobCheckpointed: {
        handle: () => {
          if (++handled === count) process.send!({ done: true });
        },
      },
    },
  });
  await runner.start();
  process.send!({ ready: true });
  await new Promise<void>((r) => process.once('message', () => r()));
  await runner.close();
  await nc.close();
  process.disconnect();
}

function startConsumer(servers: string, durable: string): { child: ChildProcess; ready: Promise<void>; done: Promise<void> } {
  const child = fork(fileURLToPath(import.meta.url), ['--consumer', servers, durable, String(EVENTS)], { stdio: 'inherit' });
  const message = (want: 'ready' | 'done') =>
    new Promise<void>((resolve, reject) => {
      const onMessage = (m: Record<string, boolean>) => {
        if (m[want]) {
          child.off('message', onMessage);
          resolve();
        }
      };
      child.on('message', onMessage);
      child.once('exit', (code) => reject(new Error(`consumer process exited with ${code}`)));
    });
  return { child, ready: message('ready'), done: message('done') };
}

interface Scenario {
  name: string;
  perAppend: number;
  /** Fill the store before the relay and the clock start. */
  prefill: boolean;
}

/** Runs one scenario on a fresh store, stream and consumer; returns events/s. */
async function runScenario(nc: NatsConnection, jsm: JetStreamManager, servers: string, dir: string, s: Scenario): Promise<number> {
  await jsm.streams.purge('GPUNET_EVENTS');
  const durable = s.name.replace(/\W/g, '_');
  await provision(jsm, { consumers: [{ stream: 'GPUNET_EVENTS', durable, ackWait: '30s', maxAckPending: 4096 }] }, { logger });
  const store = new SqliteEventStore({ path: join(dir, `${durable}.db`) });
  const append = async (yieldBetween: boolean) => {
    for (let round = 0, n = 0; n < EVENTS; round++) {
      for (let j = 0; j < JOBS && n < EVENTS; j++, n += s.perAppend) {
        await store.appendToStream(`job-${j}`, jobEvents(j, round, s.perAppend));
        // A service appends as its requests arrive, turning the event loop in between; without this
        // the synchronous SQLite appends would starve the relay until the last one.
        if (yieldBetween) await new Promise((r) => setImmediate(r));
      }
    }
  };
  if (s.prefill) await append(false);
  const consumer = startConsumer(servers, durable);
  await consumer.ready;
  const relay = new OutboxRelay(store, nc, { name: 'bench-relay', logger });

  const started = performance.now();
  await relay.start();
  if (!s.prefill) await append(true);
  const appendedAt = performance.now();
  await consumer.done;
  const elapsed = (performance.now() - started) / 1000;

  await relay.stop();
  const exited = new Promise((r) => consumer.child.once('exit', r));
  consumer.child.send('stop');
  await exited;
  await nc.flush();
  const ci = await jsm.consumers.info('GPUNET_EVENTS', durable);
  if (ci.num_pending !== 0 || ci.num_ack_pending !== 0) throw new Error(`${s.name}: consumer not drained (${ci.num_pending} pending, ${ci.num_ack_pending} unacked)`);
  await store.close();
  const rate = EVENTS / elapsed;
  const appendNote = s.prefill ? 'store filled beforehand' : `appends alone finished at ${Math.round(EVENTS / ((appendedAt - started) / 1000))} events/s`;
  console.log(`${s.name}: ${Math.round(rate)} events/s (${s.perAppend} events per append; ${appendNote})`);
  return rate;
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const dir = await mkdtemp(join(tmpdir(), 'gpunet-bus-bench-'));
  // No async stack traces: otherwise nats.js builds Error objects (stack capture) for every request.
  // Raw publish and the pipeline share this connection and its options.
  const nc = await connect({ servers: server.url, noAsyncTraces: true });
  try {
    const jsm = await jetstreamManager(nc);
    await provision(
      jsm,
      {
        streams: [
          { name: 'GPUNET_EVENTS', subjects: ['gpunet.evt.>'], duplicateWindow: '2m' },
          { name: 'GPUNET_DLQ', subjects: ['gpunet.dlq.>'] },
          { name: 'RAW', subjects: ['raw.>'] },
        ],
      },
      { serverVersion: nc.info?.version, logger },
    );
    // The raw payload is as large as one relayed event, so both move the same bytes.
    const sample = JSON.stringify({ ...jobEvents(0, 0, 1)[0], streamId: 'job-0', revision: '0', position: '1', recordedAt: new Date().toISOString(), hash: 'f'.repeat(64) });
    const js = jetstream(nc);
    await rawPublish(js, 2_000, sample); // warm-up
    const raw = await rawPublish(js, EVENTS, sample);
    console.log(`${EVENTS} events per scenario over ${JOBS} jobs; payload ${sample.length} bytes; nats-server ${nc.info?.version}`);
    console.log(`raw JetStream async publish: ${Math.round(raw)} msg/s`);

    const scenarios: Scenario[] = [
      { name: 'bus.pipeline', perAppend: 100, prefill: false },
      { name: 'bus.pipeline.append10', perAppend: 10, prefill: false },
      { name: 'bus.relay_consumer', perAppend: 100, prefill: true },
    ];
    const lines: string[] = [];
    for (const s of scenarios) {
      const rate = await runScenario(nc, jsm, server.url, dir, s);
      lines.push(JSON.stringify({ bench: s.name, value: Math.round(rate), unit: 'events/s', raw: Math.round(raw), ratio: Number((rate / raw).toFixed(3)) }));
    }
    console.log('target: bus.pipeline ratio ≥ 0.3');
    for (const l of lines) console.log(l);
  } finally {
    await nc.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--consumer') await consumerProcess(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
else await main();
