import type { JobView, ListJobsReply } from '#contracts';
import { IllegalStateError } from '#errors';
import { commitForward, projectionTablesOf, trustedCheckpoint, type EventStore, type ProjectionCheckpoint, type ProjectionTable, type RecordedEvent, type Subscription } from '#event-store';
import { followStore, PositionWaiters } from '#service-kit';
import type { Logger } from 'pino';
import { evolveJob, isFinalState, jobIdOf, toSummary, type JobRecord } from '../domain/job-view.js';
import { decidedByColumns, encodeCursor, pageOf, stateCounts, teamCounts, type ListQuery } from '../domain/job-views.js';
import { JOB_VIEWS_TABLE, jobRecordOf, jobViewRow, listConditions } from './job-views.table.js';

type Watcher = (view: JobView) => void;

export interface JobViewsFeedOptions {
  /** Records of jobs not final kept in memory besides those not yet written to the table. Default 10,000. */
  cacheSize?: number;
  /** How often what was folded is written to the table when little happens. Default 500 ms. */
  commitEveryMs?: number;
}

/** Events read per batch while catching up. */
const BATCH = 5_000;
/** Changed records that make a write at once rather than at the next tick. */
const COMMIT_ROWS = 2_000;
/** Pause before following again after the subscription failed. */
const RESUBSCRIBE_MS = 1_000;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The job views, kept in a projection table of the store's own database (decision 0035) with
 * the position they hold. `start()` folds the events after the table's position (a restart reads
 * only the tail), then follows the store with `subscribeToAll`: each event is folded with
 * `evolveJob` onto its job's record — from a bounded cache of recent records, else read from the
 * table — and the changed records are written to the table with the new position at most every
 * `commitEveryMs` (compare and set: when another intake moved the table, this one writes from
 * where it now is, or nothing when the table already holds as much). A final job's record leaves
 * memory once the table holds it; reads and lists go to the table.
 */
export class JobViewsFeed {
  private table: ProjectionTable | undefined;
  /** The last event folded here. */
  private applied: ProjectionCheckpoint = { position: 0n, eventId: null };
  /** The position the table held when this process last wrote it or found it ahead. */
  private held: ProjectionCheckpoint = { position: 0n, eventId: null };
  /** Recent records of jobs not final, least recently changed first; never drops one in `dirty`. */
  private readonly cache = new Map<string, JobRecord>();
  /** Jobs whose record changed since the table last held them. */
  private readonly dirty = new Set<string>();
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly listeners = new Set<(event: RecordedEvent) => void>();
  private readonly waiters = new PositionWaiters();
  /** Folds, reads and writes of the table run one at a time. */
  private turn: Promise<unknown> = Promise.resolve();
  private subscription: Subscription | undefined;
  private following: Promise<void> | undefined;
  private pulling = false;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The table went back under this process: it no longer writes to it. */
  private stale = false;
  private readonly cacheSize: number;
  private readonly commitEveryMs: number;
  /** Events this process has folded (a restart folds only the tail). */
  folded = 0;

  constructor(
    private readonly store: EventStore,
    private readonly logger: Logger,
    options: JobViewsFeedOptions = {},
  ) {
    this.cacheSize = options.cacheSize ?? 10_000;
    this.commitEveryMs = options.commitEveryMs ?? 500;
  }

  /** Opens the table, folds the store from its position up to the head, then follows in the background. */
  async start(): Promise<void> {
    const host = projectionTablesOf(this.store);
    if (!host) throw new IllegalStateError('the job views need a store that keeps projection tables (SQLite or PostgreSQL)');
    const started = Date.now();
    const table = (this.table = await host.openProjectionTable(JOB_VIEWS_TABLE));
    this.held = await trustedCheckpoint(this.store, table, (cp, found) =>
      this.logger.warn({ position: String(cp.position), eventId: cp.eventId, found }, 'the job views table holds a position whose event this store does not hold; folding it again from the start'),
    );
    this.applied = this.held;
    const from = this.applied.position;
    for (;;) {
      const n = await this.exclusive(() => this.pull(BATCH));
      if (n === 0) break;
      await nextTurn();
    }
    await this.flush();
    this.logger.info({ events: this.folded, from: String(from), position: String(this.applied.position), ms: Date.now() - started }, 'job views folded from the store');
    this.following = this.follow();
    this.timer = setInterval(() => {
      if (this.applied.position > this.held.position) void this.flush().catch((err: unknown) => this.logger.warn({ err }, 'writing the job views table failed; the next tick tries again'));
    }, this.commitEveryMs);
    this.timer.unref();
    this.logger.info({ position: String(this.applied.position) }, 'job views ready');
  }

