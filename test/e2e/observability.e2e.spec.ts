/**
 * What an operator sees, across real processes (`gpunet up`: two agents of 2 simulated GPUs,
 * tracing on to a receiver in this test): every process answers `/metrics` on the port recorded
 * in state.json; during a run its figures equal what the store says (GPUs held, jobs by state,
 * billed GPU time); a consumer held back (the ledger stopped) shows a growing lag that matches
 * JetStream's own count and drains once it is back; `gpunet top --once` shows the same; and one
 * trace id covers a job's work in intake, storage, placement, execution and the ledger.
 */
import { FINAL_JOB_STATES, JOB_STATES, type JobPlaced, type UsageRecorded } from '#contracts';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jetstream } from '@nats-io/jetstream';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { runCli } from '../../libs/cli/src/program.js';
import { parseExposition, type Sample } from '../../libs/cli/src/top/exposition.js';
import type { TopView } from '../../libs/cli/src/top/top-view.js';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { OFF_CONTRACT_HEADER } from '../support/bus/bus-contract.js';
import { scriptJob, settle } from '../support/jobs.js';
import { TestNetwork, withLogsOnFailure, NETWORK_START_HOOK_MS } from '../support/network.js';
import { until } from '../support/poll.js';

// ── a local OTLP/HTTP receiver: the JSON the exporter posts to /v1/traces ─────────────────────

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}

const spans: ReceivedSpan[] = [];
let receiver: Server | undefined;

/** OTLP JSON carries ids as hex; base64 is accepted too, in case an exporter sends the protobuf mapping. */
const hexId = (id: string | undefined) => (!id ? '' : /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex'));
const attrs = (list: OtlpAttribute[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, a.value.stringValue ?? a.value.intValue ?? a.value.boolValue]));

async function startReceiver(): Promise<string> {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; attributes?: OtlpAttribute[] }[] }[] }[];
        };
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attrs(rs.resource?.attributes)['service.name'] ?? '?');
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) spans.push({ service, traceId: hexId(s.traceId), spanId: hexId(s.spanId), parentSpanId: hexId(s.parentSpanId), name: s.name, attributes: attrs(s.attributes) });
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch {
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(receiver!.address() as AddressInfo).port}`;
}

// ── the network and its /metrics ──────────────────────────────────────────────────────────────

let net: TestNetwork | undefined;
const network = () => net!;
const e2e = (body: () => Promise<void>) => withLogsOnFailure(() => net, body);

async function scrape(name: string): Promise<Sample[]> {
  const p = network().processes.find((x) => x.name === name);
  if (!p?.metricsPort) throw new Error(`${name} has no metricsPort in state.json`);
  const res = await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`, { signal: AbortSignal.timeout(5_000) });
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

/** Sum of a metric's samples whose labels include `labels`. */
function sum(samples: readonly Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

/** GPUs held now according to the store: placed attempts not yet released (one-node jobs here). */
async function heldInStore(): Promise<number> {
  const events = await network().events({ types: ['JobPlaced', 'ComputeReleased'] });
  const released = new Set(events.filter((e) => e.type === 'ComputeReleased').map((e) => (e.data as { attemptId: string }).attemptId));
  return events.filter((e) => e.type === 'JobPlaced' && !released.has((e.data as JobPlaced).attemptId)).reduce((a, e) => a + (e.data as JobPlaced).gpuIndices.length, 0);
}

/** Each ended job's outcome as the store says: its withdrawal's, its rejection, else its last attempt's. */
async function outcomesInStore(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await network().events({ types: ['JobFinished', 'JobWithdrawn', 'JobRejected'] })) {
    const d = e.data as { jobId: string; outcome?: string };
    if (e.type === 'JobRejected') out.set(d.jobId, 'rejected');
    else out.set(d.jobId, d.outcome!);
  }
  return out;
}

/** Billed GPU-ms of the local team's sim-gpu usage lines in the store. */
async function billedInStore(): Promise<number> {
  const lines = (await network().events({ types: ['UsageRecorded'] })).map((e) => e.data as UsageRecorded);
  return lines.filter((l) => l.team === network().team && l.gpuModel === 'sim-gpu').reduce((a, l) => a + l.gpus * l.billableMs, 0);
}

