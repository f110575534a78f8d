import { parseTopology, provision, standingConsumers, type TopologyFileDefinition } from '#messaging';
import { jetstreamManager, type ConsumerInfo } from '@nats-io/jetstream';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import { parse as parseYaml } from 'yaml';
import type { CommandContext } from '../context.js';
import { UsageError } from '../errors.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { repoRoot } from '../local/environment.js';
import { operatorConnection, type NodesOptions } from './nodes.js';

export interface RecreateStreamOptions extends NodesOptions {
  topology?: string;
}

/**
 * `gpunet nats recreate-stream <name>` (operator): deletes a stream of the topology file and
 * makes it again as the file defines it, with the durables it keeps messages for (decision
 * 0038). For what the server cannot change on an existing stream, such as GPUNET_EVENTS' retention
 * after an upgrade. Only with every gpunet service stopped and every durable on the stream caught
 * up: a message that a durable has not acknowledged would be lost with the stream, so the command
 * refuses, naming the durable, while one is behind or a process still pulls from it.
 */
export async function natsRecreateStream(ctx: CommandContext, name: string, opts: RecreateStreamOptions): Promise<ExitCode> {
  const file = opts.topology ? resolve(ctx.io.cwd, opts.topology) : (ctx.io.env.GPUNET_TOPOLOGY_FILE ?? join(repoRoot(), 'deploy', 'topology.yaml'));
  const raw = (parseYaml(await readFile(file, 'utf8')) ?? {}) as TopologyFileDefinition;
  const partitions = typeof raw.eventPartitions === 'number' ? raw.eventPartitions : 1;
  const topology = parseTopology({ streams: raw.streams ?? [], standing: standingConsumers(raw, partitions) }, file);
  const stream = topology.streams.find((s) => s.name === name);
  if (!stream) {
    throw new UsageError(`no stream ${name} in ${file}`, [{ path: 'name', message: `not one of ${topology.streams.map((s) => s.name).join(', ')}`, fix: 'name a stream of the topology file, e.g. GPUNET_EVENTS' }]);
  }
  const nc = await operatorConnection(ctx, opts);
  try {
    const jsm = await jetstreamManager(nc);
    const before = await jsm.streams.info(name);
    const consumers: ConsumerInfo[] = [];
    for await (const c of jsm.consumers.list(name)) consumers.push(c);
    const behind = consumers.filter((c) => c.num_pending > 0 || c.num_ack_pending > 0);
    const pulling = consumers.filter((c) => c.num_waiting > 0);
    if (behind.length > 0 || pulling.length > 0) {
      throw new UsageError(`stream ${name} was left as it is: deleting it now would lose messages`, [
        ...behind.map((c) => ({
          path: `consumer ${c.name}`,
          message: `has ${c.num_pending} message(s) not yet delivered and ${c.num_ack_pending} not yet acknowledged`,
          fix: 'start the services so that it catches up, stop them again, then run this again',
        })),
        ...pulling.map((c) => ({ path: `consumer ${c.name}`, message: `a process is still pulling from it (${c.num_waiting} open request(s))`, fix: 'stop every gpunet service first (an open request lasts at most 5 s after its process stops)' })),
      ]);
    }
    await jsm.streams.delete(name);
    const report = await provision(jsm, { streams: [stream], standing: topology.standing.filter((c) => c.stream === name) }, { serverVersion: nc.info?.version, serverInfo: nc.info, logger: pino({ level: 'silent' }) });
    const after = await jsm.streams.info(name);
    const made = report.consumers.filter((c) => c.action === 'created').map((c) => c.durable);
    ctx.out.doc({ stream: name, deletedMessages: before.state.messages, deletedConsumers: consumers.map((c) => c.name), retention: { before: before.config.retention, after: after.config.retention }, standing: made });
    ctx.out.line(
      `stream ${name} made again from ${file}: retention ${before.config.retention} → ${after.config.retention}; ${before.state.messages} message(s) every durable had acknowledged deleted with it` +
        (made.length > 0 ? `; durables it keeps messages for: ${made.join(', ')}` : '') +
        '. Start the services: each makes its own durable again.',
    );
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