  /** Stops following, writes what was folded; pending `waitFor` calls resolve false. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.subscription?.close();
    await this.following;
    if (this.table) await this.flush().catch((err: unknown) => this.logger.warn({ err }, 'the job views folded last were not written; the next start folds them again'));
    this.waiters.closeAll();
  }

  /** Job records held in memory (jobs not final, and changes not yet written). */
  get cached(): number {
    return this.cache.size;
  }

  /** Position of the last event folded. */
  get position(): bigint {
    return this.applied.position;
  }

  /** The job's view as folded here (the cache, else the table). */
  async get(jobId: string): Promise<JobView | undefined> {
    return (await this.getMany([jobId])).get(jobId);
  }

  /** The views of these jobs (jobs unknown are absent). */
  async getMany(jobIds: readonly string[]): Promise<Map<string, JobView>> {
    const out = new Map<string, JobView>();
    const missing: string[] = [];
    for (const id of jobIds) {
      const r = this.cache.get(id);
      if (r) out.set(id, r.view);
      else missing.push(id);
    }
    // Not in the cache: not changed since the table last held it (a changed record stays until written).
    if (missing.length > 0) for (const [id, doc] of await this.ready().get(missing)) out.set(id, jobRecordOf(doc).view);
    return out;
  }

  /**
   * Resolves true once the views include the event at `position` (read-your-writes after an
   * append), or false after `timeoutMs`. Views behind it read the store at once.
   */
  waitFor(position: bigint, timeoutMs: number): Promise<boolean> {
    if (this.applied.position >= position) return Promise.resolve(true);
    if (this.closed) return Promise.resolve(false);
    const reached = this.waiters.wait(position, timeoutMs);
    this.pullSoon();
    return reached;
  }

  /** Calls `watcher` with the job's view after each change, until the returned function is called. */
  watch(jobId: string, watcher: Watcher): () => void {
    const set = this.watchers.get(jobId) ?? new Set();
    set.add(watcher);
    this.watchers.set(jobId, set);
    return () => {
      set.delete(watcher);
      if (set.size === 0) this.watchers.delete(jobId);
    };
  }

