import { DIGEST_STREAM, type ChainHeadsSigned, type SignChainHeadsReply } from '#contracts';
import { IllegalStateError } from '#errors';
import { WrongExpectedVersionError, type EventStore } from '#event-store';
import { loadIdentityFile } from '#identity';
import { CLOCK, EVENT_STORE, EVENT_WRITER, LOGGER, SERVICE_CONFIG, type Clock, type EventWriter } from '#service-kit';
import { Inject, Injectable, type OnApplicationBootstrap, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import type { LedgerConfig } from '../ledger.config.js';
import { BillingMetrics } from '../usage/billing.metrics.js';
import { ChainBrokenError, Notary } from './store-digests.js';

/**
 * The notary: signs the chain heads with the network signing key (`GPUNET_SIGNING_KEY_FILE`)
 * every `GPUNET_DIGEST_INTERVAL` when the store moved, once at start, and on demand
 * (`SignChainHeads`), recording each digest as `ChainHeadsSigned` in `ledger-digests`. A ledger
 * without the key signs nothing. Appends carry the expected revision of `ledger-digests`, so two
 * ledgers holding the key still write one chain of digests: the loser re-reads and signs again.
 */
@Injectable()
export class NotaryService implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private notary: Notary | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SignChainHeadsReply> | undefined;
  /** Set when the ledger stops: a pass ends after the digest in hand instead of signing on to the head. */
  private stopping = false;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(EVENT_WRITER) private readonly writer: EventWriter,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SERVICE_CONFIG) private readonly config: LedgerConfig,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly metrics: BillingMetrics,
  ) {}

  /** Loads the key before anything starts: a bad key file stops the start (a notary that silently signs nothing is worse than none). */
  async onModuleInit(): Promise<void> {
    const file = this.config.GPUNET_SIGNING_KEY_FILE;
    if (!file) return;
    const identity = await loadIdentityFile(file);
    this.notary = new Notary(this.store, identity, this.config.GPUNET_CHAIN_KEY);
    this.notary.onRefold = (why) => this.logger.warn({ why }, 'notary: its table of heads does not hold what the signed digests say; folding it again from them');
  }

  /** The network public key this ledger signs with (undefined without a signing key). */
  get publicKey(): string | undefined {
    return this.notary?.publicKey;
  }

  onApplicationBootstrap(): void {
    if (!this.notary) {
      this.logger.info('no GPUNET_SIGNING_KEY_FILE: this ledger signs no chain heads');
      return;
    }
    this.logger.info({ publicKey: this.notary.publicKey, intervalMs: this.config.GPUNET_DIGEST_INTERVAL }, 'notary: signing chain heads');
    void this.tick();
    this.timer = setInterval(() => void this.tick(), this.config.GPUNET_DIGEST_INTERVAL);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async tick(): Promise<void> {
    await this.sign().catch((err: unknown) => {
      const level = err instanceof ChainBrokenError ? 'fatal' : 'error';
      if (err instanceof ChainBrokenError) this.metrics.chainFailures.inc();
      this.logger[level]({ err, ...(err instanceof ChainBrokenError ? { position: err.position.toString(), streamId: err.streamId } : {}) }, 'notary: chain heads not signed; the next pass tries again');
    });
  }

  /** Signs the heads now when the store moved; one pass at a time (a second caller shares it). */
  sign(): Promise<SignChainHeadsReply> {
    const notary = this.notary;
    if (!notary) {
      return Promise.reject(new IllegalStateError('this ledger holds no signing key: start the ledger with GPUNET_SIGNING_KEY_FILE=<seed file> (gpunet up does) to sign chain heads'));
    }
    this.running ??= this.pass(notary).finally(() => (this.running = undefined));
    return this.running;
  }

  /** Signs until the digest covers the head seen (more than one when more streams moved than one digest lists). */
  private async pass(notary: Notary): Promise<SignChainHeadsReply> {
    let signed: ChainHeadsSigned | undefined;
    for (let conflicts = 0; ; ) {
      // A first pass over a large store signs many digests; a stopping ledger must not wait for all
      // of them (the next leader's pass goes on from the last one recorded).
      if (this.stopping) return signed ? { signed: true, digest: signed } : { signed: false, digest: notary.latest ?? null };
      const next = await notary.next(this.clock.now().toISOString());
      if (!next) return signed ? { signed: true, digest: signed } : { signed: false, digest: notary.latest ?? null };
      try {
        await this.writer.append(DIGEST_STREAM, [{ type: 'ChainHeadsSigned', data: next.digest }], { expectedRevision: Notary.expectedRevision(next.digest) });
        this.logSigned(next.digest);
        this.metrics.digestsSigned.inc();
        await notary.sync();
        signed = next.digest;
        if (!next.partial) return { signed: true, digest: signed };
      } catch (err) {
        if (!(err instanceof WrongExpectedVersionError) || ++conflicts > 3) throw err;
        this.logger.info({ sequence: next.digest.sequence }, 'notary: another ledger signed meanwhile; signing again over its digest');
      }
    }
  }

  private logSigned(d: ChainHeadsSigned): void {
    this.logger.info({ sequence: d.sequence, position: d.position, streams: d.streams, changed: d.heads.length, headsRoot: d.headsRoot }, 'notary: chain heads signed');
  }
}
