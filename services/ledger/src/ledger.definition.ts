import { loadIdentityFile } from '#identity';
import { defineService } from '#service-kit';
import { LEDGER_STREAM_PREFIX } from './domain/index.js';
import { LedgerConfig } from './ledger.config.js';
import { LedgerModule } from './ledger.module.js';

/**
 * The ledger process: one durable consumer `ledger` (deploy/topology.yaml) with the kit's durable
 * inbox on the store's database; its relay publishes the `ledger-` streams. With
 * `GPUNET_SIGNING_KEY_FILE` it is also the notary that signs the chain heads (decision 0011).
 * Partitioned (decision 0030): on a network of N > 1 event partitions, one process per partition
 * (`GPUNET_PARTITION=i/N`) consumes `ledger-p<i>`, the events of its jobs; what spans teams and
 * jobs (invoices, the notary, the audit) follows the store, not the bus.
 * Each partition has one leader and any number of standbys (decision 0029): the lease and term of
 * role `ledger-p<i>` (`ledger` unpartitioned), every append of the leader fenced on its term.
 */
export const ledgerService = defineService({
  name: 'ledger',
  config: LedgerConfig,
  module: LedgerModule,
  partitioned: true,
  consumers: ({ partition }) => [{ durable: partition ? `ledger-p${partition.index}` : 'ledger' }],
  streamPrefix: () => LEDGER_STREAM_PREFIX,
  leader: { role: 'ledger', perPartition: true },
  // A signing key file that is missing, not a seed, or readable by others stops the start before
  // anything runs: a notary that silently signs nothing is worse than none (NotaryService). Also a
  // standby's: checked before it waits for the lease, not when it takes over.
  preflight: async ({ config }) => {
    if (config.GPUNET_SIGNING_KEY_FILE) await loadIdentityFile(config.GPUNET_SIGNING_KEY_FILE);
  },
});
