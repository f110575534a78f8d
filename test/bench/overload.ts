/**
 * Work per job under a backlog, for `bench:e2e -- --rate N` / `--busy K` (issue 16, item 7): the
 * CPU each process spends per completed job when the network is behind, beside the same figure
 * without a backlog, measured on the same network in the same run.
 *
 * Three measurements, one after the other on the network the bench started:
 *   - idle: each process's CPU over a few seconds with no job anywhere (timers, polling, heartbeats);
 *   - unloaded: the jobs run with at most one job per GPU slot unfinished (a job is submitted when
 *     the previous one of its slot is billed and released), so no queue forms anywhere;
 *   - overloaded: the same number of jobs offered open loop at `--rate` jobs/s whatever the
 *     completions (without `--rate`: `--concurrency` submits in flight, as the closed-loop run),
 *     with `--busy` busy-loop processes taking cores meanwhile.
 * Each phase reads /proc before and after (own + children, as the closed-loop table), and each
 * service's /metrics for consumer redeliveries, message outcomes and placement passes.
 */
import type { EventStore } from '#event-store';
import type { GpunetClient } from '#sdk';
import { spawn, type ChildProcess } from 'node:child_process';
import type { TestNetwork } from '../support/network.js';
import { until } from '../support/poll.js';
import { cpuDelta, processCpu, type ProcessCpu } from './cpu.js';
import { scrape } from './metrics.js';
import { openLoop } from './open-loop.js';

/** How a phase offers its jobs. */
export type Offer =
  /** At most `inFlight` jobs unfinished (submitted and not yet billed and released). */
  | { kind: 'slots'; inFlight: number }
  /** One submit every 1/`perSecond` s, whatever the completions (open loop, no cap on submit requests open). */
  | { kind: 'rate'; perSecond: number }
  /** `concurrency` submit requests in flight, the next one as soon as one is answered (the closed-loop run). */
  | { kind: 'submits'; concurrency: number };

export interface PhaseFigures {
  label: string;
  jobs: number;
  /** First submit to the last job's billed release (store commit times). */
  elapsedMs: number;
  /** Submits done (all answered) after this long. */
  submittedMs: number;
  /** CPU by process name (agents under their node ids). */
  cpu: Map<string, ProcessCpu>;
  /** Sum over every process's consumers of `gpunet_consumer_redeliveries_total`, by process. */
  redeliveries: Map<string, number>;
  /** Messages settled by outcome (`gpunet_consumer_messages_total`), summed over the processes. */
  settled: Map<string, number>;
  /** Placement passes and their time (`gpunet_placement_pass_seconds`). */
  passes: { count: number; seconds: number };
  /** Most jobs submitted and not yet billed and released at once (sampled). */
  maxUnfinished: number;
}

const total = (c: ProcessCpu) => c.ownMs + c.childrenMs;

function outcomesOf(metrics: Map<string, number>): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, v] of metrics) {
    const m = /^gpunet_consumer_messages_total\{.*outcome="([^"]+)"/.exec(key);
    if (m) out.set(m[1]!, (out.get(m[1]!) ?? 0) + v);
  }
  return out;
}

/** CPU of every network process now. */
function readings(net: TestNetwork): Map<string, ProcessCpu | undefined> {
  return new Map(net.processes.map((p) => [p.name, processCpu(p.pid)] as const));
}

/** Each process's CPU per second over `seconds` with no job in the network. */
export async function idleCpu(net: TestNetwork, seconds: number): Promise<Map<string, number>> {
  const before = readings(net);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const after = readings(net);
  const elapsed = (performance.now() - started) / 1000;
  return new Map([...before.keys()].map((name) => [name, total(cpuDelta(before.get(name), after.get(name))) / elapsed]));
}

/** `count` processes spinning on a core each until `stop()`: another program taking the machine's cores. */
export function busyLoops(count: number): { stop: () => void } {
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) children.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  return {
    stop: () => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    },
  };
}

/**
 * Watches the store for the jobs' `UsageRecorded` and `ComputeReleased`: a job is done once both
 * are recorded. Reads only what is new since its last read (one indexed read per tick).
 */
class Completions {
  private position = 0n;
  private readonly billed = new Set<string>();
  private readonly released = new Set<string>();
  private readonly waiters = new Map<string, () => void>();
  private readonly ends = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private reading = false;

  constructor(private readonly store: EventStore) {}

