// Run on a host of the multi-host tier (`ip netns exec … node gpunet-probe.mjs <op> <json>`): the
// operator's side of a gpunet network spread over hosts, as a process on one of them, using the
// CLI's own code from dist/ (`npm run build` first). Prints one JSON line; exit 0 when the
// operation did what was asked, 1 otherwise.
//   buckets  { servers, keyFile, teams }                       each team's blob bucket, made as the operator
//   healthy  { servers, keyFile, services, agents, timeoutMs } every process answered its health query
import { join } from 'node:path';

const [op, raw] = process.argv.slice(2);
const args = JSON.parse(raw ?? '{}');
const dist = (path) => import(join(process.cwd(), 'dist', path));

async function main() {
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
