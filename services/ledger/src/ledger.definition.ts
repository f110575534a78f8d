import { defineService } from '#service-kit';
import { LEDGER_STREAM_PREFIX } from './domain/index.js';
import { LedgerConfig } from './ledger.config.js';
import { LedgerModule } from './ledger.module.js';

/**
 * The ledger process: one durable consumer `ledger` (deploy/topology.yaml) with the kit's durable
 * inbox on the store's database; its relay publishes the `ledger-` streams.
 */
export const ledgerService = defineService({
  name: 'ledger',
  config: LedgerConfig,
  module: LedgerModule,
  consumers: () => [{ durable: 'ledger' }],
  streamPrefix: () => LEDGER_STREAM_PREFIX,
});
