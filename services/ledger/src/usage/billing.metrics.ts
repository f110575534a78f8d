import type { UsageRecorded } from '#contracts';
import type { EventStore } from '#event-store';
import { EVENT_STORE, LOGGER, METRICS, StoreFollower } from '#service-kit';
import type { Counter, Metrics } from '#telemetry';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';

/**
 * The ledger's billing figures on `/metrics`, from the store's `UsageRecorded` lines (folded at
 * start, then followed), so they equal what the store holds whichever ledger process recorded
 * them: billed GPU-milliseconds (gpus × billable ms, integers) and charged micro-units per team
 * and GPU model. Divide by 3,600,000 for GPU-hours in a query; the figure itself stays integer.
 * Also the notary's chain checks (`gpunet_chain_verification_failures_total`).
 */
@Injectable()
export class BillingMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly gpuMs: Counter<'team' | 'model'>;
  private readonly micros: Counter<'team' | 'model' | 'currency'>;
  private readonly lines: Counter<'team' | 'model' | 'outcome'>;
  /** ChainBrokenError seen by the notary while extending its digests. */
  readonly chainFailures: Counter;
  readonly digestsSigned: Counter;
  private readonly follower: StoreFollower;

  constructor(@Inject(METRICS) metrics: Metrics, @Inject(EVENT_STORE) store: EventStore, @Inject(LOGGER) logger: Logger) {
    this.gpuMs = metrics.counter({ name: 'gpunet_billed_gpu_milliseconds_total', help: 'Billable GPU time recorded by the ledger (gpus × billable ms of each usage line, waived lines included), by team and GPU model.', labelNames: ['team', 'model'] });
    this.micros = metrics.counter({ name: 'gpunet_billed_amount_micros_total', help: 'Charges of the usage lines in integer micro-units of the currency, by team, GPU model and currency.', labelNames: ['team', 'model', 'currency'] });
    this.lines = metrics.counter({ name: 'gpunet_usage_lines_total', help: 'Usage lines recorded (one per attempt that held compute), by team, GPU model and the attempt\'s outcome.', labelNames: ['team', 'model', 'outcome'] });
    this.chainFailures = metrics.counter({ name: 'gpunet_chain_verification_failures_total', help: 'Times the notary found the store\'s hash chain or its own digests broken (ChainBrokenError) and signed nothing.' });
    this.digestsSigned = metrics.counter({ name: 'gpunet_chain_digests_signed_total', help: 'Chain-head digests the notary signed and recorded.' });
    this.follower = new StoreFollower(store, logger, { name: 'billing metrics', filter: { types: ['UsageRecorded'] }, apply: (e) => this.add(e.data as UsageRecorded) });
  }

  async onModuleInit(): Promise<void> {
    await this.follower.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.follower.close();
  }

  private add(line: UsageRecorded): void {
    const labels = { team: line.team, model: line.gpuModel };
    this.gpuMs.inc(labels, line.gpus * line.billableMs);
    this.micros.inc({ ...labels, currency: line.currency }, line.amountMicros);
    this.lines.inc({ ...labels, outcome: line.outcome });
  }
}
