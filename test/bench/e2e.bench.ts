/**
 * End-to-end throughput of a whole local network: K trivial jobs (`true`) submitted over HTTP,
 * timed from the first submit until the last job is billed and released (its `UsageRecorded`
 * and its `ComputeReleased` are in the store), beside raw JetStream publish on the same
 * nats-server in the same run.
 *
 *   npm run bench:e2e -- [--jobs 200] [--concurrency 32] [--agents 2] [--gpus 8] [--log-level info] [--spawns K] [--postgres]
 *                        [--cluster [--cluster-intakes 1,2,3] [--cluster-agents 2,4,8]]
 *                        [--rate N] [--busy K] [--idle-seconds S] [--overload-only]
 *
 * The network is `gpunet up` on a temporary directory (see test/support/network.ts): nats-server,
 * the five services and the agents as separate processes, SQLite store (with `--postgres`: a
 * fresh database on the PostgreSQL of GPUNET_TEST_PG_URL, dropped afterwards). Besides the figures it
 * prints where the time goes: each stage's latency from the store's `recordedAt` stamps, and the
 * CPU per job of each process and in total (on a 2-core machine the busiest process is the
 * limit): its own (utime+stime) and that of the children it waited for (cutime+cstime from
 * /proc, which is where an agent's job processes and their confinement chain land), plus what
 * each burns per second when idle. With `--postgres` a row adds every postgres process of the
 * machine (machine-wide, so other databases' work is in it too).
 *
 * Beside them, the floors, measured in the same run after the jobs with the network idle
 * (test/bench/floors.ts): the confinement chain the agents use for this script job, spawned K
 * times (default min(jobs, 100)) and waited for, with nothing else; the agent's run engine
 * (`runProcess` with a run directory and job user per run, no bus, no store) K times; the
 * nats-server's CPU per message of the raw publish, times the messages the run published per
 * job; and the run's own events appended again to a fresh store of the same kind, one per
 * append and in the batches the services made, times the events per job. Kernel work outside
 * any process (tearing a network namespace down) is in neither side. The bench's own polling of
 * consumers and the store costs the nats-server a little during the run.
 *
 * With `--cluster`, the same jobs then run on separate hosts (test/bench/cluster.ts: network
 * namespaces, a 3-node NATS cluster, PostgreSQL on a control host, one agent per GPU host with the
 * same GPUs, the single writers' standbys), and the two are printed side by side, with
 * `e2e.cluster.*` JSON lines. One fresh network runs per configuration: each intake count of
 * `--cluster-intakes` (replicas on c1, c2, c3, the producer spreading submits over them) with
 * `--agents` GPU hosts, then each GPU host count of `--cluster-agents` with one intake; each gets
 * `e2e.cluster.i<intakes>.a<agents>.{jobs,submit_p50,submit_p99}`. For the first configuration it
 * prints where the time goes beside the single host: each stage's p50/p99 and the CPU per job of
 * every process (three nats-servers, the standbys, every postgres process of the machine).
 *
 * With `--rate N` and/or `--busy K` it then measures work per job under a backlog on the same
 * network (test/bench/overload.ts): each process's idle CPU per second over `--idle-seconds`; the
 * same number of jobs unloaded (at most one per GPU slot unfinished, so no queue forms); and again
 * offered open loop at N jobs/s whatever the completions (without `--rate`: `--concurrency` submits
 * in flight), with K busy-loop processes taking cores meanwhile. It prints the CPU per completed
 * job of each process in both, their ratio, the consumers' redeliveries and placement's passes
 * per job. `--overload-only` skips the closed-loop run and the floors.
 *
 * Ends with one JSON line per figure:
 *   {"bench":"e2e.jobs","value":N,"unit":"jobs/s","raw":R,"ratio":X}
 *   {"bench":"e2e.submit_p50","value":N,"unit":"ms"}   {"bench":"e2e.submit_p99",...}
 *   {"bench":"e2e.cpu_per_job.<process>","value":ms,"unit":"ms","own":…,"children":…,"idle_ms_per_s":…}
 *     (nats, agents and total also with "raw": their floor per job, and "ratio")
 *   {"bench":"e2e.floor.spawn","value":ms,"unit":"ms","own":…,"children":…,"per_s":…,"count":K}   e2e.floor.run_engine alike
 *   {"bench":"e2e.floor.jetstream_publish","value":ms,"unit":"ms/msg","msgs_per_s":…,"msgs_per_job":…}
 *   {"bench":"e2e.floor.store_append.batch1","value":ms,"unit":"ms/event","events_per_s":…}   .observed (with "batch")
 *   {"bench":"e2e.floor.store_per_job","value":ms,"unit":"ms","events_per_job":…}
 *   with --rate/--busy: {"bench":"e2e.overload.cpu_per_job","value":ms,"unit":"ms","raw":<unloaded ms, same run>,"ratio":…}
 *     and per process e2e.overload.cpu_per_job.<process> (with "idle_ms_per_s"), e2e.overload.jobs,
 *     e2e.overload.redeliveries, e2e.overload.placement_passes_per_job (each with "raw": unloaded)
 */
