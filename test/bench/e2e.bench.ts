/**
 * End-to-end throughput of a whole local network: K trivial jobs (`true`) submitted over HTTP,
 * timed from the first submit until the last job is billed and released (its `UsageRecorded`
 * and its `ComputeReleased` are in the store), beside raw JetStream publish on the same
 * nats-server in the same run.
 *
 *   npm run bench:e2e -- [--jobs 200] [--concurrency 32] [--agents 2] [--gpus 8] [--log-level info] [--postgres]
 *
 * The network is `gpunet up` on a temporary directory (see test/support/network.ts): nats-server,
 * the five services and the agents as separate processes, SQLite store (with `--postgres`: a
 * fresh database on the PostgreSQL of GPUNET_TEST_PG_URL, dropped afterwards). Besides the figures it
 * prints where the time goes: each stage's latency from the store's `recordedAt` stamps, and the
 * CPU each process used during the run (on a 2-core machine the busiest process is the limit).
 * Ends with one JSON line per figure:
 *   {"bench":"e2e.jobs","value":N,"unit":"jobs/s","raw":R,"ratio":X}
 *   {"bench":"e2e.submit_p50","value":N,"unit":"ms"}   {"bench":"e2e.submit_p99",...}
 */
import type { RecordedEvent } from '#event-store';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { TestNetwork } from '../support/network.js';
import { createTestDatabase } from '../support/postgres.js';
import { until } from '../support/poll.js';

const positive = (v: string) => {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1) throw new InvalidArgumentError('a whole number ≥ 1');
  return n;
};

const opts = new Command('e2e.bench')
  .option('--jobs <k>', 'jobs to submit', positive, 200)
  .option('--concurrency <n>', 'submits in flight at once', positive, 32)
  .option('--agents <n>', 'execution agents', positive, 2)
  .option('--gpus <n>', 'GPU slots per agent', positive, 8)
  .option('--log-level <level>', 'log level of the services', 'info')
  .option('--raw <n>', 'messages for the raw JetStream publish figure', positive, 20_000)
  .option('--postgres', 'event store on a fresh PostgreSQL database (GPUNET_TEST_PG_URL) instead of SQLite')
  .parse()
  .opts<{ jobs: number; concurrency: number; agents: number; gpus: number; logLevel: string; raw: number; postgres?: boolean }>();

/** Percentile by nearest rank over sorted values. */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** utime + stime of a process in ms, from /proc (undefined once it is gone). */
function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (1-based) are utime and stime in clock ticks; after the name, 12 and 13 (0-based 11, 12).
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** Raw limit: async JetStream publishes to 1,000 subjects of a file stream, 1,000 PubAcks in flight. */
async function rawPublish(net: TestNetwork, count: number, payload: string): Promise<number> {
  const nc = await net.nats();
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'BENCH_RAW', subjects: ['bench.raw.>'] });
  const js = jetstream(nc);
  const run = async (n: number) => {
    const started = performance.now();
    const inFlight = new Set<Promise<unknown>>();
    for (let i = 0; i < n; i++) {
      const p: Promise<unknown> = js.publish(`bench.raw.${i % 1000}`, payload).then(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= 1000) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    return n / ((performance.now() - started) / 1000);
  };
  await run(2_000); // warm-up
  const rate = await run(count);
  await jsm.streams.delete('BENCH_RAW');
  return rate;
}

/** Stages of a job's life, as consecutive event types; the service that writes the second one is the one measured. */
const STAGES: ReadonlyArray<[string, string, string]> = [
  ['JobSubmitted', 'InputsStaged', 'storage: stage inputs'],
  ['InputsStaged', 'JobPlaced', 'placement: place'],
  ['JobPlaced', 'ComputeHeld', 'agent: hold'],
  ['ComputeHeld', 'JobStarted', 'agent: start process'],
  ['JobStarted', 'JobFinished', 'agent: run `true`'],
  ['JobFinished', 'UsageRecorded', 'ledger: bill'],
  ['JobFinished', 'OutputsStored', 'agent+storage: outputs'],
  ['OutputsStored', 'ComputeReleased', 'agent: release'],
  ['JobSubmitted', 'ComputeReleased', 'whole job'],
];

/** A message the size of one relayed event (a JobFinished as the relay publishes it), for the raw figure. */
function relayedEventSample(): string {
  const jobId = `job_${'f'.repeat(32)}`;
  const at = new Date().toISOString();
  return JSON.stringify({
    streamId: `execution-node-1-attempt-${jobId}-a1`,
    revision: '2',
    position: '1000',
    eventId: 'f'.repeat(36),
    type: 'JobFinished',
    data: { jobId, attemptId: `${jobId}-a1`, nodeId: 'node-1', outcome: 'completed', exitCode: 0, signal: null, finishedAt: at },
    metadata: { correlationId: 'f'.repeat(36), causationId: 'f'.repeat(36), jobId, team: 'local', producer: 'execution', occurredAt: at },
    recordedAt: at,
    hash: 'f'.repeat(64),
  });
}