  async start(): Promise<void> {
    this.position = await this.store.headPosition();
    this.timer = setInterval(() => void this.tick(), 50);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves once the job is billed and released. */
  done(jobId: string): Promise<void> {
    if (this.ends.has(jobId)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.set(jobId, resolve));
  }

  /** Store commit time (epoch ms) of the later of the job's two ending events. */
  endOf(jobId: string): number | undefined {
    return this.ends.get(jobId);
  }

  get finished(): number {
    return this.ends.size;
  }

  private async tick(): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      for (;;) {
        const page = await this.store.readAll({ fromPosition: this.position, maxCount: 5_000, filter: { types: ['UsageRecorded', 'ComputeReleased'] } });
        for (const e of page) {
          const jobId = e.metadata.jobId;
          if (!jobId) continue;
          (e.type === 'UsageRecorded' ? this.billed : this.released).add(jobId);
          if (this.billed.has(jobId) && this.released.has(jobId) && !this.ends.has(jobId)) {
            this.ends.set(jobId, Date.parse(e.recordedAt));
            const w = this.waiters.get(jobId);
            this.waiters.delete(jobId);
            w?.();
          }
        }
        if (page.length > 0) this.position = page[page.length - 1]!.position;
        if (page.length < 5_000) break;
      }
    } finally {
      this.reading = false;
    }
  }
}

/**
 * Runs `jobs` jobs offered as `offer`, with `busy` busy loops meanwhile, and measures every
 * process's CPU from the first submit until the last job is billed and released.
 */
export async function runPhase(
  net: TestNetwork,
  client: GpunetClient,
  spec: Parameters<GpunetClient['submit']>[0],
  options: { label: string; jobs: number; offer: Offer; busy: number; timeoutMs?: number },
): Promise<PhaseFigures> {
  const completions = new Completions(await net.store());
  await completions.start();
  const busy = busyLoops(options.busy);
  const jobIds: string[] = [];
  let maxUnfinished = 0;
  const submitOne = async () => {
    const reply = await client.submit(spec);
    jobIds.push(reply.jobId);
    maxUnfinished = Math.max(maxUnfinished, jobIds.length - completions.finished);
    return reply.jobId;
  };
  try {
    const metricsBefore = await scrape(net);
    const cpuBefore = readings(net);
    const t0 = Date.now();
    const k = options.jobs;
    let next = 0;
    const offer = options.offer;
    if (offer.kind === 'slots') {
      await Promise.all(
        Array.from({ length: Math.min(offer.inFlight, k) }, async () => {
          while (next < k) {
            next++;
            await completions.done(await submitOne());
          }
        }),
      );
    } else if (offer.kind === 'submits') {
      await Promise.all(
        Array.from({ length: Math.min(offer.concurrency, k) }, async () => {
          while (next < k) {
            next++;
            await submitOne();
          }
        }),
      );
    } else {
      const { failed, firstError } = await openLoop(submitOne, { perSecond: offer.perSecond, count: k }).answered;
      if (failed > 0) throw firstError;
    }
    const submittedMs = Date.now() - t0;
    const wanted = jobIds.length;
    await until(
      `${options.label}: ${k} jobs billed and released`,
      () => {
        maxUnfinished = Math.max(maxUnfinished, wanted - completions.finished);
        return jobIds.every((id) => completions.endOf(id) !== undefined);
      },
      { timeoutMs: options.timeoutMs ?? 600_000, intervalMs: 50, describe: () => `${completions.finished} done` },
    );
    const cpuAfter = readings(net);
    busy.stop();
    const metricsAfter = await scrape(net);
    const end = Math.max(...jobIds.map((id) => completions.endOf(id) ?? 0));
    const cpu = new Map([...cpuBefore.keys()].map((name) => [name, cpuDelta(cpuBefore.get(name), cpuAfter.get(name))]));
    const diff = (name: string, metric: string) => (metricsAfter.get(name)?.get(metric) ?? 0) - (metricsBefore.get(name)?.get(metric) ?? 0);
    const redeliveries = new Map(net.processes.map((p) => [p.name, diff(p.name, 'gpunet_consumer_redeliveries_total')] as const));
    const settled = new Map<string, number>();
    for (const p of net.processes) {
      const after = outcomesOf(metricsAfter.get(p.name) ?? new Map());
      const before = outcomesOf(metricsBefore.get(p.name) ?? new Map());
      for (const [o, v] of after) settled.set(o, (settled.get(o) ?? 0) + v - (before.get(o) ?? 0));
    }
    const passes = { count: diff('placement', 'gpunet_placement_pass_seconds_count'), seconds: diff('placement', 'gpunet_placement_pass_seconds_sum') };
    return { label: options.label, jobs: k, elapsedMs: end - t0, submittedMs, cpu, redeliveries, settled, passes, maxUnfinished };
  } finally {
    busy.stop();
    completions.stop();
  }
}