import { openEventStore, type RecordedEvent } from '#event-store';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { TestNetwork } from '../support/network.js';
import { createTestDatabase } from '../support/postgres.js';
import { until } from '../support/poll.js';
import { clusterRun, percentile, stageLatencies, type ClusterFigures } from './cluster.js';
import { cpuDelta, cpuOfCommand, processCpu, type ProcessCpu } from './cpu.js';
import { idleCpu, reportOverload, runPhase } from './overload.js';
import { floorTotalMs, observedAppends, spawnFloors, storeAppendFloor, type StoreFloor } from './floors.js';
import { positive } from './args.js';

/** A comma-separated list of whole numbers in [min, max], e.g. `1,2,3`. */
function counts(min: number, max: number) {
  return (v: string): number[] => {
    const list = v.split(',').map((x) => x.trim());
    if (list.some((x) => !/^\d+$/.test(x) || Number(x) < min || Number(x) > max)) throw new InvalidArgumentError(`a comma-separated list of whole numbers from ${min} to ${max}, e.g. ${min},${Math.min(max, min + 1)}`);
    return [...new Set(list.map(Number))];
  };
}


const opts = new Command('e2e.bench')
  .option('--jobs <k>', 'jobs to submit', positive, 200)
  .option('--concurrency <n>', 'submits in flight at once', positive, 32)
  .option('--agents <n>', 'execution agents', positive, 2)
  .option('--gpus <n>', 'GPU slots per agent', positive, 8)
  .option('--log-level <level>', 'log level of the services', 'info')
  .option('--raw <n>', 'messages for the raw JetStream publish figure', positive, 20_000)
  .option('--spawns <k>', 'spawns of the confinement chain, and runs of the run engine, for the floors; default --jobs, at most 100', positive)
  .option('--postgres', 'event store on a fresh PostgreSQL database (GPUNET_TEST_PG_URL) instead of SQLite')
  .option('--cluster', 'then the same jobs on separate hosts (network namespaces, 3-node NATS cluster, PostgreSQL): side by side')
  .option('--cluster-intakes <list>', 'with --cluster: intake replicas to run, one network each (1–3, one per control host), e.g. 1,2,3', counts(1, 3), [1])
  .option('--cluster-agents <list>', 'with --cluster: GPU hosts to run with one intake, one network each, e.g. 2,4,8 (default: --agents)', counts(1, 64))
  .option('--rate <n>', 'then: the same jobs offered open loop at n jobs/s whatever the completions, beside an unloaded run of them (CPU per job under a backlog)', positive)
  .option('--busy <k>', 'then: k busy-loop processes taking cores while the jobs are offered (with or without --rate), beside an unloaded run', (v: string) => (v === '0' ? 0 : positive(v)), 0)
  .option('--idle-seconds <s>', 'with --rate/--busy: seconds of no jobs to measure each process\'s idle CPU', positive, 10)
  .option('--overload-only', 'with --rate/--busy: skip the closed-loop run and the floors')
  .parse()
  .opts<{
    jobs: number;
    concurrency: number;
    agents: number;
    gpus: number;
    logLevel: string;
    raw: number;
    spawns?: number;
    postgres?: boolean;
    cluster?: boolean;
    clusterIntakes: number[];
    clusterAgents?: number[];
    rate?: number;
    busy: number;
    idleSeconds: number;
    overloadOnly?: boolean;
  }>();

