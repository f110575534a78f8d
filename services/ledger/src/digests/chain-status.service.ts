import type { ChainStatus } from '#contracts';
import type { EventStore } from '#event-store';
import { CLOCK, EVENT_STORE, SERVICE_CONFIG, type Clock } from '#service-kit';
import { Inject, Injectable } from '@nestjs/common';
import type { LedgerConfig } from '../ledger.config.js';
import { ChainVerifier } from './chain-verifier.js';
import { NotaryService } from './notary.service.js';

/**
 * The ledger's one ChainVerifier (its cache is the last verified position and stream heads), with
 * the store's chain key and the public key of this ledger's signing key when it holds one.
 */
@Injectable()
export class ChainStatusService {
  private verifier: ChainVerifier | undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    private readonly notary: NotaryService,
  ) {}

  check(full: boolean): Promise<ChainStatus> {
    // Made at the first question, after the notary has loaded its key.
    this.verifier ??= new ChainVerifier(this.store, { chainKey: this.config.GPUNET_CHAIN_KEY, publicKey: this.notary.publicKey, now: () => this.clock.now() });
    return this.verifier.check(full);
  }
}
