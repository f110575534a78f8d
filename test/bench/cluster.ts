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

export interface ClusterFigures {
  jobsPerSecond: number;
  p50: number;
  p99: number;
  submittedMs: number;
  elapsedMs: number;
  agents: number;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Runs `jobs` trivial jobs on a fresh multi-host network and measures them; stops the network. */
export async function clusterRun(options: { jobs: number; concurrency: number; agents: number; gpus: number; spec: unknown }): Promise<ClusterFigures> {
  const g = await GpunetOnHosts.start({ gpuHosts: options.agents, gpus: options.gpus });
  let ok = false;
  try {
    const load = (await g.operator(
      'load',
      { urls: [g.url], apiKey: g.apiKey, team: 'local', spec: options.spec, jobs: options.jobs, concurrency: options.concurrency },
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
    const end = Math.max(...events.map((e) => Date.parse(e.recordedAt)));
    const elapsedMs = end - load.t0;
    const sorted = [...load.latencies].sort((a, b) => a - b);
    ok = true;
    return { jobsPerSecond: options.jobs / (elapsedMs / 1000), p50: percentile(sorted, 50), p99: percentile(sorted, 99), submittedMs: load.submittedMs, elapsedMs, agents: options.agents };
  } catch (err) {
    process.stderr.write(`\n${g.logTails(5)}\n(data and logs kept in ${g.dir})\n`);
    throw err;
  } finally {
    await g.stop({ keep: !ok });
  }
}

/** Every event of these types, read page by page. */
async function readAllOf(store: Awaited<ReturnType<GpunetOnHosts['store']>>, types: readonly string[]): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, maxCount: 5_000, filter: { types } });
    out.push(...page);
    if (page.length < 5_000) return out;
    from = page.at(-1)!.position;
  }
}