/** Whether to measure work per job under a backlog (`--rate`, `--busy`). */
const overload = opts.rate !== undefined || opts.busy > 0;
if (opts.overloadOnly && !overload) throw new InvalidArgumentError('--overload-only needs --rate or --busy');
if (opts.overloadOnly && opts.cluster) throw new InvalidArgumentError('--overload-only runs no single-host figures for --cluster to compare with');

/** Every figure's JSON line, printed at the very end. */
const jsonLines: string[] = [];

/** The trivial job every run submits. */
const SPEC = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } };

/**
 * Raw limit: async JetStream publishes to 1,000 subjects of a file stream, 1,000 PubAcks in
 * flight. Also the nats-server's CPU per message meanwhile (own; it has no children).
 */
async function rawPublish(net: TestNetwork, count: number, payload: string): Promise<{ rate: number; natsCpuMsPerMsg: number }> {
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
  const before = processCpu(net.pid('nats'));
  const rate = await run(count);
  const used = cpuDelta(before, processCpu(net.pid('nats')));
  await jsm.streams.delete('BENCH_RAW');
  return { rate, natsCpuMsPerMsg: (used.ownMs + used.childrenMs) / count };
}

/** The last sequence of every stream: their differences count the messages published meanwhile. */
async function streamSequences(jsm: JetStreamManager): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  for await (const info of jsm.streams.list()) seqs.set(info.config.name, info.state.last_seq);
  return seqs;
}

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
 * How long each producer's outbox relay took to publish its events: the time each event reached
 * a subscriber on the bus minus the store's `recordedAt` of the event, by producer (same machine
 * clock). A plain subscription taken before the run: GPUNET_EVENTS keeps an event only until its
 * consumers acknowledged it (decision 0038), so the stream cannot be read back afterwards.
 */
async function watchRelayLag(net: TestNetwork): Promise<{ stop(): Promise<Map<string, number[]>> }> {
  const nc = await net.nats();
  const lags = new Map<string, number[]>();
  const sub = nc.subscribe('gpunet.evt.>', {
    callback: (err, m) => {
      if (err) return;
      const e = m.json<{ recordedAt: string; metadata: { producer: string } }>();
      const list = lags.get(e.metadata.producer) ?? [];
      list.push(Date.now() - Date.parse(e.recordedAt));
      lags.set(e.metadata.producer, list);
    },
  });
  await nc.flush();
  return {
    async stop() {
      await nc.flush();
      sub.unsubscribe();
      return lags;
    },
  };
}

/** The single-host run's headline figures, for the side-by-side table of `--cluster`. */
interface Headline {
  jobsPerSecond: number;
  p50: number;
  p99: number;
  store: string;
  stages: Map<string, number[]>;
  /** CPU-ms per job, by process (agents summed as `agents`) and `total`. */
  cpuPerJob: Map<string, number>;
}

/**
 * Work per job under a backlog (`--rate`, `--busy`): each process's idle CPU, then the jobs with
 * one per GPU slot at most unfinished (no queue anywhere), then the same number offered at `--rate`
 * (or `--concurrency` submits in flight) with `--busy` busy loops, on this network.
 */
