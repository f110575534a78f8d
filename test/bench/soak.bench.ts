/**
 * Memory over a steady load: a whole local network (`gpunet up`, as bench:e2e starts it) is
 * offered `--rate` trivial jobs per second for `--minutes`, open loop (submits are sent on
 * schedule whether or not earlier ones have finished), and every process's resident memory
 * (VmRSS from /proc) is sampled throughout.
 *
 *   npm run bench:soak -- [--minutes 30] [--rate 50] [--warm-up 5] [--agents 2] [--gpus 8] [--sample-s 30] [--postgres]
 *
 * The figure is each process's growth from the end of the warm-up (its first `--warm-up`
 * minutes: caches, JIT and pools fill there) to the end of the run, each side the median of up
 * to three samples (one reading lands anywhere in a garbage collector's cycle); the target is
 * ≤ 10 % for every process. A network offered more than it completes holds a growing queue, and a growing
 * queue is memory that rightly grows: the bench prints the offered and completed rates and the
 * backlog (submitted, not yet released) at every sample, and says so when the offer is above
 * what the network completes.
 *
 * Beside RSS, each gpunet process's V8 heap is sampled and measured the same way (`/metrics`): the
 * objects in use (`gpunet_nodejs_heap_size_used_bytes`), the pages committed for the heap
 * (`…_heap_size_total_bytes`) and of those the young generation's (`…_heap_space_size_total_bytes`
 * of space `new`: V8 grows its semi-spaces with the allocation rate, up to a cap), and external
 * memory (`gpunet_nodejs_external_memory_bytes`). RSS that grows while the objects in use do not is
 * memory the process's objects do not hold (the allocator's or V8's pages), not state kept per job.
 *
 * Ends with one JSON line per figure:
 *   {"bench":"soak.rss_growth.<process>","value":pct,"unit":"%","start_mib":…,"end_mib":…,"peak_mib":…}
 *   {"bench":"soak.heap_growth.<process>","value":pct,"unit":"%","start_mib":…,"end_mib":…,"committed_start_mib":…,"committed_end_mib":…,"young_start_mib":…,"young_end_mib":…,"external_start_mib":…,"external_end_mib":…}
 *   {"bench":"soak.rss_growth.max","value":pct,"unit":"%","process":…}
 *   {"bench":"soak.jobs_completed","value":n,"unit":"jobs","offered":…,"rate":…}   {"bench":"soak.backlog_end","value":n,"unit":"jobs"}
 *   {"bench":"soak.events_stream_subjects_end","value":n,"unit":"subjects","messages":…}   (what GPUNET_EVENTS still holds)
 */
