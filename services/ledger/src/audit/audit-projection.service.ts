import { TransientError } from '#errors';
import type { EventStore } from '#event-store';
import { EVENT_STORE, LOGGER, StoreFollower } from '#service-kit';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import { foldJobAudits, type JobAuditState } from './audit-projection.js';

/** How long a query waits for the projection to reach the store's head before it fails (retryable). */
const CATCH_UP_TIMEOUT_MS = 10_000;

/** The projection did not reach the store's head in time. Retryable. */
export class AuditProjectionBehindError extends TransientError {
  constructor(position: bigint, head: bigint) {
    super(`the audit projection is at position ${position} and did not reach the store head ${head} within ${CATCH_UP_TIMEOUT_MS} ms; ask again`);
  }
}

/**
 * The audit projection over the whole event store, every service's streams: one record per job,
 * folded at start and kept current by following the store (not the bus: the store is the one
 * ordered log of every service's events). Queries first wait until it holds the store's head,
 * so an answer is the store as of one position, and says which.
 */
@Injectable()
export class AuditProjectionService implements OnModuleInit, OnModuleDestroy {
  private readonly jobs = new Map<string, JobAuditState>();
  private readonly follower: StoreFollower;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.follower = new StoreFollower(store, logger, {
      name: 'audit projection',
      apply: (e) => void foldJobAudits([e], this.jobs, { timeline: false }),
    });
  }

  async onModuleInit(): Promise<void> {
    await this.follower.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.follower.close();
  }

  /** Every job record, once the projection holds everything the store held when called; with that position. */
  async current(): Promise<{ jobs: Iterable<JobAuditState>; asOf: bigint }> {
    const head = await this.store.headPosition();
    if (!(await this.follower.waitFor(head, CATCH_UP_TIMEOUT_MS))) throw new AuditProjectionBehindError(this.follower.position, head);
    return { jobs: this.jobs.values(), asOf: this.follower.position };
  }
}
