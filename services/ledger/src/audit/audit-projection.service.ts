import type { AuditJobsFilter, AuditJobSummary } from '#contracts';
import { IllegalStateError, TransientError } from '#errors';
import { projectionTablesOf, type EventStore, type ProjectionCheckpoint, type ProjectionTable } from '#event-store';
import { EVENT_STORE, LOGGER } from '#service-kit';
import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Logger } from 'pino';
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
 * How often the table steps while it is near the head: at most one write transaction this often
 * beside the services' appends (a query does not wait for it: it steps the table itself).
 */
const POLL_MS = 500;
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

/**
 * The audit projection over the whole event store, every service's streams: one record per job,
 * kept in a table of the store's own database (decision 0034) with the position it holds, so a
 * start folds only the events after that position. The records are the pure fold's
 * (audit-projection.ts); the table stores them and the columns the list query needs.
 *
 * Every step reads the table's position, folds the next events onto the rows they concern and
 * commits rows and position together only while the table is still where it read it: any number
 * of ledgers (partitions, a deposed leader still running) may step, and the loser of a race
 * writes nothing and reads the table again. The table is never trusted beyond its position: at
 * start, a position whose event the store does not hold (a table ahead of the store, or another
 * store's) empties it, and it is folded again from the start.
 */
@Injectable()
export class AuditProjectionService implements OnModuleInit, OnModuleDestroy {
  private table: ProjectionTable | undefined;
  private running: Promise<void> | undefined;
  private stepping: Promise<boolean> | undefined;
  private closed = false;
  private wake: (() => void) | undefined;

  constructor(
    @Inject(EVENT_STORE) private readonly store: EventStore,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onModuleInit(): Promise<void> {
    const host = projectionTablesOf(this.store);
    if (!host) throw new IllegalStateError('the audit projection needs a store that keeps projection tables (SQLite or PostgreSQL)');
    const started = Date.now();
    this.table = await host.openProjectionTable(AUDIT_TABLE);
    const from = await this.trusted(this.table);
    // Ready once the tail the store held at start is folded: the first query need not wait long.
    const head = await this.store.headPosition();
    let events = 0;
    for (;;) {
      const cp = await this.table.checkpoint();
      if (cp.position >= head) break;
      events += await this.step();
      await nextTurn();
    }
    this.logger.info({ from: String(from), position: String((await this.table.checkpoint()).position), events, ms: Date.now() - started }, 'audit projection caught up from its table');
    this.running = this.run();
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.running;
    await this.stepping;
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
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    for (;;) {
      const cp = await this.ready().checkpoint();
      if (cp.position >= head) return;
      if (Date.now() >= deadline || this.closed) throw new AuditProjectionBehindError(cp.position, head);
      await this.step();
      await nextTurn();
    }
  }

  /**
   * The table's checkpoint if the store holds its event, else the table emptied (position 0):
   * rows folded from events the store does not hold must not answer for it.
   */
  private async trusted(table: ProjectionTable): Promise<bigint> {
    const cp = await table.checkpoint();
    if (cp.position === 0n) return 0n;
    const [at] = await this.store.readAll({ fromPosition: cp.position - 1n, toPosition: cp.position, maxCount: 1 });
    if (at && at.position === cp.position && at.eventId === cp.eventId) return cp.position;
    this.logger.warn(
      { position: String(cp.position), eventId: cp.eventId, found: at ? at.eventId : null, head: String(await this.store.headPosition()) },
      'the audit table holds a position whose event this store does not hold; folding it again from the start',
    );
    if (!(await table.reset(cp))) return this.trusted(table);
    return 0n;
  }

  /** One step at a time in this process; returns the events folded. */
  private step(): Promise<number> {
    const previous = this.stepping ?? Promise.resolve(false);
    const next = previous.then(() => this.stepOnce());
    this.stepping = next.then(
      () => true,
      () => false,
    );
    return next;
  }

  /** Folds the events after the table's position (at most BATCH) onto their jobs' rows and commits both if the table has not moved. */
  private async stepOnce(): Promise<number> {
    const table = this.ready();
    const from: ProjectionCheckpoint = await table.checkpoint();
    const events = await this.store.readAll({ fromPosition: from.position, maxCount: BATCH });
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
    if (!committed) this.logger.debug({ from: String(from.position) }, 'the audit table moved under this step (another writer); reading it again');
    return committed ? events.length : 0;
  }

  /** Keeps the table near the store's head: steps back to back while a whole batch waits, else one step every POLL_MS. */
  private async run(): Promise<void> {
    while (!this.closed) {
      let pauseMs = POLL_MS;
      try {
        if ((await this.step()) >= BATCH) pauseMs = 0;
      } catch (err) {
        if (this.closed) break;
        this.logger.error({ err }, 'folding the audit table failed; trying again shortly');
        pauseMs = RETRY_MS;
      }
      await nextTurn();
      if (pauseMs > 0 && !this.closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pauseMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  private ready(): ProjectionTable {
    if (!this.table) throw new IllegalStateError('the audit projection is not open yet');
    return this.table;
  }
}