async function overloadRun(net: TestNetwork, client: ReturnType<TestNetwork['client']>): Promise<void> {
  const slots = opts.agents * opts.gpus;
  console.log('');
  console.log(`work per job under a backlog: idle ${opts.idleSeconds} s, then ${opts.jobs} jobs unloaded (≤ ${slots} unfinished), then ${opts.jobs} jobs ${opts.rate !== undefined ? `offered at ${opts.rate}/s` : `with ${opts.concurrency} submits in flight`}${opts.busy > 0 ? ` beside ${opts.busy} busy loop${opts.busy > 1 ? 's' : ''}` : ''}…`);
  const idle = await idleCpu(net, opts.idleSeconds);
  const reference = await runPhase(net, client, SPEC, { label: 'unloaded', jobs: opts.jobs, offer: { kind: 'slots', inFlight: slots }, busy: 0 });
  const label = [opts.rate !== undefined ? `rate ${opts.rate}` : undefined, opts.busy > 0 ? `busy ${opts.busy}` : undefined].filter(Boolean).join(', ');
  const overloaded = await runPhase(net, client, SPEC, {
    label,
    jobs: opts.jobs,
    offer: opts.rate !== undefined ? { kind: 'rate', perSecond: opts.rate } : { kind: 'submits', concurrency: opts.concurrency },
    busy: opts.busy,
  });
  reportOverload(net, idle, opts.idleSeconds, reference, overloaded, jsonLines);
}