import type { EventStore } from '#event-store';
import { readFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { Command, InvalidArgumentError } from 'commander';
import { TestNetwork } from '../support/network.js';
import { createTestDatabase } from '../support/postgres.js';
import { scrape } from './metrics.js';
import { openLoop } from './open-loop.js';
import { positive } from './args.js';

const wholeOrZero = (v: string) => {
  const n = Number(v);
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('a whole number ≥ 0');
  return n;
};

const opts = new Command('soak.bench')
  .option('--minutes <m>', 'how long the load runs', positive, 30)
  .option('--rate <n>', 'jobs offered per second (open loop)', positive, 50)
  .option('--warm-up <m>', 'minutes before the baseline sample; growth is measured from there', wholeOrZero, 5)
  .option('--agents <n>', 'execution agents', positive, 2)
  .option('--gpus <n>', 'GPU slots per agent', positive, 8)
  .option('--sample-s <s>', 'seconds between memory samples', positive, 30)
  .option('--max-in-flight <n>', 'submits awaiting their answer at once; past it the offer is cut and counted', positive, 512)
  .option('--log-level <level>', 'log level of the services', 'warn')
  .option('--postgres', 'event store on a fresh PostgreSQL database (GPUNET_TEST_PG_URL) instead of SQLite')
  .parse()
  .opts<{ minutes: number; rate: number; warmUp: number; agents: number; gpus: number; sampleS: number; maxInFlight: number; logLevel: string; postgres?: boolean }>();

if (opts.warmUp >= opts.minutes) {
  console.error(`--warm-up (${opts.warmUp} min) must be shorter than --minutes (${opts.minutes}): growth is measured after it.`);
  process.exit(2);
}

const SPEC = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } };
const MiB = 1024 * 1024;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Resident memory of a process in bytes (undefined once it is gone). */
function rssOf(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** Counts released attempts as they are stored, reading only what is new since the last call. */
class Completions {
  private from = 0n;
  count = 0;
  constructor(private readonly store: EventStore) {}
  async update(): Promise<number> {
    for (;;) {
      const page = await this.store.readAll({ fromPosition: this.from, maxCount: 5_000, filter: { types: ['ComputeReleased'] } });
      this.count += page.length;
      if (page.length > 0) this.from = page[page.length - 1]!.position;
      if (page.length < 5_000) return this.count;
    }
  }
}

/** What V8 holds in one process (bytes): objects in use, pages committed for its heap, of those its young generation's, and buffers outside it. */
interface Heap {
  used: number;
  committed: number;
  young: number;
  external: number;
}

/** Each gpunet process's V8 heap (see {@link Heap}), from its /metrics; nats-server and a process that did not answer are left out. */
async function heapsOf(net: TestNetwork): Promise<Map<string, Heap>> {
  const metrics = await scrape(net);
  const out = new Map<string, Heap>();
  for (const { name } of net.processes) {
    const m = metrics.get(name);
    const used = m?.get('gpunet_nodejs_heap_size_used_bytes');
    const committed = m?.get('gpunet_nodejs_heap_size_total_bytes');
    const external = m?.get('gpunet_nodejs_external_memory_bytes');
    // The young generation's semi-spaces: V8 grows them with the allocation rate, up to their cap.
    const young = [...(m ?? [])].find(([key]) => key.startsWith('gpunet_nodejs_heap_space_size_total_bytes{space="new"'))?.[1];
    if (used !== undefined && committed !== undefined && external !== undefined) out.set(name, { used, committed, young: young ?? 0, external });
  }
  return out;
}

interface Sample {
  atS: number;
  rss: Map<string, number | undefined>;
  heap: Map<string, Heap>;
  submitted: number;
  completed: number;
  /** What GPUNET_EVENTS holds: with interest retention (decision 0038), what is in flight only. */
  stream: { messages: number; subjects: number };
}

async function main(): Promise<void> {
  const database = opts.postgres ? await createTestDatabase('gpunet_soak') : undefined;
  console.log(`starting a network: ${opts.agents} agents × ${opts.gpus} GPUs, ${database ? 'PostgreSQL' : 'SQLite'} store, services at log level ${opts.logLevel}`);
  let net: TestNetwork;
  try {
    net = await TestNetwork.start({ agents: opts.agents, gpus: opts.gpus, logLevel: opts.logLevel, dirPrefix: 'gpunet-soak-', ...(database ? { postgresUrl: database.url } : {}) });
  } catch (err) {
    await database?.drop();
    throw err;
  }
  try {
    const client = net.client();
    const warm = await client.submit(SPEC);
    await client.waitFor(warm.jobId, { timeoutMs: 60_000 });
    const completions = new Completions(await net.store());
    await completions.update();
    const completedBefore = completions.count;

    const durationMs = opts.minutes * 60_000;
    const t0 = performance.now();
    const offer = openLoop(() => client.submit(SPEC), { perSecond: opts.rate, durationMs, maxInFlight: opts.maxInFlight, start: t0 });

    const samples: Sample[] = [];
    const jsm = await jetstreamManager(await net.nats());
    const sample = async (): Promise<Sample> => {
      const events = (await jsm.streams.info('GPUNET_EVENTS')).state;
      const s: Sample = {
        atS: Math.round((performance.now() - t0) / 1000),
        rss: new Map(net.processes.map((p) => [p.name, rssOf(p.pid)])),
        heap: await heapsOf(net),
        submitted: offer.tally.accepted,
        completed: (await completions.update()) - completedBefore,
        stream: { messages: events.messages, subjects: events.num_subjects ?? 0 },
      };
      samples.push(s);
      const mib = [...s.rss].map(([name, b]) => `${name} ${b === undefined ? 'gone' : Math.round(b / MiB)}`).join(', ');
      const heap = [...s.heap].map(([name, h]) => `${name} ${Math.round(h.used / MiB)}/${Math.round(h.committed / MiB)}(${Math.round(h.young / MiB)})+${Math.round(h.external / MiB)}`).join(', ');
      console.log(
        `  ${String(s.atS).padStart(5)} s  submitted ${s.submitted}, released ${s.completed}, backlog ${s.submitted - s.completed}; GPUNET_EVENTS holds ${s.stream.messages} events on ${s.stream.subjects} subjects; RSS MiB: ${mib}; V8 heap in use/committed(young generation)+external MiB: ${heap}`,
      );
      return s;
    };
    console.log(`offering ${opts.rate} jobs/s for ${opts.minutes} min; baseline after ${opts.warmUp} min; a sample every ${opts.sampleS} s`);
    await sample();
    let baseline: Sample | undefined;
    while (performance.now() - t0 < durationMs) {
      const next = Math.min(opts.sampleS * 1000, durationMs - (performance.now() - t0));
      await new Promise((r) => setTimeout(r, Math.max(0, next)));
      const s = await sample();
      if (baseline === undefined && s.atS >= opts.warmUp * 60) baseline = s;
    }
    const { offered, accepted, failed, firstError, cut } = await offer.scheduled;
    const end = samples.at(-1)!;
    baseline ??= samples[0]!;

    console.log('');
    const completedRate = (end.completed - baseline.completed) / Math.max(1, end.atS - baseline.atS);
    console.log(`${offered} offered (${opts.rate}/s), ${accepted} accepted, ${failed} refused or failed${failed > 0 ? ` (first: ${errorText(firstError)})` : ''}, ${cut} not sent (${opts.maxInFlight} submits already in flight)`);
    console.log(`released ${end.completed} in ${end.atS} s; after the warm-up ${completedRate.toFixed(1)} jobs/s; backlog at the end ${end.submitted - end.completed}`);
    if (completedRate < opts.rate * 0.95) {
      console.log(`the network completes less than it is offered (${completedRate.toFixed(1)} < ${opts.rate} jobs/s): its queue grows through the run, and the memory of queued jobs with it`);
    }
    console.log('');
    // A single reading lands anywhere in a garbage collector's cycle: each side is the median of
    // up to three samples (the first after the warm-up, the last of the run).
    const after = samples.filter((s) => s.atS >= baseline.atS);
    const median = (list: Sample[], name: string, read: (s: Sample, name: string) => number | undefined = (s, n) => s.rss.get(n)): number | undefined => {
      const v = list.map((s) => read(s, name)).filter((b): b is number => b !== undefined).sort((a, b) => a - b);
      return v.length === list.length ? v[Math.floor(v.length / 2)] : undefined;
    };
    const startWindow = after.slice(0, Math.min(3, Math.floor(after.length / 2)) || 1);
    const endWindow = after.slice(-startWindow.length);
    console.log(`resident memory (MiB), from the end of the warm-up (${baseline.atS} s) to the end (${end.atS} s), each the median of ${startWindow.length} samples; target ≤ 10 % growth`);
    console.log('  process            start      end     peak   growth');
    const json: string[] = [];
    let worst: { name: string; pct: number } | undefined;
    for (const p of net.processes) {
      const start = median(startWindow, p.name);
      const last = median(endWindow, p.name);
      const peak = Math.max(...after.map((s) => s.rss.get(p.name) ?? 0));
      if (start === undefined || last === undefined) {
        console.log(`  ${p.name.padEnd(16)} ${start === undefined ? 'gone at the baseline' : 'gone at the end'}`);
        continue;
      }
      const pct = Math.round(((last - start) / start) * 1000) / 10;
      if (worst === undefined || pct > worst.pct) worst = { name: p.name, pct };
      const fmt = (b: number) => (b / MiB).toFixed(1).padStart(8);
      console.log(`  ${p.name.padEnd(16)} ${fmt(start)} ${fmt(last)} ${fmt(peak)} ${`${pct > 0 ? '+' : ''}${pct.toFixed(1)} %`.padStart(8)}${pct > 10 ? '  over' : ''}`);
      json.push(JSON.stringify({ bench: `soak.rss_growth.${p.name}`, value: pct, unit: '%', start_mib: Math.round(start / MiB), end_mib: Math.round(last / MiB), peak_mib: Math.round(peak / MiB) }));
    }
    if (worst) json.push(JSON.stringify({ bench: 'soak.rss_growth.max', value: worst.pct, unit: '%', process: worst.name }));
    // The same windows for what V8 holds: objects in use (the heap) and buffers outside it.
    console.log('');
    console.log(`V8's heap (MiB, /metrics), the same samples: objects in use; pages committed for the heap, of which the young generation's (V8 grows its`);
    console.log(`semi-spaces with the allocation rate, up to a cap); buffers outside the heap. RSS growing while objects in use stay is not state the process keeps`);
    console.log('  process          in use start   end   growth   committed start   end   young start   end   external start   end');
    const of = (key: keyof Heap) => (s: Sample, n: string) => s.heap.get(n)?.[key];
    for (const p of net.processes) {
      const [start, last, cStart, cEnd, yStart, yEnd, xStart, xEnd] = (['used', 'committed', 'young', 'external'] as const).flatMap((key) => [median(startWindow, p.name, of(key)), median(endWindow, p.name, of(key))]);
      if (start === undefined || last === undefined || cStart === undefined || cEnd === undefined || yStart === undefined || yEnd === undefined || xStart === undefined || xEnd === undefined) continue; // nats-server, or no answer
      const pct = Math.round(((last - start) / start) * 1000) / 10;
      const fmt = (b: number, width: number) => (b / MiB).toFixed(1).padStart(width);
      console.log(
        `  ${p.name.padEnd(16)} ${fmt(start, 12)} ${fmt(last, 6)} ${`${pct > 0 ? '+' : ''}${pct.toFixed(1)} %`.padStart(8)} ${fmt(cStart, 17)} ${fmt(cEnd, 6)} ${fmt(yStart, 13)} ${fmt(yEnd, 6)} ${fmt(xStart, 16)} ${fmt(xEnd, 6)}`,
      );
      json.push(
        JSON.stringify({
          bench: `soak.heap_growth.${p.name}`,
          value: pct,
          unit: '%',
          start_mib: Math.round(start / MiB),
          end_mib: Math.round(last / MiB),
          committed_start_mib: Math.round(cStart / MiB),
          committed_end_mib: Math.round(cEnd / MiB),
          young_start_mib: Math.round(yStart / MiB),
          young_end_mib: Math.round(yEnd / MiB),
          external_start_mib: Math.round(xStart / MiB),
          external_end_mib: Math.round(xEnd / MiB),
        }),
      );
    }
    json.push(JSON.stringify({ bench: 'soak.jobs_completed', value: end.completed, unit: 'jobs', offered, rate: opts.rate, completed_per_s: Math.round(completedRate * 10) / 10 }));
    json.push(JSON.stringify({ bench: 'soak.backlog_end', value: end.submitted - end.completed, unit: 'jobs' }));
    json.push(JSON.stringify({ bench: 'soak.events_stream_subjects_end', value: end.stream.subjects, unit: 'subjects', messages: end.stream.messages }));
    // Every stream's holdings at the end: the server's memory follows its subjects (decision 0038).
    console.log('');
    console.log('what each stream holds at the end (the server keeps state per subject in memory):');
    for await (const info of jsm.streams.list()) {
      console.log(`  ${info.config.name.padEnd(28)} ${String(info.state.messages).padStart(8)} messages ${String(info.state.num_subjects ?? 0).padStart(8)} subjects ${(info.state.bytes / MiB).toFixed(1).padStart(8)} MiB  (${info.config.retention})`);
      json.push(JSON.stringify({ bench: `soak.stream_subjects_end.${info.config.name}`, value: info.state.num_subjects ?? 0, unit: 'subjects', messages: info.state.messages }));
    }
    console.log('');
    for (const line of json) console.log(line);
  } finally {
    await net.stop();
    await database?.drop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
