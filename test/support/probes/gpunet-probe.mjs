// Run on a host of the multi-host tier (`ip netns exec … node gpunet-probe.mjs <op> <json>`): the
// operator's side of a gpunet network spread over hosts, as a process on one of them, using the
// CLI's own code from dist/ (`npm run build` first). Prints one JSON line; exit 0 when the
// operation did what was asked, 1 otherwise.
//   streams  { servers, keyFile, topologyFile, timeoutMs }     the topology's streams, made as the operator
//            once the cluster can take them (as `gpunet up --cluster` does)
//   buckets  { servers, keyFile, teams }                       each team's blob bucket, made as the operator
//   healthy  { servers, keyFile, services, agents, timeoutMs } every process answered its health query
//   load     { urls, apiKey, team, spec, jobs, concurrency }   a producer's steady submits over HTTP, spread
//            over the intake URLs: a warm-up job per URL waited for, then the jobs; the start time, each
//            submit's latency (ms) and the job ids
//   steady   { urls, apiKey, team, spec, rate, seconds, retryMs } submits paced at `rate` per second for
//            `seconds`, each retried with its own idempotency key (the same job, never a second) until
//            accepted or `retryMs` passed: the start, latencies of accepted submits, the job ids,
//            how many tries failed and how many submits were given up
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const [op, raw] = process.argv.slice(2);
const args = JSON.parse(raw ?? '{}');
const dist = (path) => import(join(process.cwd(), 'dist', path));

async function main() {
  if (op === 'streams') {
    const { provisionStreams } = await dist('libs/cli/src/commands/up.js');
    await provisionStreams(args.servers.join(','), args.keyFile, args.topologyFile, { timeoutMs: args.timeoutMs ?? 60_000, check: () => undefined });
    return { topologyFile: args.topologyFile };
  }
  if (op === 'buckets') {
    const [{ connect }, { natsAuthOptions }, { BlobStore }] = await Promise.all([
      import('@nats-io/transport-node'),
      dist('libs/identity/src/index.js'),
      dist('libs/blobs/src/index.js'),
    ]);
    const nc = await connect({ ...(await natsAuthOptions(args.keyFile)), servers: args.servers, name: 'gpunet-probe', noAsyncTraces: true, timeout: 30_000 });
    try {
      const blobs = await BlobStore.open(nc, { replicas: args.replicas ?? 1 });
      for (const team of args.teams) await blobs.ensureBucket(team);
    } finally {
      await nc.close();
    }
    return { teams: args.teams };
  }
  if (op === 'healthy') {
    const { waitHealthy } = await dist('libs/cli/src/local/health.js');
    await waitHealthy(args.servers.join(','), { services: args.services, agents: args.agents }, { keyFile: args.keyFile, timeoutMs: args.timeoutMs ?? 60_000 });
    return { healthy: [...args.services, ...args.agents] };
  }
  if (op === 'load') {
    const { GpunetClient } = await dist('libs/sdk/src/index.js');
    const clients = args.urls.map((baseUrl) => new GpunetClient({ baseUrl, apiKey: args.apiKey, team: args.team }));
    // One warm-up job through each intake replica, waited for: each is ready before the clock.
    for (const client of clients) {
      const warm = await client.submit(args.spec);
      await client.waitFor(warm.jobId, { timeoutMs: 60_000 });
    }
    const latencies = [];
    const jobIds = [];
    const t0 = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < args.jobs) {
        const client = clients[next++ % clients.length];
        const s = performance.now();
        const reply = await client.submit(args.spec);
        latencies.push(performance.now() - s);
        jobIds.push(reply.jobId);
      }
    };
    await Promise.all(Array.from({ length: Math.min(args.concurrency, args.jobs) }, worker));
    return { t0, submittedMs: Date.now() - t0, latencies, jobIds };
  }
  if (op === 'steady') {
    const { GpunetClient } = await dist('libs/sdk/src/index.js');
    const { randomUUID } = await import('node:crypto');
    const clients = args.urls.map((baseUrl) => new GpunetClient({ baseUrl, apiKey: args.apiKey, team: args.team }));
    const latencies = [];
    const jobIds = [];
    let failedTries = 0;
    let givenUp = 0;
    const t0 = Date.now();
    const total = Math.round(args.rate * args.seconds);
    const submitOne = async (i) => {
      const key = randomUUID();
      const started = performance.now();
      const deadline = Date.now() + (args.retryMs ?? 120_000);
      for (let attempt = 0, delay = 200; ; attempt++, delay = Math.min(delay * 2, 2_000)) {
        try {
          // A retry goes to the next intake, as a load balancer would send it.
          const reply = await clients[(i + attempt) % clients.length].submit(args.spec, { idempotencyKey: key });
          latencies.push(performance.now() - started);
          jobIds.push(reply.jobId);
          return;
        } catch {
          failedTries++;
          if (Date.now() > deadline) {
            givenUp++;
            return;
          }
          await new Promise((r) => setTimeout(r, delay));
        }
      }
    };
    const inFlight = [];
    for (let i = 0; i < total; i++) {
      // Paced by the clock, not by the replies: a slow intake does not slow the offered load.
      const due = t0 + (i * 1000) / args.rate;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      inFlight.push(submitOne(i));
    }
    await Promise.all(inFlight);
    return { t0, submittedMs: Date.now() - t0, latencies, jobIds, failedTries, givenUp };
  }
  throw new Error(`unknown operation ${op}`);
}

main().then(
  (r) => {
    process.stdout.write(`${JSON.stringify({ ok: true, ...r })}\n`);
    process.exit(0);
  },
  (err) => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: err.message })}\n`);
    process.exit(1);
  },
);
