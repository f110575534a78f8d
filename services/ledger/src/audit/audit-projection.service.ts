import type { AuditJobsFilter, AuditJobSummary } from '#contracts';
import { IllegalStateError, TransientError } from '#errors';
import { projectionTablesOf, trustedCheckpoint, type EventStore, type ProjectionCheckpoint, type ProjectionTable, type RecordedEvent } from '#event-store';
import { EVENT_STORE, LOGGER, SERVICE_CONFIG, StoreFollower } from '#service-kit';
import { Inject, Injectable, Optional, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
import type { LedgerConfig } from '../ledger.config.js';
import { emptyJobAudit, evolveJobAudit, isSubmitted, jobIdsOf, jobSummary, matches, type JobAuditState } from './audit-projection.js';
import { AUDIT_TABLE, auditQuery, auditRecordOf, auditRow } from './audit-table.js';

/** How long a query waits for the projection to reach the store's head before it fails (retryable). */
const CATCH_UP_TIMEOUT_MS = 10_000;
/**
 * Most events folded into one transaction of the table. On SQLite a step runs synchronously, so
 * this bounds how long it holds the event loop (lease renewals, queries) at once.
 */
const BATCH = 5_000;
/**
 * How often the follower looks for other processes' appends when no notification comes (the
 * ledger's own appends and, on PostgreSQL, every append wake it at once). Only the table's lag
 * between queries hangs on it: a query steps the table to the head itself.
 */
const FOLLOW_POLL_MS = 1_000;
/**
 * Most events delivered and not yet in the table that are kept for the next step; past it they
 * are dropped and the steps read the store instead, so a long backlog does not sit in memory.
 */
const MAX_PENDING = 4 * BATCH;
/** How long a start may fold before it gives up, without GPUNET_AUDIT_CATCH_UP. */
const START_TIMEOUT_MS = 10 * 60_000;
/** Pause after a failed step before the next. */
const RETRY_MS = 1_000;

/**
 * Lets timers and I/O run between two steps: the SQLite store answers synchronously, so a loop of
 * awaited steps would otherwise never leave the microtask queue — the leader lease would go
 * unrenewed for the whole fold of a large store (decision 0029) and lapse.
 */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The projection did not reach the store's head in time. Retryable. */
export class AuditProjectionBehindError extends TransientError {
  constructor(position: bigint, head: bigint) {
    super(`the audit projection is at position ${position} and did not reach the store head ${head} within ${CATCH_UP_TIMEOUT_MS} ms; ask again`);
  }
}

/** The table did not reach the store's head before the start's deadline. Its progress is kept. */
export class AuditTableStartError extends IllegalStateError {
  constructor(from: bigint, position: bigint, head: bigint, events: number, timeoutMs: number) {
    const s = Math.round(timeoutMs / 1000);
    super(
      `the audit table (projection_audit_jobs) did not reach the store head ${head} within ${s} s of the ledger starting: ` +
        `it folded ${events} events from position ${from} and holds position ${position}. What it folded is kept, so starting the ledger again goes on from ${position}; ` +
        `to fold a large store in one start, raise GPUNET_AUDIT_CATCH_UP (now ${s}s)`,
    );
  }
}

/**
 * The audit projection over the whole event store, every service's streams: one record per job,
 * kept in a table of the store's own database (decision 0034) with the position it holds, so a
 * start folds only the events after that position. The records are the pure fold's
 * (audit-projection.ts); the table stores them and the columns the list query needs.
 *
 * Every step reads the table's position, folds the next events onto the rows they concern and
 * commits rows and position together only while the table is still where it read it: any number
 * of ledgers (partitions, a deposed leader still running) may step, and the loser of a race
 * writes nothing and reads the table again. Between queries a StoreFollower from the table's
 * position delivers the new events and wakes a step (no timer of its own); a query steps the
 * table to the head itself. The table is never trusted beyond its position: at
 * start, a position whose event the store does not hold (a table ahead of the store, or another
 * store's) empties it, and it is folded again from the start.
 */
@Injectable()
export class AuditProjectionService implements OnModuleInit, OnModuleDestroy {
  private table: ProjectionTable | undefined;
  private follower: StoreFollower | undefined;
  /**
   * Every event after `pendingAfter` up to the follower's position, in order, minus those the
   * table already holds: a step whose table is at or past `pendingAfter` folds these instead of
   * reading the store again.
   */
  private pending: RecordedEvent[] = [];
  private pendingAfter = 0n;
  /** The last event the follower delivered, and the table's position as last seen here. */
  private followed = 0n;
  private tableAt = 0n;
  /** The steps the follower woke, while the table is behind it. */
  private stepping: Promise<void> | undefined;
  /** The one step under way in this process. */
  private stepped: Promise<boolean> | undefined;
  private closed = false;
  private readonly startTimeoutMs: number;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(LOGGER) private readonly logger: Logger,
    @Optional() @Inject(SERVICE_CONFIG) config?: Partial<Pick<LedgerConfig, 'GPUNET_AUDIT_CATCH_UP'>>,
  ) {
    this.startTimeoutMs = config?.GPUNET_AUDIT_CATCH_UP ?? START_TIMEOUT_MS;
  }

  async onModuleInit(): Promise<void> {
    const host = projectionTablesOf(this.store);
    if (!host) throw new IllegalStateError('the audit projection needs a store that keeps projection tables (SQLite or PostgreSQL)');
    const started = Date.now();
    this.table = await host.openProjectionTable(AUDIT_TABLE);
    const { position: from } = await trustedCheckpoint(this.store, this.table, async (cp, found) =>
      this.logger.warn(
        { position: String(cp.position), eventId: cp.eventId, found, head: String(await this.store.headPosition()) },
        'the audit table holds a position whose event this store does not hold; folding it again from the start',
      ),
    );
    // Ready once the tail the store held at start is folded: the first query need not wait long.
    const head = await this.store.headPosition();
    const events = await this.fold(head, started + this.startTimeoutMs, (position, folded) => new AuditTableStartError(from, position, head, folded, this.startTimeoutMs));
    const position = (await this.table.checkpoint()).position;
    this.logger.info({ from: String(from), position: String(position), events, ms: Date.now() - started }, 'audit projection caught up from its table');
    this.pendingAfter = position;
    this.followed = position;
    this.tableAt = position;
    this.follower = new StoreFollower(this.store, this.logger, { name: 'audit table', from: position, pollIntervalMs: FOLLOW_POLL_MS, apply: (e) => this.take(e) });
    await this.follower.start();
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    await this.follower?.close();
    await this.stepping;
    await this.stepped;
  }

  /**
   * The list, once the table holds everything the store held when called: a page of summaries
   * and the total, with the position the answer holds (read with the rows, at or past that head).
   */
  async list(filter: AuditJobsFilter): Promise<{ jobs: AuditJobSummary[]; total: number; asOf: bigint }> {
    const table = this.ready();
    const head = await this.store.headPosition();
    await this.reach(head);
    const { query, exact } = auditQuery(filter);
    const answer = await table.query(query);
    const records = answer.rows.map((r) => auditRecordOf(r.doc)).filter(isSubmitted);
    if (exact) return { jobs: records.map(jobSummary), total: answer.total, asOf: answer.checkpoint.position };
    const hits = records.filter((s) => matches(s, filter));
    return { jobs: hits.slice(filter.offset, filter.offset + filter.limit).map(jobSummary), total: hits.length, asOf: answer.checkpoint.position };
  }

  /** Position the table holds now. */
  async position(): Promise<bigint> {
    return (await this.ready().checkpoint()).position;
  }

  /** Folds until the table holds `head`, or fails retryably after CATCH_UP_TIMEOUT_MS. */
  private async reach(head: bigint): Promise<void> {
    await this.fold(head, Date.now() + CATCH_UP_TIMEOUT_MS, (position) => new AuditProjectionBehindError(position, head));
  }

  /** Steps until the table holds `head`; past `deadline` (or once closed) throws `behind(position, events folded)`. */
  private async fold(head: bigint, deadline: number, behind: (position: bigint, events: number) => Error): Promise<number> {
    let events = 0;
    for (;;) {
      const cp = await this.ready().checkpoint();
      if (cp.position >= head) return events;
      if (Date.now() >= deadline || this.closed) throw behind(cp.position, events);
      events += await this.step();
      await nextTurn();
    }
  }

  /**
   * An event the follower delivered (every event, in position order): kept for the next step and
   * a step woken, unless the table is known to hold it already.
   */
  private take(event: RecordedEvent): void {
    this.followed = event.position;
    if (event.position <= this.pendingAfter) return;
    this.pending.push(event);
    if (this.pending.length > MAX_PENDING) {
      // Too far behind to keep: the steps read these from the store.
      this.pendingAfter = event.position;
      this.pending = [];
    }
    this.stepSoon();
  }

  /** Steps while the table is behind the follower (one run at a time); a failed step is tried again after RETRY_MS. */
  private stepSoon(): void {
    if (this.stepping || this.closed) return;
    this.stepping = (async () => {
      try {
        // Leave the follower's turn first: the events it delivers together go into one step.
        await nextTurn();
        while (!this.closed && this.tableAt < this.followed) {
          try {
            await this.step();
          } catch (err) {
            if (this.closed) break;
            this.logger.error({ err }, 'folding the audit table failed; trying again shortly');
            await new Promise((r) => setTimeout(r, RETRY_MS));
          }
          await nextTurn();
        }
      } finally {
        this.stepping = undefined;
      }
    })();
  }

  /** Notes that the table is at `position`, and drops the pending events it holds. */
  private held(position: bigint): void {
    if (position > this.tableAt) this.tableAt = position;
    if (position < this.pendingAfter) return;
    let i = 0;
    while (i < this.pending.length && this.pending[i]!.position <= position) i++;
    this.pending = i === this.pending.length ? [] : this.pending.slice(i);
    this.pendingAfter = position;
  }

  /** One step at a time in this process; returns the events folded. */
  private step(): Promise<number> {
    const previous = this.stepped ?? Promise.resolve(false);
    const next = previous.then(() => this.stepOnce());
    this.stepped = next.then(
      () => true,
      () => false,
    );
    return next;
  }

  /**
   * Folds the events after the table's position (at most BATCH) onto their jobs' rows and commits
   * both if the table has not moved. The events are the follower's when it holds every one after
   * that position, else (a table behind them, or a query ahead of the follower) read from the store.
   */
  private async stepOnce(): Promise<number> {
    const table = this.ready();
    const from: ProjectionCheckpoint = await table.checkpoint();
    this.held(from.position);
    const covered = from.position >= this.pendingAfter && this.pending.length > 0;
    const events = covered ? this.pending.slice(0, BATCH) : await this.store.readAll({ fromPosition: from.position, maxCount: BATCH });
    if (events.length === 0) return 0;
    const ids = [...new Set(events.flatMap((e) => jobIdsOf(e)))];
    const docs = await table.get(ids);
    const records = new Map<string, JobAuditState>();
    for (const id of ids) {
      const doc = docs.get(id);
      records.set(id, doc === undefined ? emptyJobAudit(id, { timeline: false }) : auditRecordOf(doc));
    }
    // The fold skips what a record already holds (its lastPosition): a row read after another
    // writer moved the table is still a correct start, and the commit below fails anyway.
    for (const e of events) for (const id of jobIdsOf(e)) evolveJobAudit(records.get(id)!, e);
    const last = events[events.length - 1]!;
    const committed = await table.commit(from, { position: last.position, eventId: last.eventId }, [...records.values()].map(auditRow));
    if (!committed) {
      this.logger.debug({ from: String(from.position) }, 'the audit table moved under this step (another writer); reading it again');
      return 0;
    }
    this.held(last.position);
    return events.length;
  }

  private ready(): ProjectionTable {
    if (!this.table) throw new IllegalStateError('the audit projection is not open yet');
    return this.table;
  }
}
