import type { UsageRecorded } from '#contracts';
import { SnapshotSlot, type EventStore, type ProjectionCheckpoint } from '#event-store';
import { EVENT_STORE, LOGGER, METRICS, StoreFollower } from '#service-kit';
import type { Counter, Metrics } from '#telemetry';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';

/** The snapshot of the billing figures (decision 0037's facility): name and format. */
export const BILLING_METRICS_SNAPSHOT = 'billing_metrics';
const SNAPSHOT_FORMAT = 1;
/** How often the figures' snapshot is brought up to date while running (it is a few hundred bytes). */
const SNAPSHOT_EVERY_MS = 30_000;

/** The totals of one team, GPU model, currency and outcome: what every counter is a sum of. */
interface Totals {
  team: string;
  model: string;
  currency: string;
  outcome: string;
  gpuMs: number;
  micros: number;
  lines: number;
}

/**
 * The ledger's billing figures on `/metrics`, from the store's `UsageRecorded` lines (folded at
 * start, then followed), so they equal what the store holds whichever ledger process recorded
 * them: billed GPU-milliseconds (gpus × billable ms, integers) and charged micro-units per team
 * and GPU model. Divide by 3,600,000 for GPU-hours in a query; the figure itself stays integer.
 * Also the notary's chain checks (`gpunet_chain_verification_failures_total`).
 *
 * The totals are kept in a snapshot in the store's database with the position of the last line
 * they include, so a start folds only the lines after it (a million jobs' lines took 93 s to
 * fold). A snapshot the store does not vouch for, or of another format, is ignored with a log
 * line and the figures are folded from the start.
 */