/** The overload section's table and JSON lines. */
export function reportOverload(
  net: TestNetwork,
  idle: Map<string, number>,
  idleSeconds: number,
  reference: PhaseFigures,
  overloaded: PhaseFigures,
  jsonLines: string[],
): void {
  const names = [...reference.cpu.keys()];
  const agents = net.nodeIds;
  const perJob = (f: PhaseFigures, list: readonly string[]) => list.reduce((n, name) => n + total(f.cpu.get(name) ?? { ownMs: 0, childrenMs: 0 }), 0) / f.jobs;
  const idleOf = (list: readonly string[]) => list.reduce((n, name) => n + (idle.get(name) ?? 0), 0);
  const rows: Array<[string, readonly string[]]> = [...names.map((n) => [n, [n]] as [string, string[]]), ['agents', agents], ['total', names]];
  const w = (v: number, width = 9, digits = 1) => v.toFixed(digits).padStart(width);
  const rate = (f: PhaseFigures) => f.jobs / (f.elapsedMs / 1000);
  console.log('');
  console.log(`work per job under a backlog, the same network (CPU-ms per completed job, own + children, from /proc)`);
  console.log(`  idle:       ${idleSeconds} s with no job anywhere`);
  for (const f of [reference, overloaded]) {
    console.log(`  ${`${f.label}:`.padEnd(11)} ${f.jobs} jobs in ${(f.elapsedMs / 1000).toFixed(2)} s = ${rate(f).toFixed(1)} jobs/s; submits done after ${(f.submittedMs / 1000).toFixed(2)} s; up to ${f.maxUnfinished} jobs unfinished`);
  }
  console.log(`  ${'process'.padEnd(12)} ${'idle ms/s'.padStart(9)} ${'unloaded'.padStart(9)} ${'overload'.padStart(9)} ${'ratio'.padStart(7)}   ${'idle share of overload'.padStart(22)}`);
  for (const [name, list] of rows) {
    const ref = perJob(reference, list);
    const over = perJob(overloaded, list);
    // What the idle rate alone would cost per job over the overloaded phase's wall time.
    const idleShare = (idleOf(list) * (overloaded.elapsedMs / 1000)) / overloaded.jobs;
    console.log(`  ${name.padEnd(12)} ${w(idleOf(list))} ${w(ref)} ${w(over)} ${w(over / ref, 6, 2)}×   ${w(idleShare, 22)}`);
  }
  const redelivered = (f: PhaseFigures) => [...f.redeliveries.values()].reduce((a, b) => a + b, 0);
  const outcomes = (f: PhaseFigures) => [...f.settled].filter(([, v]) => v > 0).map(([o, v]) => `${o} ${v}`).join(', ');
  for (const f of [reference, overloaded]) {
    const byProcess = [...f.redeliveries].filter(([, v]) => v > 0).map(([n, v]) => `${n} ${v}`).join(', ');
    console.log(`  ${f.label}: redeliveries ${redelivered(f)}${byProcess ? ` (${byProcess})` : ''}; messages settled: ${outcomes(f)}; placement passes ${f.passes.count} (${(f.passes.count / f.jobs).toFixed(1)} per job, ${((f.passes.seconds * 1000) / f.jobs).toFixed(2)} ms per job)`);
  }
  const ratio = perJob(overloaded, names) / perJob(reference, names);
  console.log(`target: CPU per job overloaded ≤ 1.5× unloaded — ${ratio <= 1.5 ? 'met' : 'NOT met'} (${ratio.toFixed(2)}×)`);

  const r = (v: number, digits = 2) => Number(v.toFixed(digits));
  jsonLines.push(JSON.stringify({ bench: 'e2e.overload.cpu_per_job', value: r(perJob(overloaded, names)), unit: 'ms', raw: r(perJob(reference, names)), ratio: r(ratio) }));
  for (const [name, list] of rows) {
    if (name === 'total') continue;
    jsonLines.push(JSON.stringify({ bench: `e2e.overload.cpu_per_job.${name}`, value: r(perJob(overloaded, list)), unit: 'ms', raw: r(perJob(reference, list)), ratio: r(perJob(overloaded, list) / perJob(reference, list)), idle_ms_per_s: r(idleOf(list), 1) }));
  }
  jsonLines.push(JSON.stringify({ bench: 'e2e.overload.jobs', value: r(rate(overloaded), 1), unit: 'jobs/s', raw: r(rate(reference), 1) }));
  jsonLines.push(JSON.stringify({ bench: 'e2e.overload.redeliveries', value: redelivered(overloaded), unit: 'messages', raw: redelivered(reference) }));
  jsonLines.push(JSON.stringify({ bench: 'e2e.overload.placement_passes_per_job', value: r(overloaded.passes.count / overloaded.jobs), unit: 'passes', raw: r(reference.passes.count / reference.jobs) }));
}