  /**
   * Calls `listener` with every event the views fold from now on, in store order, after the
   * views include it (so a reader told of an event finds it in the views); until the returned
   * function is called.
   */
  listen(listener: (event: RecordedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Writes what was folded to the table, so the table holds at least this process's position. */
  flush(): Promise<void> {
    return this.exclusive(() => this.commit());
  }

  /**
   * Jobs per state (for `/metrics`), counted in the table once it holds everything this process
   * folded: a scrape agrees with a `GetJob` answered just before it, not with the last write.
   */
  async countsByState(): Promise<Map<string, number>> {
    await this.flush();
    const answer = await this.ready().query({ limit: 0, countBy: 'state' });
    return new Map((answer.counts ?? []).map((c) => [String(c.value), c.count]));
  }

  /** Jobs in the table, once it holds everything this process folded. */
  async size(): Promise<number> {
    await this.flush();
    return (await this.ready().query({ limit: 0 })).total;
  }

  /**
   * One page of a team's jobs (or, with `allTeams`, of every team's, or of `query.team`'s), newest
   * first, filtered; with the count per state of every job matching the filters (all pages), and
   * for every team the count per team of the jobs matching every filter but the team. The table
   * holds this process's position first (callers wait for the head before).
   */
  async list(query: ListQuery, scope: { team: string } | { allTeams: true }): Promise<ListJobsReply> {
    await this.flush();
    const table = this.ready();
    const allTeams = 'allTeams' in scope;
    const team = allTeams ? query.team : scope.team;
    if (!decidedByColumns(query)) {
      // A GPU model or a node: the columns select the candidates, the views decide.
      const candidates = await table.query({ where: listConditions(query, { team: allTeams ? undefined : team, paged: false }), orderBy: ['newest'] });
      return pageOf(
        candidates.rows.map((r) => jobRecordOf(r.doc)),
        { ...query, team },
        { byTeam: allTeams },
      );
    }
    const counts = await table.query({ where: listConditions(query, { team, paged: false }), limit: 0, countBy: 'state' });
    const page = await table.query({ where: listConditions(query, { team, paged: true }), orderBy: ['newest'], limit: query.limit + 1 });
    const records = page.rows.map((r) => jobRecordOf(r.doc));
    const more = records.length > query.limit;
    const shown = records.slice(0, query.limit);
    const reply: ListJobsReply = {
      jobs: shown.map((r) => toSummary(r.view)),
      nextCursor: more ? encodeCursor(shown.at(-1)!.submittedPosition) : null,
      countsByState: stateCounts(new Map((counts.counts ?? []).map((c) => [String(c.value), c.count]))),
    };
    if (!allTeams) return reply;
    const teams = await table.query({ where: listConditions(query, { paged: false }), limit: 0, countBy: 'team' });
    return { ...reply, countsByTeam: teamCounts(new Map((teams.counts ?? []).map((c) => [String(c.value), c.count]))) };
  }

  // ── folding ───────────────────────────────────────────────────────────────────────────

  private ready(): ProjectionTable {
    if (!this.table) throw new IllegalStateError('the job views are not started yet');
    return this.table;
  }

  /** Runs `work` after every fold, read and write of the table started before it. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  /** Reads and folds up to `max` events after this process's position; returns how many. */
  private async pull(max: number): Promise<number> {
    const events = await this.store.readAll({ fromPosition: this.applied.position, maxCount: max });
    await this.fold(events);
    return events.length;
  }

  /** Folds events (in position order; those already folded are passed over), reading from the table the records not cached. */
  private async fold(events: readonly RecordedEvent[]): Promise<void> {
    const fresh = events.filter((e) => e.position > this.applied.position);
    if (fresh.length === 0) return;
    const missing = new Set<string>();
    for (const e of fresh) {
      const id = jobIdOf(e);
      if (id !== undefined && !this.cache.has(id)) missing.add(id);
    }
    // A row may be ahead of this process (another intake wrote it): the fold skips what a record already holds.
    if (missing.size > 0) for (const [id, doc] of await this.ready().get([...missing])) this.cache.set(id, jobRecordOf(doc));
    for (const e of fresh) this.apply(e);
    if (this.dirty.size >= COMMIT_ROWS) await this.commit();
  }

  private apply(event: RecordedEvent): void {
    if (event.position <= this.applied.position) return;
    const jobId = jobIdOf(event);
    let changed: JobRecord | undefined;
    if (jobId !== undefined) {
      const before = this.cache.get(jobId);
      const after = evolveJob(before, event);
      if (after !== undefined && after !== before) {
        this.cache.delete(jobId);
        this.cache.set(jobId, after);
        this.dirty.add(jobId);
        changed = after;
      }
    }
    this.applied = { position: event.position, eventId: event.eventId };
    this.folded++;
    if (changed) {
      for (const watcher of this.watchers.get(jobId!) ?? []) {
        try {
          watcher(changed.view);
        } catch (err) {
          this.logger.error({ err, jobId }, 'job view watcher failed');
        }
      }
    }
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch (err) {
        this.logger.error({ err, eventId: event.eventId }, 'job views listener failed');
      }
    }
    this.waiters.reached(event.position);
  }

  /**
   * Writes the changed records and this process's position, from the position the table held.
   * When another intake moved it: from where it now is (the fold is the same everywhere, so these
   * records are the fold up to this position whoever wrote the rows before), or nothing when it
   * already holds this position. Then the cache drops its oldest records beyond `cacheSize`.
   */
  private async commit(): Promise<void> {
    const table = this.ready();
    const to = this.applied;
    if (to.position > this.held.position && !this.stale) {
      const rows = [...this.dirty].map((id) => jobViewRow(this.cache.get(id)!));
      const written = await commitForward(table, this.held, to, rows);
      if ('held' in written) this.held = written.held;
      else {
        // Emptied under this process (another intake found a position this store does not hold:
        // a store restored from an older backup). Its records would not be the fold from there.
        this.logger.error({ position: String(written.behind.position), held: String(this.held.position) }, 'the job views table was emptied by another intake; this intake writes no more to it: restart it');
        this.stale = true;
      }
    }
    // A final view changes no more (but for a late cancel request): once the table holds it, it
    // is read from there, and memory holds the jobs that still move, not the last `cacheSize` of
    // every job run.
    const written = this.held.position >= to.position && !this.stale;
    for (const id of this.dirty) if (written && isFinalState(this.cache.get(id)!.view.state)) this.cache.delete(id);
    this.dirty.clear();
    for (const id of this.cache.keys()) {
      if (this.cache.size <= this.cacheSize) break;
      this.cache.delete(id);
    }
  }

  /** One read of the store beside the subscription, while someone waits for a position not folded yet. */
  private pullSoon(): void {
    if (this.pulling || !this.following) return;
    this.pulling = true;
    void this.exclusive(async () => {
      while (!this.closed && this.waiters.beyond(this.applied.position)) {
        if ((await this.pull(1_000)) === 0) break;
      }
    })
      .catch((err: unknown) => this.logger.warn({ err, position: String(this.applied.position) }, 'reading the store for the job views failed; the subscription goes on'))
      .finally(() => (this.pulling = false));
  }

  private follow(): Promise<void> {
    return followStore(this.store, this.logger, {
      name: 'the job views',
      from: () => this.applied.position,
      apply: (event) => (event.position > this.applied.position ? this.exclusive(() => this.fold([event])) : undefined),
      isClosed: () => this.closed,
      onSubscription: (subscription) => (this.subscription = subscription),
      onStoreClosed: () => (this.closed = true),
      resubscribeDelayMs: RESUBSCRIBE_MS,
    });
  }
}