async function top(): Promise<TopView> {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const code = await runCli(['top', '--once', '--json', '--data-dir', network().dataDir], { stdout: out, stderr: new PassThrough(), env: {}, cwd: network().dataDir });
  expect(code).toBe(0);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as TopView;
}

let completedJob = '';

beforeAll(async () => {
  const endpoint = await startReceiver();
  net = await TestNetwork.start({ agents: 2, gpus: 2, env: { GPUNET_OTLP_ENDPOINT: endpoint } });
}, NETWORK_START_HOOK_MS);

afterAll(async () => {
  await net?.stop();
  await new Promise((r) => receiver?.close(r));
}, 60_000);

describe('observability', () => {
  it(
    'every process of the network answers /metrics on the port state.json records',
    e2e(async () => {
      const processes = network().processes.filter((p) => p.role !== 'nats');
      expect(processes.map((p) => p.name).sort()).toEqual(['intake', 'ledger', 'node-1', 'node-2', 'placement', 'recorder', 'storage']);
      for (const p of processes) {
        const samples = await scrape(p.name);
        const own = samples.filter((s) => s.name === 'gpunet_process_cpu_user_seconds_total');
        expect({ process: p.name, instance: own[0]?.labels.instance }).toEqual({ process: p.name, instance: p.name });
        // Every process has a store (agents their journal) and a relay carrying its events on.
        expect({ process: p.name, store: samples.some((s) => s.name === 'gpunet_store_head_position'), relay: samples.some((s) => s.name === 'gpunet_outbox_relay_lag_seconds') }).toEqual({ process: p.name, store: true, relay: true });
        // No job or attempt id is ever a label value.
        expect(samples.filter((s) => Object.values(s.labels).some((v) => /^(job|att)_/.test(v)))).toEqual([]);
      }
    }),
    60_000,
  );

  it(
    'during a run the figures equal the store: GPUs held, jobs by state, billed GPU time',
    e2e(async () => {
      const client = network().client();
      const long = [
        (await client.submit(scriptJob('sleep 60', { gpus: 2, timeLimit: '2m' }))).jobId,
        (await client.submit(scriptJob('sleep 60', { gpus: 1, timeLimit: '2m' }))).jobId,
      ];
      await until('both long jobs to run', async () => (await Promise.all(long.map((id) => client.getJob(id)))).every((v) => v.state === 'running'), { timeoutMs: 60_000, intervalMs: 200 });

      // Placement's view and the agents' own, against the store's placed-and-not-released attempts.
      let seen = '';
      await until(
        'held GPUs on /metrics to equal the store',
        async () => {
          const store = await heldInStore();
          const placement = sum(await scrape('placement'), 'gpunet_gpus', { state: 'held' });
          const agents = sum(await scrape('node-1'), 'gpunet_agent_gpus', { state: 'held' }) + sum(await scrape('node-2'), 'gpunet_agent_gpus', { state: 'held' });
          seen = `store ${store}, placement ${placement}, agents ${agents}`;
          return store === 3 && placement === store && agents === store;
        },
        { timeoutMs: 30_000, intervalMs: 250, describe: () => seen },
      );
      const intake = await scrape('intake');
      expect(sum(intake, 'gpunet_jobs', { state: 'running' })).toBe(2);
      const live = await top();
      expect(live.gpus).toEqual([{ model: 'sim-gpu', held: 3, free: 1 }]);
      expect(live.nodes.map((n) => n.up)).toEqual([true, true]);

      await Promise.all(long.map((id) => client.cancel(id)));
      completedJob = (await client.submit(scriptJob('echo done', { gpus: 1 }))).jobId;
      await settle(network(), [...long, completedJob], { timeoutMs: 90_000 });

      await until(
        'billed GPU-ms, held GPUs and jobs by state on /metrics to equal the store',
        async () => {
          const [billed, ledger, placement, jobs, submitted, ended] = await Promise.all([
            billedInStore(),
            scrape('ledger'),
            scrape('placement'),
            scrape('intake'),
            network().events({ types: ['JobSubmitted'] }),
            outcomesInStore(),
          ]);
          const metricBilled = sum(ledger, 'gpunet_billed_gpu_milliseconds_total', { team: network().team, model: 'sim-gpu' });
          const byOutcome = (o: string) => [...ended.values()].filter((x) => x === o).length;
          seen = `billed store ${billed} metrics ${metricBilled}; held ${sum(placement, 'gpunet_gpus', { state: 'held' })}; jobs ${sum(jobs, 'gpunet_jobs')} of ${submitted.length}; completed ${sum(jobs, 'gpunet_jobs', { state: 'completed' })} of ${byOutcome('completed')}, cancelled ${sum(jobs, 'gpunet_jobs', { state: 'cancelled' })} of ${byOutcome('cancelled')}`;
          return (
            billed > 0 &&
            metricBilled === billed &&
            sum(placement, 'gpunet_gpus', { state: 'held' }) === 0 &&
            sum(jobs, 'gpunet_jobs') === submitted.length &&
            byOutcome('completed') === 1 &&
            sum(jobs, 'gpunet_jobs', { state: 'completed' }) === 1 &&
            byOutcome('cancelled') === 2 &&
            sum(jobs, 'gpunet_jobs', { state: 'cancelled' }) === 2
          );
        },
        { timeoutMs: 30_000, intervalMs: 250, describe: () => seen },
      );
      // A final job's record leaves intake's memory once the job views table holds it: what
      // stays is the jobs still moving.
      await until(
        'intake to hold in memory only the records of jobs not final',
        async () => {
          const intake = await scrape('intake');
          const moving = JOB_STATES.filter((state) => !FINAL_JOB_STATES.includes(state)).reduce((n, state) => n + sum(intake, 'gpunet_jobs', { state }), 0);
          seen = `in memory ${sum(intake, 'gpunet_job_views_in_memory')}, not final ${moving}`;
          return sum(intake, 'gpunet_job_views_in_memory') === moving;
        },
        { timeoutMs: 30_000, intervalMs: 250, describe: () => seen },
      );
      // The submits were timed; the relays caught up.
      expect(sum(await scrape('intake'), 'gpunet_submit_seconds_count', { outcome: 'accepted' })).toBe(3);
      const after = await top();
      expect(after.billed).toEqual([{ team: network().team, model: 'sim-gpu', gpuMilliseconds: await billedInStore() }]);
    }),
    240_000,
  );

  it(
    'a consumer held back shows a growing lag that matches JetStream, and it drains once back',
    e2e(async () => {
      await network().kill('ledger', 'SIGTERM');
      const lag = async () => sum(await scrape('placement'), 'gpunet_jetstream_consumer_pending_messages', { consumer: 'ledger' });
      const first = await lag();
      const client = network().client();
      const jobs: string[] = [];
      const samples = [first];
      // Each job adds events the stopped ledger does not take: the lag rises step by step.
      for (let i = 0; i < 3; i++) {
        jobs.push((await client.submit(scriptJob('true', { gpus: 1 }))).jobId);
        const before = samples.at(-1)!;
        samples.push(await until(`the ledger's lag to grow past ${before}`, async () => ((await lag()) > before ? lag() : false), { timeoutMs: 30_000, intervalMs: 200 }));
      }
      expect(samples[3]! - samples[0]!).toBeGreaterThanOrEqual(3);
      // The figure is JetStream's own.
      await until('the metric to equal JetStream\'s num_pending', async () => (await lag()) === (await network().consumerBacklog('ledger')).pending, { timeoutMs: 15_000, intervalMs: 200 });
      expect((await top()).consumers.find((c) => c.consumer === 'ledger')!.pending).toBeGreaterThan(samples[0]!);

      await network().restart('ledger');
      await until('the ledger\'s lag to drain', async () => (await lag()) === 0, { timeoutMs: 60_000, intervalMs: 250 });
      await settle(network(), jobs, { timeoutMs: 90_000 });
      await until('billed GPU-ms to equal the store again', async () => sum(await scrape('ledger'), 'gpunet_billed_gpu_milliseconds_total', { team: network().team }) === (await billedInStore()), { timeoutMs: 30_000, intervalMs: 250 });
    }),
    240_000,
  );

  it(
    'one trace id covers a job from intake through storage, placement and execution to the ledger',
    e2e(async () => {
      expect(completedJob).not.toBe('');
      let services = '';
      const traceId = await until(
        `the spans of ${completedJob} from every service`,
        () => {
          const ofJob = spans.filter((s) => s.attributes['gpunet.job_id'] === completedJob);
          const ids = [...new Set(ofJob.map((s) => s.traceId))];
          if (ids.length !== 1) {
            services = `trace ids of the job's spans: ${ids.join(', ') || 'none yet'}`;
            return false;
          }
          const inTrace = new Set(spans.filter((s) => s.traceId === ids[0]).map((s) => s.service));
          services = [...inTrace].sort().join(', ');
          return ['intake', 'storage', 'placement', 'execution', 'ledger'].every((s) => inTrace.has(s)) && ids[0];
        },
        { timeoutMs: 30_000, intervalMs: 250, describe: () => services },
      );
      const trace = spans.filter((s) => s.traceId === traceId);
      // One root (intake's HTTP request); every other span's parent is in the same trace.
      const ids = new Set(trace.map((s) => s.spanId));
      const roots = trace.filter((s) => !s.parentSpanId);
      expect(roots.map((s) => `${s.service} ${s.name}`)).toEqual(['intake POST /v1/jobs']);
      expect(trace.filter((s) => s.parentSpanId && !ids.has(s.parentSpanId)).map((s) => `${s.service} ${s.name}`)).toEqual([]);
      // The hops: relay publishes, consumer handlers, the node's work and the recorder's record.
      const names = trace.map((s) => `${s.service} ${s.name}`);
      for (const hop of ['intake publish JobSubmitted', 'storage storage process JobSubmitted', 'placement placement process InputsStaged', 'placement placement JobPlaced', 'execution execution-node-', 'execution recorder record ComputeHeld', 'ledger ledger process JobFinished']) {
        expect({ hop, found: names.some((n) => n.startsWith(hop)) }).toEqual({ hop, found: true });
      }
    }),
    60_000,
  );

  it(
    'a message no consumer can read shows as dead letters by consumer and reason',
    e2e(async () => {
      expect(await network().deadLetters()).toBe(0);
      // The operator may publish on the bus: a body that is not an event reaches every events consumer.
      await jetstream(await network().nats()).publish('gpunet.evt.JobSubmitted._._', 'not an event', { msgID: 'observability-garbage', headers: offContract('an unreadable event, to see it dead-lettered') });
      let seen = '';
      await until(
        'the dead letters on /metrics to equal the dead-letter stream',
        async () => {
          const held = await network().deadLetters();
          const placement = await scrape('placement');
          const perConsumer = ['storage', 'placement', 'ledger'].map((c) => sum(placement, 'gpunet_dead_letter_messages', { consumer: c }));
          const counted = (await Promise.all(['storage', 'placement', 'ledger'].map(async (c) => sum(await scrape(c), 'gpunet_dead_letters_total', { consumer: c, reason: 'schema_invalid' })))).reduce((a, n) => a + n, 0);
          seen = `stream ${held}, per consumer ${perConsumer.join('/')}, counted ${counted}, DLQ size ${sum(placement, 'gpunet_jetstream_stream_messages', { stream: 'GPUNET_DLQ' })}`;
          return held === 3 && perConsumer.every((n) => n === 1) && counted === 3 && sum(placement, 'gpunet_jetstream_stream_messages', { stream: 'GPUNET_DLQ' }) === 3;
        },
        { timeoutMs: 30_000, intervalMs: 250, describe: () => seen },
      );
      expect((await top()).consumers.filter((c) => c.deadLetters > 0).map((c) => c.consumer).sort()).toEqual(['ledger', 'placement', 'storage']);
    }),
    60_000,
  );
});

/** Headers that mark a message sent off-contract on purpose (the bus check counts it apart). */
function offContract(why: string): ReturnType<typeof natsHeaders> {
  const h = natsHeaders();
  h.set(OFF_CONTRACT_HEADER, why);
  return h;
}