@Injectable()
export class BillingMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly gpuMs: Counter<'team' | 'model'>;
  private readonly micros: Counter<'team' | 'model' | 'currency'>;
  private readonly lines: Counter<'team' | 'model' | 'outcome'>;
  /** ChainBrokenError seen by the notary while extending its digests. */
  readonly chainFailures: Counter;
  readonly digestsSigned: Counter;
  private follower: StoreFollower | undefined;
  private readonly totals = new Map<string, Totals>();
  private slot: SnapshotSlot | undefined;
  /** The last line folded, and where the stored snapshot is (as far as this process knows). */
  private folded: ProjectionCheckpoint = { position: 0n, eventId: null };
  private stored: ProjectionCheckpoint = { position: 0n, eventId: null };
  private timer: NodeJS.Timeout | undefined;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    @Inject(METRICS) metrics: Metrics,
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.gpuMs = metrics.counter({ name: 'gpunet_billed_gpu_milliseconds_total', help: 'Billable GPU time recorded by the ledger (gpus × billable ms of each usage line, waived lines included), by team and GPU model.', labelNames: ['team', 'model'] });
    this.micros = metrics.counter({ name: 'gpunet_billed_amount_micros_total', help: 'Charges of the usage lines in integer micro-units of the currency, by team, GPU model and currency.', labelNames: ['team', 'model', 'currency'] });
    this.lines = metrics.counter({ name: 'gpunet_usage_lines_total', help: 'Usage lines recorded (one per attempt that held compute), by team, GPU model and the attempt\'s outcome.', labelNames: ['team', 'model', 'outcome'] });
    this.chainFailures = metrics.counter({ name: 'gpunet_chain_verification_failures_total', help: 'Times the notary found the store\'s hash chain or its own digests broken (ChainBrokenError) and signed nothing.' });
    this.digestsSigned = metrics.counter({ name: 'gpunet_chain_digests_signed_total', help: 'Chain-head digests the notary signed and recorded.' });
  }

  async onModuleInit(): Promise<void> {
    await this.restore();
    this.follower = new StoreFollower(this.store, this.logger, {
      name: 'billing metrics',
      filter: { types: ['UsageRecorded'] },
      from: this.folded.position,
      apply: (e) => {
        this.addLine(e.data as UsageRecorded);
        this.folded = { position: e.position, eventId: e.eventId };
      },
    });
    await this.follower.start();
    await this.snapshot();
    this.timer = setInterval(() => void this.snapshot(), SNAPSHOT_EVERY_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.follower?.close();
    await this.snapshot();
  }

  /** Brings the stored snapshot up to the last line folded, by compare and set; never throws. */
  snapshot(): Promise<void> {
    this.saving = this.saving.then(async () => {
      if (!this.slot || this.folded.position <= this.stored.position) return;
      const to = this.folded;
      try {
        if (await this.slot.save(this.stored, to, this.encode())) this.stored = to;
        // Another ledger process moved it: learn where it is, and go on from there next time.
        else this.stored = await this.slot.checkpoint();
      } catch (err) {
        this.logger.warn({ err, position: to.position.toString() }, 'could not save the billing figures\' snapshot; the next start folds more lines');
      }
    });
    return this.saving;
  }

  /** Loads a trusted snapshot into the counters; otherwise they start from zero. */
  private async restore(): Promise<void> {
    try {
      this.slot = await SnapshotSlot.open(this.store, BILLING_METRICS_SNAPSHOT, SNAPSHOT_FORMAT);
      const snapshot = await this.slot?.load((why) =>
        this.logger.warn({ reason: why.reason, position: why.checkpoint.position.toString() }, `billing figures' snapshot ignored, folding every usage line: ${why.detail}`),
      );
      if (!snapshot) return;
      const totals = decodeTotals(snapshot.parts.join(''));
      for (const t of totals) this.add(t);
      this.folded = snapshot.checkpoint;
      this.stored = snapshot.checkpoint;
    } catch (err) {
      this.logger.warn({ err }, 'billing figures\' snapshot unreadable, folding every usage line');
    }
  }

  private addLine(line: UsageRecorded): void {
    this.add({ team: line.team, model: line.gpuModel, currency: line.currency, outcome: line.outcome, gpuMs: line.gpus * line.billableMs, micros: line.amountMicros, lines: 1 });
  }

  private add(t: Totals): void {
    const labels = { team: t.team, model: t.model };
    this.gpuMs.inc(labels, t.gpuMs);
    this.micros.inc({ ...labels, currency: t.currency }, t.micros);
    this.lines.inc({ ...labels, outcome: t.outcome }, t.lines);
    const key = JSON.stringify([t.team, t.model, t.currency, t.outcome]);
    const sum = this.totals.get(key);
    if (sum) {
      sum.gpuMs += t.gpuMs;
      sum.micros += t.micros;
      sum.lines += t.lines;
    } else this.totals.set(key, { ...t });
  }

  private encode(): string {
    return encodeTotals([...this.totals.values()]);
  }
}

/** The snapshot's text: the totals in key order, one array each. */
export function encodeTotals(totals: readonly Totals[]): string {
  const rows = totals.map((t) => [t.team, t.model, t.currency, t.outcome, t.gpuMs, t.micros, t.lines] as const);
  rows.sort((a, b) => (JSON.stringify(a.slice(0, 4)) < JSON.stringify(b.slice(0, 4)) ? -1 : 1));
  return JSON.stringify(rows);
}

/** {@link encodeTotals}'s text back; throws on anything else. */
export function decodeTotals(text: string): Totals[] {
  const rows: unknown = JSON.parse(text);
  if (!Array.isArray(rows)) throw new Error('not a list of totals');
  return rows.map((r: unknown) => {
    if (!Array.isArray(r) || r.length !== 7) throw new Error(`not a row of totals: ${JSON.stringify(r)}`);
    const [team, model, currency, outcome, gpuMs, micros, lines] = r as unknown[];
    const strings = [team, model, currency, outcome].every((s) => typeof s === 'string');
    const counts = [gpuMs, micros, lines].every((n) => Number.isSafeInteger(n) && (n as number) >= 0);
    if (!strings || !counts) throw new Error(`not a row of totals: ${JSON.stringify(r)}`);
    return { team, model, currency, outcome, gpuMs, micros, lines } as Totals;
  });
}
