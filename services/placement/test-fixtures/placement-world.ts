/**
 * What placement's process-level tests run against: one nats-server, one SQLite store file, the
 * built placement (`node dist/services/placement/src/main.js`) spawned as leader and standbys,
 * and the test itself playing intake, storage and the recorder through its own writer and relays.
 */
import type { EventData, JobSpec } from '#contracts';
import { openEventStore, type EventStore, type RecordedEvent } from '#event-store';
import { OutboxRelay } from '#messaging';
import { EventWriter } from '#service-kit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { startNatsServer, type TestNatsServer } from '../../../test/support/nats-server.js';
import { ServiceProcesses, type ServiceProcess } from '../../../test/support/service-process.js';

const REPO = fileURLToPath(new URL('../../..', import.meta.url));
const MAIN = resolve(REPO, 'dist/services/placement/src/main.js');

/** A node as its registration says: `gpus` A100s, and a hostname when given. */
export interface WorldNode {
  nodeId: string;
  gpus: number;
  hostname?: string;
}

const spec = (): JobSpec => ({
  work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
});

export class PlacementWorld {
  private readonly processes = new ServiceProcesses(MAIN, REPO);

  private constructor(
    readonly nats: TestNatsServer,
    readonly nc: NatsConnection,
    readonly store: EventStore,
    private readonly dir: string,
    private readonly env: Record<string, string>,
    private readonly writer: EventWriter,
    private readonly relays: OutboxRelay[],
  ) {}

  /** Starts the bus and the store, and registers the nodes (a node lease long enough never to lapse here). */
  static async start(nodes: WorldNode[]): Promise<PlacementWorld> {
    const nats = await startNatsServer();
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-placement-world-'));
    const storeUrl = `sqlite:${join(dir, 'events.db')}`;
    const env = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'info', GPUNET_NODE_LEASE_MS: '600000' };
    const store = await openEventStore(storeUrl);
    const writer = new EventWriter(store, 'test', { now: () => new Date() });
    const nc = await connect({ servers: nats.url });
    const quiet = pino({ level: 'silent' });
    const relays = ['intake-', 'storage-', 'execution-'].map((prefix) => new OutboxRelay(store, nc, { name: `test-${prefix}`, filter: { streamPrefix: prefix }, logger: quiet }));
    for (const r of relays) await r.start();
    for (const n of nodes) {
      await writer.append(`execution-node-${n.nodeId}`, [
        {
          type: 'NodeRegistered',
          data: {
            nodeId: n.nodeId,
            ...(n.hostname !== undefined && { hostname: n.hostname }),
            gpus: Array.from({ length: n.gpus }, (_, index) => ({ index, model: 'A100' })),
            simulated: true,
            networkIsolation: false,
            heartbeatIntervalMs: 1_000,
            registeredAt: new Date().toISOString(),
          },
        },
      ]);
    }
    return new PlacementWorld(nats, nc, store, dir, env, writer, relays);
  }

  /** A placement process, leader or standby as the lease decides. */
  spawnPlacement(name: string): ServiceProcess {
    return this.processes.spawn(name, this.env);
  }

  /** A one-GPU job submitted (as intake) with its inputs staged (as storage). */
  async submit(jobId: string): Promise<void> {
    await this.writer.append(`intake-job-${jobId}`, [{ type: 'JobSubmitted', data: { jobId, team: 'team-a', spec: spec(), submittedAt: new Date().toISOString() } }], { expectedRevision: 'no_stream' });
    await this.writer.append(`storage-job-${jobId}`, [{ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: new Date().toISOString() } }]);
  }

  /** The job's JobPlaced, once placement has recorded it. */
  async placed(jobId: string): Promise<RecordedEvent<'JobPlaced', EventData<'JobPlaced'>> | undefined> {
    const placed = (await this.store.readStream(`placement-job-${jobId}`)).find((e) => e.type === 'JobPlaced');
    return placed as RecordedEvent<'JobPlaced', EventData<'JobPlaced'>> | undefined;
  }

  async stop(): Promise<void> {
    this.processes.killAll();
    for (const r of this.relays) await r.stop();
    await this.nc.close();
    await this.store.close();
    await this.nats.stop();
    await rm(this.dir, { recursive: true, force: true });
  }
}
