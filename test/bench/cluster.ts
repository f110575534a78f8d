/**
 * The e2e bench on separate hosts (`bench:e2e -- --cluster`): the same trivial jobs through a
 * gpunet network spread over network namespaces (test/support/gpunet-on-hosts.ts: a 3-node NATS
 * cluster, PostgreSQL on c1, services over c1–c3, an agent per GPU host). The producer runs as a
 * process on c1, as it would on a machine of the control network; the end is the store's commit
 * time of the last job's `UsageRecorded` or `ComputeReleased`, as in the single-host run.
 */
import type { RecordedEvent } from '#event-store';
import { GpunetOnHosts } from '../support/gpunet-on-hosts.js';
import { until } from '../support/poll.js';
import { cpuDelta, cpuOfCommand, processCpu, type ProcessCpu } from './cpu.js';

/** Stages of a job's life, as consecutive event types; the service that writes the second one is the one measured. */
export const STAGES: ReadonlyArray<[string, string, string]> = [
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

/** Percentile by nearest rank over sorted values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Each stage's latencies (store `recordedAt`, ms), sorted, by stage label, over the events of the measured jobs. */
export function stageLatencies(events: readonly RecordedEvent[]): Map<string, number[]> {
  const at = new Map<string, Map<string, number>>();
  for (const e of events) {
    const m = at.get(e.metadata.jobId!) ?? new Map<string, number>();
    if (!m.has(e.type)) m.set(e.type, Date.parse(e.recordedAt));
    at.set(e.metadata.jobId!, m);
  }
  const out = new Map<string, number[]>();
  for (const [from, to, label] of STAGES) {
    out.set(
      `${label} (${from} → ${to})`,
      [...at.values()].filter((m) => m.has(from) && m.has(to)).map((m) => m.get(to)! - m.get(from)!).sort((a, b) => a - b),
    );
  }
  return out;
}

export interface ClusterFigures {
  jobsPerSecond: number;
  p50: number;
  p99: number;
  submittedMs: number;
  elapsedMs: number;
  agents: number;
  intakes: number;
  /** Each stage's latencies, sorted (see {@link stageLatencies}). */
  stages: Map<string, number[]>;
  /** CPU (ms) each process used from the first submit to the last release, by process name; `postgres (all)` is every postgres process of the machine. */
  cpu: Map<string, ProcessCpu>;
}

/**
 * Runs `jobs` trivial jobs on a fresh multi-host network and measures them; stops the network.
 * `intakes` replicas (one per control host) share the submits round-robin.
 */
export async function clusterRun(options: { jobs: number; concurrency: number; agents: number; gpus: number; intakes?: number; spec: unknown }): Promise<ClusterFigures> {
  const intakes = options.intakes ?? 1;
  const g = await GpunetOnHosts.start({ gpuHosts: options.agents, gpus: options.gpus, intakes });
  let ok = false;
  const undoSignals = g.stopOnSignals();
  try {
    // CPU is read around the whole load step, warm-up jobs included (one per intake, waited for; a few ms each).
    const readings = (): Map<string, ProcessCpu | undefined> =>
      new Map([...[...g.pids()].map(([name, pid]) => [name, processCpu(pid)] as const), ['postgres (all)', cpuOfCommand('postgres')] as const]);
    const before = readings();
    const load = (await g.operator(
      'load',
      { urls: g.urls, apiKey: g.apiKey, team: 'local', spec: options.spec, jobs: options.jobs, concurrency: options.concurrency },
      600_000,
    )) as unknown as { t0: number; submittedMs: number; latencies: number[]; jobIds: string[] };
    const wanted = new Set(load.jobIds);
    const store = await g.store();
    let events: RecordedEvent[] = [];
    let progress = '';
    await until(
      `${options.jobs} jobs to be billed and released on the hosts`,
      async () => {
        events = (await readAllOf(store, ['UsageRecorded', 'ComputeReleased'])).filter((e) => wanted.has(e.metadata.jobId ?? ''));
        const billed = new Set(events.filter((e) => e.type === 'UsageRecorded').map((e) => e.metadata.jobId));
        const released = new Set(events.filter((e) => e.type === 'ComputeReleased').map((e) => e.metadata.jobId));
        progress = `${billed.size} billed, ${released.size} released`;
        return billed.size === options.jobs && released.size === options.jobs;
      },
      { timeoutMs: 600_000, intervalMs: 250, describe: () => progress },
    );
    const after = readings();
    const cpu = new Map([...before.keys()].map((name) => [name, cpuDelta(before.get(name), after.get(name))] as const));
    const end = Math.max(...events.map((e) => Date.parse(e.recordedAt)));
    const elapsedMs = end - load.t0;
    const sorted = [...load.latencies].sort((a, b) => a - b);
    const all = (await readAllOf(store, [])).filter((e) => wanted.has(e.metadata.jobId ?? ''));
    ok = true;
    return {
      jobsPerSecond: options.jobs / (elapsedMs / 1000),
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      submittedMs: load.submittedMs,
      elapsedMs,
      agents: options.agents,
      intakes,
      stages: stageLatencies(all),
      cpu,
    };
  } catch (err) {
    process.stderr.write(`\n${g.logTails(5)}\n(data and logs kept in ${g.dir})\n`);
    throw err;
  } finally {
    undoSignals();
    await g.stop({ keep: !ok });
  }
}

/** Every event of these types (every event with none), read page by page. */
async function readAllOf(store: Awaited<ReturnType<GpunetOnHosts['store']>>, types: readonly string[]): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, maxCount: 5_000, ...(types.length > 0 ? { filter: { types } } : {}) });
    out.push(...page);
    if (page.length < 5_000) return out;
    from = page.at(-1)!.position;
  }
}