async function main(): Promise<Headline | undefined> {
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
    const { rate: raw, natsCpuMsPerMsg } = await rawPublish(net, opts.raw, sampleEvent);
    console.log(`raw JetStream async publish on the same server: ${Math.round(raw)} msg/s (${sampleEvent.length}-byte payload), nats-server ${(natsCpuMsPerMsg * 1000).toFixed(1)} µs CPU per message`);

    const client = net.client();
    const spec = SPEC;
    // Warm-up: one job through every service (JIT, connections, prepared statements) before the clock.
    const warm = await client.submit(spec);
    await client.waitFor(warm.jobId, { timeoutMs: 30_000 });
    if (opts.overloadOnly) {
      await overloadRun(net, client);
      return undefined;
    }

    // Which consumer falls behind: the largest backlog (not yet delivered + in hand) each durable reaches.
    const durables = ['storage', 'storage-released', 'placement', 'ledger', ...net.nodeIds.map((n) => `execution-${n}`)];
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
    const relayWatch = await watchRelayLag(net);

    const jsm = await jetstreamManager(await net.nats());
    const seqBefore = await streamSequences(jsm);
    // The database server is no process of the network: with PostgreSQL, every postgres process of the machine.
    const cpuReadings = (): Map<string, ProcessCpu | undefined> =>
      new Map([...net.processes.map((p) => [p.name, processCpu(p.pid)] as const), ...(database ? [['postgres*', cpuOfCommand('postgres')] as const] : [])]);
    const cpuBefore = cpuReadings();
    const benchBefore = process.cpuUsage();
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
    const cpuAfter = cpuReadings();
    const bench = process.cpuUsage(benchBefore);
    const seqAfter = await streamSequences(jsm);
    sampling = false;
    await sampler;
    const relay = await relayWatch.stop();
    // The end is the store's own commit time of the last of those events, not when the poll noticed.
    const end = Math.max(...events.filter((e) => wanted.has(e.metadata.jobId ?? '')).map((e) => Date.parse(e.recordedAt)));
    const elapsedMs = end - t0;
    const jobsPerSecond = k / (elapsedMs / 1000);

    // Where the time goes, per stage, from every event of the measured jobs.
    const all = (await net.events()).filter((e) => wanted.has(e.metadata.jobId ?? ''));
    const stages = stageLatencies(all);
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
    for (const [label, d] of stages) {
      console.log(`  ${label.padEnd(40).slice(0, 40)} ${String(percentile(d, 50)).padStart(7)}  ${String(percentile(d, 99)).padStart(7)}  ${String(d.at(-1) ?? NaN).padStart(7)}`);
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
    // Where the CPU goes, per job; the floors are measured below, on the network left idle.
    const cpu = [...cpuBefore.keys()].map((name) => ({ name, ...cpuDelta(cpuBefore.get(name), cpuAfter.get(name)) }));
    const total = (c: ProcessCpu) => c.ownMs + c.childrenMs;
    const sum = (list: readonly ProcessCpu[]): ProcessCpu => ({ ownMs: list.reduce((n, c) => n + c.ownMs, 0), childrenMs: list.reduce((n, c) => n + c.childrenMs, 0) });
    const agents = sum(cpu.filter((c) => net.nodeIds.includes(c.name)));
    const everything = sum(cpu);
    const messagesPerJob = [...seqAfter].reduce((n, [name, last]) => n + last - (seqBefore.get(name) ?? 0), 0) / k;

    const spawns = opts.spawns ?? Math.min(k, 100);
    console.log('');
    console.log(`floors: measured now, the network left idle (${spawns} spawns and runs)…`);
    // What each process burns while idle (timers, polling, heartbeats), read across the floors.
    const idleBefore = cpuReadings();
    const idleStart = performance.now();
    const agentProcess = net.processes.find((p) => p.role === 'agent')!;
    const spawn = await spawnFloors({ ...process.env, ...agentProcess.env }, join(net.dataDir, 'nodes', 'floor'), spawns);
    const appends = observedAppends(all);
    const floorDatabase = database ? await createTestDatabase('gpunet_bench_floor') : undefined;
    const sqliteDir = database ? undefined : await mkdtemp(join(tmpdir(), 'gpunet-bench-floor-'));
    let stores = 0;
    const chainKey = process.env.GPUNET_CHAIN_KEY;
    const openFloorStore = () => openEventStore(floorDatabase?.url ?? `sqlite:${join(sqliteDir!, `store-${stores++}.db`)}`, chainKey ? { chainKey } : {});
    const serverCpu = database ? () => total(cpuOfCommand('postgres')) : undefined;
    let store: { batch1: StoreFloor; observed: StoreFloor };
    try {
      store = { batch1: await storeAppendFloor(openFloorStore, appends, true, serverCpu), observed: await storeAppendFloor(openFloorStore, appends, false, serverCpu) };
    } finally {
      await floorDatabase?.drop();
      if (sqliteDir) await rm(sqliteDir, { recursive: true, force: true });
    }
    const idleSeconds = (performance.now() - idleStart) / 1000;
    const idleAfter = cpuReadings();
    const idlePerSecond = (name: string) => total(cpuDelta(idleBefore.get(name), idleAfter.get(name))) / idleSeconds;
    const floors = {
      agent: floorTotalMs(spawn.spawn),
      nats: messagesPerJob * natsCpuMsPerMsg,
      store: perJob * store.observed.cpuMsPerEvent,
    };
    const floorSum = floors.agent + floors.nats + floors.store;

    const ms = (v: number, width = 8) => v.toFixed(1).padStart(width);
    const times = (v: number, floor: number | undefined) => (floor === undefined ? '' : `${ms(floor)}  ${(v / floor).toFixed(1).padStart(6)}×`);
    console.log('');
    console.log(`CPU per job (${k} jobs in ${(elapsedMs / 1000).toFixed(2)} s; 2 cores = ${((2 * elapsedMs) / 1000).toFixed(1)} CPU-s available), from /proc:`);
    console.log('  own = the process (utime+stime); children = what it waited for (cutime+cstime: an agent\'s job processes and their confinement chain)');
    console.log('  idle = ms of CPU per second the process used afterwards, idle, while the floors ran (timers, polling, heartbeats)');
    console.log(`  ${'process'.padEnd(14)} ${'own'.padStart(8)} ${'children'.padStart(8)} ${'total ms'.padStart(8)}  ${'CPU-s'.padStart(6)}  ${'idle/s'.padStart(6)}  ${'floor'.padStart(8)}  ${'ratio'.padStart(7)}`);
    const row = (name: string, c: ProcessCpu, idle: number, floor?: number) =>
      console.log(`  ${name.padEnd(14)} ${ms(c.ownMs / k)} ${ms(c.childrenMs / k)} ${ms(total(c) / k)}  ${(total(c) / 1000).toFixed(2).padStart(6)}  ${idle.toFixed(1).padStart(6)}  ${times(total(c) / k, floor)}`);
    for (const c of cpu) row(c.name === 'postgres*' ? 'postgres (all)' : c.name, c, idlePerSecond(c.name), c.name === 'nats' ? floors.nats : undefined);
    const idleOf = (names: readonly string[]) => names.reduce((n, name) => n + idlePerSecond(name), 0);
    row('agents', agents, idleOf(net.nodeIds), floors.agent);
    row('total', everything, idleOf(cpu.map((c) => c.name)), floorSum);
    console.log(`  (this bench process meanwhile, submits and polling: ${((bench.user + bench.system) / 1e6).toFixed(2)} CPU-s; not in the total)`);
    if (database) console.log('  postgres (all): every postgres process on this machine, other databases\' work included');
    console.log('');
    console.log('floors, measured in this run after the jobs (ms of CPU):');
    console.log(`  confinement chain         ${spawn.chain}`);
    console.log(`                            ${spawn.confinement}`);
    console.log(`    ${String(spawn.spawn.count).padStart(4)} spawns of \`true\`      ${ms(floorTotalMs(spawn.spawn), 6)} per spawn (spawner ${spawn.spawn.ownMs.toFixed(1)} + chain ${spawn.spawn.childrenMs.toFixed(1)}), ${spawn.spawn.perSecond.toFixed(0)} spawns/s   → agent floor per job`);
    console.log(`    ${String(spawn.runEngine.count).padStart(4)} runs, run engine     ${ms(floorTotalMs(spawn.runEngine), 6)} per run (agent ${spawn.runEngine.ownMs.toFixed(1)} + chain ${spawn.runEngine.childrenMs.toFixed(1)}), ${spawn.runEngine.perSecond.toFixed(0)} runs/s   (runProcess, run dir and job user per run; no bus, no store)`);
    console.log(`  raw JetStream publish     ${Math.round(raw)} msg/s, nats-server ${natsCpuMsPerMsg.toFixed(3)} per message × ${messagesPerJob.toFixed(1)} messages per job (stream sequences) = ${floors.nats.toFixed(1)} per job`);
    console.log(`  raw store append          ${storeName}, fresh ${database ? 'database' : 'file'}, this run's ${perJob.toFixed(1)} events per job in ${(appends.length / k).toFixed(1)} appends (mean batch ${(all.length / appends.length).toFixed(2)})${database ? ', client + postgres CPU' : ''}`);
    for (const [label, f] of [['one event per append', store.batch1], ['batches as observed', store.observed]] as const) {
      console.log(`    ${label.padEnd(24)} ${f.eventsPerSecond.toFixed(0).padStart(6)} events/s, ${f.cpuMsPerEvent.toFixed(3)} per event = ${(perJob * f.cpuMsPerEvent).toFixed(1)} per job`);
    }
    console.log(`  floors per job            agent ${floors.agent.toFixed(1)} + nats ${floors.nats.toFixed(1)} + store ${floors.store.toFixed(1)} = ${floorSum.toFixed(1)}; measured ${(total(everything) / k).toFixed(1)} = ${(total(everything) / k / floorSum).toFixed(1)}× the floors`);
    console.log(`target: ≥ 100 jobs/s — ${jobsPerSecond >= 100 ? 'met' : 'NOT met'}`);
    jsonLines.push(JSON.stringify({ bench: 'e2e.jobs', value: Number(jobsPerSecond.toFixed(1)), unit: 'jobs/s', raw: Math.round(raw), ratio: Number((jobsPerSecond / raw).toFixed(4)) }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.submit_p50', value: Number(p50.toFixed(1)), unit: 'ms' }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.submit_p99', value: Number(p99.toFixed(1)), unit: 'ms' }));
    const r = (v: number, digits = 2) => Number(v.toFixed(digits));
    const perJobLine = (name: string, c: ProcessCpu, idle: number, floor?: number) =>
      JSON.stringify({ bench: `e2e.cpu_per_job.${name}`, value: r(total(c) / k), unit: 'ms', own: r(c.ownMs / k), children: r(c.childrenMs / k), idle_ms_per_s: r(idle, 1), ...(floor !== undefined && { raw: r(floor), ratio: r(total(c) / k / floor) }) });
    for (const c of cpu) jsonLines.push(perJobLine(c.name === 'postgres*' ? 'postgres' : c.name, c, idlePerSecond(c.name), c.name === 'nats' ? floors.nats : undefined));
    jsonLines.push(perJobLine('agents', agents, idleOf(net.nodeIds), floors.agent));
    jsonLines.push(perJobLine('total', everything, idleOf(cpu.map((c) => c.name)), floorSum));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.spawn', value: r(floorTotalMs(spawn.spawn)), unit: 'ms', own: r(spawn.spawn.ownMs), children: r(spawn.spawn.childrenMs), per_s: r(spawn.spawn.perSecond, 1), count: spawn.spawn.count }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.run_engine', value: r(floorTotalMs(spawn.runEngine)), unit: 'ms', own: r(spawn.runEngine.ownMs), children: r(spawn.runEngine.childrenMs), per_s: r(spawn.runEngine.perSecond, 1), count: spawn.runEngine.count }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.jetstream_publish', value: r(natsCpuMsPerMsg, 4), unit: 'ms/msg', msgs_per_s: Math.round(raw), msgs_per_job: r(messagesPerJob, 1) }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.store_append.batch1', value: r(store.batch1.cpuMsPerEvent, 4), unit: 'ms/event', events_per_s: Math.round(store.batch1.eventsPerSecond) }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.store_append.observed', value: r(store.observed.cpuMsPerEvent, 4), unit: 'ms/event', events_per_s: Math.round(store.observed.eventsPerSecond), batch: r(all.length / appends.length) }));
    jsonLines.push(JSON.stringify({ bench: 'e2e.floor.store_per_job', value: r(floors.store), unit: 'ms', events_per_job: r(perJob, 1) }));
    const cpuPerJob = new Map<string, number>([
      ...cpu.filter((c) => !net.nodeIds.includes(c.name)).map((c) => [c.name === 'postgres*' ? 'postgres (all)' : c.name, total(c) / k] as const),
      ['agents', total(agents) / k],
      ['total', total(everything) / k],
    ]);
    if (overload) await overloadRun(net, client);
    return { jobsPerSecond, p50, p99, store: storeName, stages, cpuPerJob };
  } catch (err) {
    net.failed = true;
    process.stderr.write(`\n${net.logTails(5)}\n`);
    throw err;
  } finally {
    await net.stop();
    await database?.drop();
  }
}

