import type { EventStore, RecordedEvent, Subscription } from '#event-store';
import { EVENT_STORE, LOGGER } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { evolve, initialDataRefs, type DataRefs } from '../domain/index.js';

/** Events read per batch while folding the store at start. */
const FOLD_BATCH = 5_000;
/** Pause before following the store again after the subscription failed. */
const RESUBSCRIBE_DELAY_MS = 1_000;
/** How often to look for new events when no notification arrives (SQLite polls). */
const POLL_MS = 50;

/**
 * Keeps the input reference model ({@link DataRefs}) in memory: folds the whole store at start,
 * before anything is consumed, then follows it. The store rather than the bus: it is one ordered
 * log of every service's events, so a release is never seen before the JobFinished that tells
 * whether the job goes on, and storage's own DataRemoved arrive in the same order.
 */
@Injectable()
export class DataRefsFeed implements OnModuleInit, OnApplicationShutdown {
  readonly model: DataRefs = initialDataRefs();
  private position = 0n;
  private subscription: Subscription | undefined;
  private following: Promise<void> | undefined;
  private closed = false;
  private waiters: { position: bigint; resolve: (reached: boolean) => void }[] = [];

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const started = Date.now();
    let events = 0;
    for (;;) {
      const batch = await this.store.readAll({ fromPosition: this.position, maxCount: FOLD_BATCH });
      if (batch.length === 0) break;
      for (const e of batch) this.apply(e);
      events += batch.length;
    }
    this.logger.info({ jobs: this.model.jobs.size, events, position: String(this.position), ms: Date.now() - started }, 'input references folded from the store');
    this.following = this.follow();
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await this.subscription?.close();
    await this.following;
    for (const w of this.waiters.splice(0)) w.resolve(false);
  }

  /** Resolves true once the model includes every event up to `position`, or false after `timeoutMs`. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.position >= position) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      const waiter = {
        position,
        resolve: (reached: boolean) => {
          clearTimeout(timer);
          resolve(reached);
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** Resolves true once the model includes everything the store held when called. */
  async catchUp(timeoutMs: number): Promise<boolean> {
    return this.waitFor(await this.store.headPosition(), timeoutMs);
  }

  private apply(event: RecordedEvent): void {
    if (event.position <= this.position) return;
    evolve(this.model, event);
    this.position = event.position;
    if (this.waiters.length > 0) {
      const ready = this.waiters.filter((w) => w.position <= this.position);
      if (ready.length > 0) {
        this.waiters = this.waiters.filter((w) => w.position > this.position);
        for (const w of ready) w.resolve(true);
      }
    }
  }

  private async follow(): Promise<void> {
    while (!this.closed) {
      const subscription = this.store.subscribeToAll({ fromPosition: this.position, batchSize: 1_000, pollIntervalMs: POLL_MS });
      this.subscription = subscription;
      try {
        for await (const event of subscription) this.apply(event);
        if (this.closed) break;
        throw new Error('the store subscription ended');
      } catch (err) {
        if (this.closed) break;
        this.logger.error({ err, position: String(this.position) }, 'following the store failed; following again shortly');
        await subscription.close().catch(() => undefined);
        await new Promise((r) => setTimeout(r, RESUBSCRIBE_DELAY_MS));
      }
    }
  }
}
