import { WORK_STREAM } from '#contracts';
import { loadIdentityFile } from '#identity';
import type { BusEvent } from '#messaging';
import { defineService } from '#service-kit';
import { agentStreamPrefix } from './domain/index.js';
import { ExecutionConfig, workDirOf } from './execution.config.js';
import { ExecutionModule } from './execution.module.js';
import { journalStoreUrl, prepareJournal } from './journal/journal.js';
import { ReportRelay } from './journal/report-relay.js';

/**
 * The ordering key of a work message: its job, except a cancel, which must reach an attempt
 * whose placement handler is still staging (it would otherwise wait behind it).
 */
export function workKey(event: BusEvent | undefined, subject: string): string {
  const job = event?.metadata.jobId;
  if (!job) return subject;
  return event.type === 'JobCancelRequested' ? `cancel:${job}` : job;
}

/**
 * One execution agent process per node: instance = node id. It opens no central store: its
 * journal (`<work-dir>/journal/`) is its store, the report relay sends what it records to the
 * recorder signed with the node key (GPUNET_NATS_NKEY_FILE), and its work comes on its own
 * durable `execution-<nodeId>` of GPUNET_WORK, which the recorder creates when the node is enrolled.
 */
export const executionService = defineService({
  name: 'execution',
  // A node uses the streams the control plane made; it may not change them (deploy/nats-permissions.yaml).
  manageStreams: false,
  config: ExecutionConfig,
  module: ExecutionModule,
  instance: (config) => config.GPUNET_NODE_ID,
  storeUrl: (config) => journalStoreUrl(workDirOf(config)),
  provision: false,
  consumers: (ctx) => [{ durable: `execution-${ctx.config.GPUNET_NODE_ID}`, stream: WORK_STREAM, keyOf: workKey }],
  streamPrefix: (ctx) => agentStreamPrefix(ctx.config.GPUNET_NODE_ID),
  onStart: (ctx) => {
    if (!ctx.config.GPUNET_NATS_NKEY_FILE) {
      throw new Error('GPUNET_NATS_NKEY_FILE is not set: the node key signs every report of this node (make one with `gpunet up`, or an NKey user seed file 0600, and enroll its public key with `gpunet nodes enroll`)');
    }
  },
  relay: (ctx) => {
    let relay: ReportRelay | undefined;
    return {
      // The last journal position the recorder answered for (the kit's relay figures on /metrics).
      get position() {
        return relay?.position ?? 0n;
      },
      start: async () => {
        const identity = await loadIdentityFile(ctx.config.GPUNET_NATS_NKEY_FILE!);
        const { id } = prepareJournal(workDirOf(ctx.config));
        relay = new ReportRelay(ctx.store, ctx.nc, { nodeId: ctx.config.GPUNET_NODE_ID, journal: id, identity }, ctx.logger.child({ part: 'report-relay' }));
        await relay.start();
      },
      stop: async () => {
        await relay?.stop();
      },
    };
  },
});