const single = await main();
if (opts.cluster && single) await clusterSweep(single);
// The figures' JSON lines last, one per figure, after every table.
console.log('');
for (const line of jsonLines) console.log(line);

/**
 * The same jobs on separate hosts, one fresh network per configuration: each intake count of
 * `--cluster-intakes` with `--agents` GPU hosts, then each GPU host count of `--cluster-agents`
 * with one intake. Side by side with the single-host run: throughput, submit latency, CPU per job
 * by process, and per stage where the time goes.
 */
async function clusterSweep(single: Headline): Promise<void> {
  const r = (v: number, digits = 2) => Number(v.toFixed(digits));
  const configs: Array<{ intakes: number; agents: number }> = [
    ...opts.clusterIntakes.map((intakes) => ({ intakes, agents: opts.agents })),
    ...(opts.clusterAgents ?? []).filter((a) => !(opts.clusterIntakes.includes(1) && a === opts.agents)).map((agents) => ({ intakes: 1, agents })),
  ];
  const runs: ClusterFigures[] = [];
  for (const c of configs) {
    console.log('');
    console.log(`the same ${opts.jobs} jobs on separate hosts: 3 control hosts (NATS cluster R3, PostgreSQL on c1, ${c.intakes} intake${c.intakes > 1 ? 's' : ''}, standbys), ${c.agents} GPU hosts × ${opts.gpus} GPUs…`);
    const figures = await clusterRun({ jobs: opts.jobs, concurrency: opts.concurrency, agents: c.agents, gpus: opts.gpus, intakes: c.intakes, spec: SPEC });
    console.log(`  ${figures.jobsPerSecond.toFixed(1)} jobs/s, submit p50 ${figures.p50.toFixed(1)} ms, p99 ${figures.p99.toFixed(1)} ms`);
    runs.push(figures);
  }
  const total = (c: ProcessCpu) => c.ownMs + c.childrenMs;
  const clusterCpuPerJob = (f: ClusterFigures): number => [...f.cpu.values()].reduce((n, c) => n + total(c), 0) / opts.jobs;

  console.log('');
  console.log(`${opts.jobs} jobs, ${opts.concurrency} submits in flight, ${opts.gpus} GPUs per host`);
  console.log(`  ${''.padEnd(44)} ${'jobs/s'.padStart(8)} ${'submit p50'.padStart(10)} ${'submit p99'.padStart(10)} ${'CPU-ms/job'.padStart(10)}`);
  const row = (name: string, jobs: number, p50: number, p99: number, cpu: number) =>
    console.log(`  ${name.padEnd(44)} ${jobs.toFixed(1).padStart(8)} ${p50.toFixed(1).padStart(10)} ${p99.toFixed(1).padStart(10)} ${cpu.toFixed(1).padStart(10)}`);
  row(`one host (${single.store}, ${opts.agents} agents)`, single.jobsPerSecond, single.p50, single.p99, single.cpuPerJob.get('total') ?? NaN);
  for (const f of runs) row(`separate hosts, ${f.intakes} intake${f.intakes > 1 ? 's' : ''}, ${f.agents} GPU hosts`, f.jobsPerSecond, f.p50, f.p99, clusterCpuPerJob(f));

  // Where the time goes: the first configuration beside the single host, per stage and per process.
  const base = runs[0]!;
  console.log('');
  console.log(`where the time goes, one host vs separate hosts (${base.intakes} intake, ${base.agents} GPU hosts): stage p50 / p99 (ms)`);
  for (const [label, d] of single.stages) {
    const c = base.stages.get(label) ?? [];
    console.log(`  ${label.padEnd(40).slice(0, 40)} ${`${percentile(d, 50)} / ${percentile(d, 99)}`.padStart(12)}   ${`${percentile(c, 50)} / ${percentile(c, 99)}`.padStart(12)}`);
  }
  console.log('');
  console.log(`CPU-ms per job by process, separate hosts (${base.intakes} intake, ${base.agents} GPU hosts; the machine runs every host)`);
  const byProcess = [...base.cpu].map(([name, c]) => [name, total(c) / opts.jobs] as const).sort((a, b) => b[1] - a[1]);
  for (const [name, ms] of byProcess) console.log(`  ${name.padEnd(22)} ${ms.toFixed(1).padStart(8)}`);
  console.log(`  ${'total'.padEnd(22)} ${clusterCpuPerJob(base).toFixed(1).padStart(8)}   (one host: ${(single.cpuPerJob.get('total') ?? NaN).toFixed(1)})`);

  jsonLines.push(JSON.stringify({ bench: 'e2e.cluster.jobs', value: r(base.jobsPerSecond, 1), unit: 'jobs/s', single_host: r(single.jobsPerSecond, 1), ratio: r(base.jobsPerSecond / single.jobsPerSecond) }));
  jsonLines.push(JSON.stringify({ bench: 'e2e.cluster.submit_p50', value: r(base.p50, 1), unit: 'ms', single_host: r(single.p50, 1) }));
  jsonLines.push(JSON.stringify({ bench: 'e2e.cluster.submit_p99', value: r(base.p99, 1), unit: 'ms', single_host: r(single.p99, 1) }));
  jsonLines.push(JSON.stringify({ bench: 'e2e.cluster.cpu_per_job', value: r(clusterCpuPerJob(base), 1), unit: 'ms', single_host: r(single.cpuPerJob.get('total') ?? NaN, 1) }));
  for (const f of runs) {
    const name = `e2e.cluster.i${f.intakes}.a${f.agents}`;
    jsonLines.push(JSON.stringify({ bench: `${name}.jobs`, value: r(f.jobsPerSecond, 1), unit: 'jobs/s', single_host: r(single.jobsPerSecond, 1), ratio: r(f.jobsPerSecond / single.jobsPerSecond) }));
    jsonLines.push(JSON.stringify({ bench: `${name}.submit_p50`, value: r(f.p50, 1), unit: 'ms' }));
    jsonLines.push(JSON.stringify({ bench: `${name}.submit_p99`, value: r(f.p99, 1), unit: 'ms' }));
  }
}
