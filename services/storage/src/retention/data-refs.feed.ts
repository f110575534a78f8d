import type { EventStore } from '#event-store';
import { EVENT_STORE, LOGGER, StoreFollower } from '#service-kit';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { evolve, initialDataRefs, type DataRefs } from '../domain/index.js';

/**
 * Keeps the input reference model ({@link DataRefs}) in memory: folds the whole store at start,
 * before anything is consumed, then follows it. The store rather than the bus: it is one ordered
 * log of every service's events, so a release is never seen before the JobFinished that tells
 * whether the job goes on, and storage's own DataRemoved arrive in the same order.
 */
@Injectable()
export class DataRefsFeed implements OnModuleInit, OnApplicationShutdown {
  readonly model: DataRefs = initialDataRefs();
  private readonly follower: StoreFollower;

  constructor(@Inject(EVENT_STORE) store: EventStore, @Inject(LOGGER) logger: Logger) {
    // The store's own poll interval: whoever needs the model current (a release, a sweep) asks
    // `catchUp`/`waitFor`, which read the store at once, so a faster poll only cost wake-ups.
    this.follower = new StoreFollower(store, logger, { name: 'input references', apply: (e) => evolve(this.model, e) });
  }

  async onModuleInit(): Promise<void> {
    await this.follower.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.follower.close();
  }

  /** Resolves true once the model includes every event up to `position`, or false after `timeoutMs`. */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    return this.follower.waitFor(position, timeoutMs);
  }

  /** Resolves true once the model includes everything the store held when called. */
  catchUp(timeoutMs: number): Promise<boolean> {
    return this.follower.catchUp(timeoutMs);
  }
}
