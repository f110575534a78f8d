// Run on a host of the multi-host tier (`ip netns exec … node nats-probe.mjs <op> <json>`): a client
// of the NATS cluster as a process on that host would be. Prints one JSON line; exit 0 when the
// operation did what was asked, 1 otherwise. Operations retry until their deadline, never sleep
// for a fixed time: a cluster electing a leader answers "no responders" or a timeout meanwhile.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import net from 'node:net';

const [op, raw] = process.argv.slice(2);
const args = JSON.parse(raw ?? '{}');
const deadline = Date.now() + (args.timeoutMs ?? 30_000);

async function retry(what, fn) {
  let last;
  for (let delay = 50; Date.now() < deadline; delay = Math.min(delay * 2, 500)) {
    try {
      return await fn();
    } catch (err) {
      last = err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
  throw new Error(`${what}: ${last?.message ?? 'deadline passed'}`);
}

function clusterOf(info) {
  const c = info.cluster ?? {};
  return { leader: c.leader ?? null, replicas: (c.replicas ?? []).map((r) => ({ name: r.name, current: r.current, lag: r.lag ?? 0 })) };
}

async function main() {
  if (op === 'tcp') {
    // A plain TCP connection: whether this host reaches host:port at all.
    const result = await new Promise((resolve) => {
      const s = net.connect({ host: args.host, port: args.port });
      const timer = setTimeout(() => (s.destroy(), resolve('timeout')), args.connectMs ?? 2_000);
      s.once('connect', () => (clearTimeout(timer), s.destroy(), resolve('connected')));
      s.once('error', (err) => (clearTimeout(timer), resolve(err.code ?? err.message)));
    });
    return { result };
  }
  const nc = await retry('connect', () => connect({ servers: args.servers, timeout: 2_000, maxReconnectAttempts: -1, reconnectTimeWait: 100 }));
  try {
    // Asks the JetStream API at once: while the cluster elects a meta leader it times out.
    const jsm = await retry('jetstream', () => jetstreamManager(nc, { timeout: 5_000 }));
    const js = jetstream(nc, { timeout: 5_000 });
    switch (op) {
      case 'create': {
        await retry('create stream', async () => {
          try {
            await jsm.streams.info(args.stream);
          } catch {
            await jsm.streams.add({ name: args.stream, subjects: [`${args.stream.toLowerCase()}.>`], num_replicas: args.replicas ?? 3 });
          }
        });
        const info = await retry('stream info', () => jsm.streams.info(args.stream));
        return { numReplicas: info.config.num_replicas, ...clusterOf(info) };
      }
      case 'publish': {
        let seq = 0;
        for (let i = 0; i < (args.count ?? 1); i++) {
          const ack = await retry('publish', () => js.publish(`${args.stream.toLowerCase()}.m`, `message ${i}`, { msgID: `${args.id ?? 'm'}-${i}` }));
          seq = ack.seq;
        }
        return { seq, server: nc.info?.server_name };
      }
      case 'info': {
        // Until every replica is current (when asked), else the first answer.
        return await retry('replicas current', async () => {
          const info = await jsm.streams.info(args.stream);
          const c = clusterOf(info);
          if (args.allCurrent && (c.leader === null || c.replicas.length !== (info.config.num_replicas ?? 1) - 1 || c.replicas.some((r) => !r.current || r.lag > 0))) throw new Error(`not all current: ${JSON.stringify(c)}`);
          return { messages: info.state.messages, lastSeq: info.state.last_seq, ...c };
        });
      }
      case 'read': {
        const c = await retry('consumer', async () => {
          await jsm.consumers.add(args.stream, { durable_name: args.consumer, ack_policy: 'explicit' }).catch(() => undefined);
          return js.consumers.get(args.stream, args.consumer);
        });
        const got = [];
        while (got.length < args.count && Date.now() < deadline) {
          const batch = await c.fetch({ max_messages: args.count - got.length, expires: 2_000 });
          for await (const m of batch) {
            got.push(m.string());
            m.ack();
          }
        }
        return { messages: got };
      }
      default:
        throw new Error(`unknown operation ${op}`);
    }
  } finally {
    await nc.close();
  }
}

main().then(
  (out) => {
    process.stdout.write(`${JSON.stringify({ ok: true, ...out })}\n`);
  },
  (err) => {
    process.stdout.write(`${JSON.stringify({ ok: false, error: err.message })}\n`);
    process.exitCode = 1;
  },
);