/**
 * How long each producer's outbox relay took to publish its events: JetStream's own timestamp
 * of each message minus the store's `recordedAt` of the event, by producer (same machine clock).
 */
async function relayLag(net: TestNetwork, fromSeq: number): Promise<Map<string, number[]>> {
  const js = jetstream(await net.nats());
  const consumer = await js.consumers.get('GPUNET_EVENTS', { opt_start_seq: fromSeq });
  const last = (await (await jetstreamManager(await net.nats())).streams.info('GPUNET_EVENTS')).state.last_seq;
  const lags = new Map<string, number[]>();
  if (last < fromSeq) return lags;
  const messages = await consumer.consume();
  for await (const m of messages) {
    const e = m.json<{ recordedAt: string; metadata: { producer: string } }>();
    const lag = m.time.getTime() - Date.parse(e.recordedAt);
    const list = lags.get(e.metadata.producer) ?? [];
    list.push(lag);
    lags.set(e.metadata.producer, list);
    if (m.seq >= last) break;
  }
  await messages.close();
  return lags;
}

async function main(): Promise<void> {
  const k = opts.jobs;
  const database = opts.postgres ? await createTestDatabase('gpunet_bench') : undefined;
  const storeName = database ? 'PostgreSQL' : 'SQLite';
  console.log(`starting a network: ${opts.agents} agents × ${opts.gpus} GPUs, ${storeName} store, services at log level ${opts.logLevel}`);
  let net: TestNetwork;
  try {
    net = await TestNetwork.start({ agents: opts.agents, gpus: opts.gpus, logLevel: opts.logLevel, dirPrefix: 'gpunet-bench-', ...(database ? { postgresUrl: database.url } : {}) });
  } catch (err) {
    await database?.drop();
    throw err;
  }
  try {
    const sampleEvent = relayedEventSample();
    const raw = await rawPublish(net, opts.raw, sampleEvent);
    console.log(`raw JetStream async publish on the same server: ${Math.round(raw)} msg/s (${sampleEvent.length}-byte payload)`);

    const client = net.client();
    const spec = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } };
    // Warm-up: one job through every service (JIT, connections, prepared statements) before the clock.
    const warm = await client.submit(spec);
    await client.waitFor(warm.jobId, { timeoutMs: 30_000 });

    // Which consumer falls behind: the largest backlog (not yet delivered + in hand) each durable reaches.
    const durables = ['storage', 'placement', 'ledger', ...net.nodeIds.map((n) => `execution-${n}`)];
    const maxBacklog = new Map(durables.map((d) => [d, 0]));
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        for (const d of durables) {
          const b = await net.consumerBacklog(d);
          maxBacklog.set(d, Math.max(maxBacklog.get(d)!, b.pending + b.ackPending));
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const firstSeq = (await (await jetstreamManager(await net.nats())).streams.info('GPUNET_EVENTS')).state.last_seq + 1;

    const cpuBefore = new Map(net.processes.map((p) => [p.name, cpuMs(p.pid) ?? 0]));
    const latencies: number[] = [];
    const jobIds: string[] = [];
    const t0 = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < k) {
        next++;
        const s = performance.now();
        const reply = await client.submit(spec);
        latencies.push(performance.now() - s);
        jobIds.push(reply.jobId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(opts.concurrency, k) }, worker));
    const submittedMs = Date.now() - t0;

    const wanted = new Set(jobIds);
    const done = (events: RecordedEvent[], type: string) => new Set(events.filter((e) => e.type === type && wanted.has(e.metadata.jobId ?? '')).map((e) => e.metadata.jobId));
    let events: RecordedEvent[] = [];
    let progress = '';
    await until(
      `${k} jobs to be billed and released`,
      async () => {
        events = await net.events({ types: ['UsageRecorded', 'ComputeReleased'] });
        const billed = done(events, 'UsageRecorded');
        const released = done(events, 'ComputeReleased');
        progress = `${billed.size} billed, ${released.size} released`;
        return billed.size === k && released.size === k;
      },
      { timeoutMs: 600_000, intervalMs: 100, describe: () => progress },
    );
    const cpuAfter = new Map(net.processes.map((p) => [p.name, cpuMs(p.pid) ?? 0]));
    sampling = false;
    await sampler;
    const relay = await relayLag(net, firstSeq);
    // The end is the store's own commit time of the last of those events, not when the poll noticed.
    const end = Math.max(...events.filter((e) => wanted.has(e.metadata.jobId ?? '')).map((e) => Date.parse(e.recordedAt)));
    const elapsedMs = end - t0;
    const jobsPerSecond = k / (elapsedMs / 1000);

    // Where the time goes, per stage, from every event of the measured jobs.
    const all = (await net.events()).filter((e) => wanted.has(e.metadata.jobId ?? ''));
    const at = new Map<string, Map<string, number>>();
    for (const e of all) {
      const m = at.get(e.metadata.jobId!) ?? new Map<string, number>();
      if (!m.has(e.type)) m.set(e.type, Date.parse(e.recordedAt));
      at.set(e.metadata.jobId!, m);
    }
    const perJob = all.length / k;
    const sorted = [...latencies].sort((a, b) => a - b);
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);

    console.log('');
    console.log(`${k} jobs (\`true\`, 1 GPU each), ${opts.concurrency} submits in flight, ${opts.agents * opts.gpus} GPU slots, ${storeName} store, ${perJob.toFixed(1)} events per job`);
    console.log(`  submits done after      ${(submittedMs / 1000).toFixed(2)} s (${Math.round(k / (submittedMs / 1000))} submits/s)`);
    console.log(`  last billed release at  ${(elapsedMs / 1000).toFixed(2)} s`);
    console.log(`  throughput              ${jobsPerSecond.toFixed(1)} jobs/s  (${Math.round(jobsPerSecond * perJob)} events/s stored and relayed)`);
    console.log(`  submit latency          p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms`);
    console.log(`  raw JetStream publish   ${Math.round(raw)} msg/s   ratio jobs/s : raw msg/s = ${(jobsPerSecond / raw).toFixed(4)}`);
    console.log('');
    console.log('stage latency (store recordedAt, ms)        p50      p99      max');
    for (const [from, to, label] of STAGES) {
      const d = [...at.values()].filter((m) => m.has(from) && m.has(to)).map((m) => m.get(to)! - m.get(from)!).sort((a, b) => a - b);
      console.log(`  ${`${label} (${from} → ${to})`.padEnd(40).slice(0, 40)} ${String(percentile(d, 50)).padStart(7)}  ${String(percentile(d, 99)).padStart(7)}  ${String(d.at(-1) ?? NaN).padStart(7)}`);
    }
    console.log('');
    console.log('relay lag (store recordedAt → JetStream, ms)  p50      p99      max');
    for (const [producer, lags] of relay) {
      lags.sort((a, b) => a - b);
      console.log(`  ${producer.padEnd(40)} ${String(percentile(lags, 50)).padStart(7)}  ${String(percentile(lags, 99)).padStart(7)}  ${String(lags.at(-1)).padStart(7)}`);
    }
    console.log('');
    console.log(`largest consumer backlog (messages not yet acknowledged), sampled every 250 ms`);
    for (const [d, n] of maxBacklog) console.log(`  ${d.padEnd(20)} ${String(n).padStart(6)}`);
    console.log('');
    console.log(`CPU during the run (${(elapsedMs / 1000).toFixed(2)} s wall; 2 cores = ${((2 * elapsedMs) / 1000).toFixed(1)} CPU-s available)`);
    for (const p of net.processes) {
      const used = (cpuAfter.get(p.name)! - cpuBefore.get(p.name)!) / 1000;
      console.log(`  ${p.name.padEnd(10)} ${used.toFixed(2).padStart(6)} CPU-s  ${((100 * used) / (elapsedMs / 1000)).toFixed(0).padStart(4)}% of one core`);
    }
    const self = process.cpuUsage();
    console.log(`  (this bench process, whole run: ${((self.user + self.system) / 1e6).toFixed(2)} CPU-s)`);
    console.log(`target: ≥ 100 jobs/s — ${jobsPerSecond >= 100 ? 'met' : 'NOT met'}`);
    console.log(JSON.stringify({ bench: 'e2e.jobs', value: Number(jobsPerSecond.toFixed(1)), unit: 'jobs/s', raw: Math.round(raw), ratio: Number((jobsPerSecond / raw).toFixed(4)) }));
    console.log(JSON.stringify({ bench: 'e2e.submit_p50', value: Number(p50.toFixed(1)), unit: 'ms' }));
    console.log(JSON.stringify({ bench: 'e2e.submit_p99', value: Number(p99.toFixed(1)), unit: 'ms' }));
  } catch (err) {
    net.failed = true;
    process.stderr.write(`\n${net.logTails(5)}\n`);
    throw err;
  } finally {
    await net.stop();
    await database?.drop();
  }
}

await main();
