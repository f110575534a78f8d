import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { IllegalStateError, TransientError } from '#errors';
import { prepareAppend, type PreparedEvent } from '../append-validation.js';
import { FencedError, IdempotencyConflictError, WrongExpectedVersionError } from '../errors.js';
import type {
  AppendFence,
  AppendOptions,
  AppendResult,
  EventStore,
  EventToAppend,
  ExpectedRevision,
  ReadAllFilter,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
  Subscription,
  VerifyResult,
} from '../event-store.js';
import { computeEventHashCanonical, GENESIS_HASH } from '../hash-chain.js';
import type { ProjectionTable, ProjectionTableHost, ProjectionTableSpec } from '../projection-table.js';
import { CatchUpSubscription } from './catch-up-subscription.js';
import { SqliteProjectionTable } from './sqlite-projection-table.js';
import { CREATE_EVENT_GUARDS, CREATE_STREAM_GUARDS, CREATE_TABLES, SCHEMA_VERSION } from './schema.js';

/** Options of the SQLite event store. */
export interface SqliteEventStoreOptions {
  /** Database file; created with its schema when missing. Several processes may open one file. */
  path: string;
  /** HMAC key for the hash chain. Default: none (plain sha256). Every instance on a file must use the same key. */
  chainKey?: string;
  /** Source of `recordedAt`. Default `() => new Date()`. */
  clock?: () => Date;
  /** How long a writer waits for another process's write lock before failing with TransientError. Default 5000 ms. */
  busyTimeoutMs?: number;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5_000;
const DEFAULT_READ_ALL_MAX = 1_000;
const MAX_POSITION = 9_223_372_036_854_775_807n;

interface EventRow {
  position: bigint;
  stream_id: string;
  revision: bigint;
  event_id: string;
  type: string;
  data: string;
  metadata: string;
  recorded_at: string;
  hash: string;
}

interface StreamRow {
  revision: bigint;
  head_position: bigint;
  head_hash: string;
}

const EVENT_COLUMNS = 'position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash';

/**
 * In-process wake-ups: every instance in this process that has the same file open hears about an
 * append at once; other processes' appends are found by polling.
 */
const appendListeners = new Map<string, Set<() => void>>();

function notifyAppended(file: string): void {
  for (const listener of appendListeners.get(file) ?? []) listener();
}

function toRecorded(row: EventRow): RecordedEvent {
  return {
    streamId: row.stream_id,
    revision: row.revision,
    position: row.position,
    eventId: row.event_id,
    type: row.type,
    data: JSON.parse(row.data),
    metadata: JSON.parse(row.metadata),
    recordedAt: row.recorded_at,
    hash: row.hash,
  };
}

function matchesExpected(expected: ExpectedRevision, actual: bigint | 'no_stream'): boolean {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === 'no_stream';
    case 'stream_exists':
      return actual !== 'no_stream';
    default:
      return actual === expected;
  }
}

function isSqliteError(err: unknown, code: string): err is Error & { code: string } {
  // Not `instanceof Error`: better-sqlite3's native side keeps the SqliteError class of the first
  // realm that loaded it, so under Jest's per-file VM contexts (or any vm realm) it may not be ours.
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code && typeof (err as { message?: unknown }).message === 'string';
}

/**
 * The embedded event store on one SQLite file (better-sqlite3 12, WAL, `synchronous=FULL`).
 * Appends run in `BEGIN IMMEDIATE` transactions: one writer at a time across processes, which is
 * also why the global position never skips a late commit. The port's methods are async for the
 * sake of the other adapters; here each runs synchronously on the calling thread.
 */
export class SqliteEventStore implements EventStore, ProjectionTableHost {
  private readonly db: Database.Database;
  private readonly file: string;
  private readonly chainKey: string | undefined;
  private readonly clock: () => Date;
  private readonly subscriptions = new Set<CatchUpSubscription>();
  private readonly readAllStatements = new Map<string, Database.Statement>();
  private readonly onAppendedElsewhere = (): void => {
    for (const s of this.subscriptions) s.wake();
  };
  private closed = false;

  private readonly stmt: {
    selectStream: Database.Statement<[string], StreamRow>;
    lastPosition: Database.Statement<[], { seq: bigint }>;
    insertEvent: Database.Statement<unknown[]>;
    insertStream: Database.Statement<unknown[]>;
    updateStream: Database.Statement<unknown[]>;
    selectByEventId: Database.Statement<[string], EventRow>;
    readStream: Database.Statement<[string, bigint, bigint], EventRow>;
    headPosition: Database.Statement<[], { head: bigint }>;
    eventIdAt: Database.Statement<[bigint], { event_id: string }>;
    saveCheckpoint: Database.Statement<[string, bigint]>;
    loadCheckpoint: Database.Statement<[string], { position: bigint }>;
    allEvents: Database.Statement<[], EventRow>;
    allStreams: Database.Statement<[], StreamRow & { stream_id: string }>;
  };
  private readonly appendTx: (streamId: string, events: PreparedEvent[], expected: ExpectedRevision, fence: AppendFence | undefined) => AppendResult;
  private readonly busyTimeoutMs: number;

  /**
   * Opens (creating if need be) the store file. It holds every team's specs, env secrets
   * included: the file is made 0600 and a directory created for it 0700, whatever the umask.
   */
  constructor(options: SqliteEventStoreOptions) {
    this.file = resolve(options.path);
    this.chainKey = options.chainKey;
    this.clock = options.clock ?? (() => new Date());
    this.busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    const onDisk = options.path !== ':memory:' && options.path !== '';
    if (onDisk) createPrivately(this.file);
    this.db = new Database(this.file, { timeout: this.busyTimeoutMs });
    try {
      this.db.pragma('journal_mode = WAL');
      // SQLite gives the -wal and -shm files the database file's mode; older ones are closed too.
      if (onDisk) for (const f of [`${this.file}-wal`, `${this.file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
      this.db.pragma('synchronous = FULL');
      this.db.defaultSafeIntegers(true);
      this.migrate();
    } catch (err) {
      this.db.close();
      throw err;
    }

    this.stmt = {
      selectStream: this.db.prepare('SELECT revision, head_position, head_hash FROM streams WHERE stream_id = ?'),
      lastPosition: this.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'events'"),
      insertEvent: this.db.prepare(
        'INSERT INTO events (position, stream_id, revision, event_id, type, data, metadata, job_id, team, recorded_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      insertStream: this.db.prepare('INSERT INTO streams (stream_id, revision, head_position, head_hash) VALUES (?, ?, ?, ?)'),
      updateStream: this.db.prepare('UPDATE streams SET revision = ?, head_position = ?, head_hash = ? WHERE stream_id = ?'),
      selectByEventId: this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE event_id = ?`),
      readStream: this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?`),
      headPosition: this.db.prepare('SELECT coalesce(max(position), 0) AS head FROM events'),
      eventIdAt: this.db.prepare('SELECT event_id FROM events WHERE position = ?'),
      saveCheckpoint: this.db.prepare(
        'INSERT INTO checkpoints (subscriber_id, position) VALUES (?, ?) ON CONFLICT (subscriber_id) DO UPDATE SET position = excluded.position',
      ),
      loadCheckpoint: this.db.prepare('SELECT position FROM checkpoints WHERE subscriber_id = ?'),
      allEvents: this.db.prepare(`SELECT ${EVENT_COLUMNS} FROM events ORDER BY position`),
      allStreams: this.db.prepare('SELECT stream_id, revision, head_position, head_hash FROM streams'),
    };
    this.appendTx = this.db.transaction((streamId, events, expected, fence) => this.appendLocked(streamId, events, expected, fence)).immediate;

    let listeners = appendListeners.get(this.file);
    if (!listeners) appendListeners.set(this.file, (listeners = new Set()));
    listeners.add(this.onAppendedElsewhere);
  }

  /** Creates the schema when missing, under the write lock so concurrent openers do not race. */
  private migrate(): void {
    this.db
      .transaction(() => {
        const version = Number(this.db.pragma('user_version', { simple: true }));
        if (version > SCHEMA_VERSION) {
          throw new IllegalStateError(`${this.file} has event store schema ${version}; this build knows up to ${SCHEMA_VERSION}`);
        }
        this.db.exec(CREATE_TABLES);
        this.db.exec(CREATE_EVENT_GUARDS);
        this.db.exec(CREATE_STREAM_GUARDS);
        this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
      })
      .immediate();
  }

  async appendToStream(streamId: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult> {
    this.assertOpen();
    const prepared = prepareAppend(streamId, events, options);
    const expected = options?.expectedRevision ?? 'any';
    let result: AppendResult;
    try {
      result = await this.withWriteLock(() => this.appendTx(streamId, prepared, expected, options?.fence));
    } catch (err) {
      if (isSqliteError(err, 'SQLITE_CONSTRAINT_UNIQUE') && err.message.includes('events.event_id')) {
        // An id of the batch is already in the log: the rollback left nothing; tell a retry from a clash.
        const original = this.findOriginalAppend(streamId, prepared);
        if (original) return original;
        throw new IllegalStateError(`append to ${streamId}: event id collision that no longer reproduces`, { cause: err });
      }
      if (isSqliteError(err, 'SQLITE_BUSY')) {
        throw new TransientError(`append to ${streamId}: the database stayed locked by another writer`, { cause: err });
      }
      throw err;
    }
    notifyAppended(this.file);
    return result;
  }

  /**
   * Appends to several streams in one transaction (each append as `appendToStream` would, in
   * order; all or none). For loading a large history fast: one commit instead of one per append.
   */
  async appendMany(appends: readonly { streamId: string; events: readonly EventToAppend[]; options?: AppendOptions }[]): Promise<AppendResult[]> {
    this.assertOpen();
    const prepared = appends.map((a) => ({ streamId: a.streamId, events: prepareAppend(a.streamId, a.events, a.options), expected: a.options?.expectedRevision ?? 'any', fence: a.options?.fence }));
    const results = await this.withWriteLock(() =>
      this.db.transaction(() => prepared.map((a) => this.appendLocked(a.streamId, a.events, a.expected, a.fence))).immediate(),
    );
    notifyAppended(this.file);
    return results;
  }

  /**
   * Runs a write, retrying while another process holds the write lock: pauses of 0.5–2 ms with
   * jitter, up to the busy timeout; then the SQLITE_BUSY is rethrown for the caller to map.
   * SQLite's own busy handler sleeps up to 100 ms at a time and blocks the event loop meanwhile,
   * which left writers of a shared file idle long after the lock was free; reads keep it (in WAL
   * mode they are not blocked by writers anyway).
   */
  private async withWriteLock<T>(write: () => T): Promise<T> {
    const deadline = Date.now() + this.busyTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        this.db.pragma('busy_timeout = 0');
        try {
          return write();
        } finally {
          this.db.pragma(`busy_timeout = ${this.busyTimeoutMs}`);
        }
      } catch (err) {
        if (!isSqliteError(err, 'SQLITE_BUSY') || Date.now() >= deadline) throw err;
        const pauseMs = Math.min(2, 0.5 + attempt * 0.1) * (0.5 + Math.random());
        await new Promise((r) => setTimeout(r, pauseMs));
      }
    }
  }

  /** Runs inside BEGIN IMMEDIATE: nobody else writes until it returns. */
  private appendLocked(streamId: string, events: PreparedEvent[], expected: ExpectedRevision, fence: AppendFence | undefined): AppendResult {
    if (fence) {
      // Under the write lock: no holder of the role can be elected between this check and the commit.
      const head = this.stmt.selectStream.get(fence.streamId);
      const at = head ? head.revision : 'no_stream';
      if (at !== fence.revision) throw new FencedError(streamId, fence, at);
    }
    const stream = this.stmt.selectStream.get(streamId);
    const actual = stream ? stream.revision : 'no_stream';
    if (!matchesExpected(expected, actual)) {
      // A retry of a batch that did commit (its response lost) must get its original result.
      const original = this.findOriginalAppend(streamId, events);
      if (original) return original;
      throw new WrongExpectedVersionError(streamId, expected, actual);
    }

    let position = this.stmt.lastPosition.get()?.seq ?? 0n;
    let revision = stream ? stream.revision : -1n;
    let hash = stream ? stream.head_hash : GENESIS_HASH;
    const recordedAt = this.clock().toISOString();
    for (const e of events) {
      position += 1n;
      revision += 1n;
      hash = computeEventHashCanonical(
        hash,
        { streamId, revision, position, eventId: e.eventId, type: e.type, dataJson: e.dataJson, metadataJson: e.metadataJson, recordedAt },
        this.chainKey,
      );
      this.stmt.insertEvent.run(position, streamId, revision, e.eventId, e.type, e.dataJson, e.metadataJson, e.jobId, e.team, recordedAt, hash);
    }
    if (stream) this.stmt.updateStream.run(revision, position, hash, streamId);
    else this.stmt.insertStream.run(streamId, revision, position, hash);
    return { nextExpectedRevision: revision, position };
  }

  /**
   * When the batch's ids are already recorded: the original result if it is the same batch
   * (same stream, same payloads, consecutive revisions), IdempotencyConflictError if any id
   * carries something else or only part of the batch is recorded; undefined when none is.
   */
  private findOriginalAppend(streamId: string, events: readonly PreparedEvent[]): AppendResult | undefined {
    const rows = events.map((e) => this.stmt.selectByEventId.get(e.eventId));
    const firstFound = rows.findIndex((r) => r !== undefined);
    if (firstFound < 0) return undefined;
    const missing = rows.findIndex((r) => r === undefined);
    if (missing >= 0) {
      throw new IdempotencyConflictError(
        `append to ${streamId}: event ${events[firstFound]!.eventId} was recorded by an earlier append but ${events[missing]!.eventId} was not; a batch may not partly overlap an earlier one`,
        events[firstFound]!.eventId,
      );
    }
    events.forEach((e, i) => {
      const row = rows[i]!;
      const same = row.stream_id === streamId && row.type === e.type && row.data === e.dataJson && row.metadata === e.metadataJson;
      const inOrder = i === 0 || row.revision === rows[i - 1]!.revision + 1n;
      if (!same || !inOrder) {
        throw new IdempotencyConflictError(
          `append to ${streamId}: event id ${e.eventId} is already recorded with a different payload (in ${row.stream_id} at revision ${row.revision})`,
          e.eventId,
        );
      }
    });
    const last = rows[rows.length - 1]!;
    return { nextExpectedRevision: last.revision, position: last.position };
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    const limit = options.maxCount === undefined ? -1n : BigInt(options.maxCount);
    return this.stmt.readStream.all(streamId, options.fromRevision ?? 0n, limit).map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    this.assertOpen();
    return this.readAllSync(options);
  }

  private readAllSync(options: ReadAllOptions): RecordedEvent[] {
    const query = readAllQuery(options);
    if (query === undefined) return [];
    const { sql, params } = query;
    let statement = this.readAllStatements.get(sql);
    if (!statement) this.readAllStatements.set(sql, (statement = this.db.prepare(sql)));
    return (statement.all(...params) as EventRow[]).map(toRecorded);
  }

  subscribeToAll(options: SubscribeToAllOptions = {}): Subscription {
    this.assertOpen();
    const subscription = new CatchUpSubscription({
      fromPosition: options.fromPosition ?? 0n,
      batchSize: Math.max(1, options.batchSize ?? 500),
      pollIntervalMs: Math.max(1, options.pollIntervalMs ?? 250),
      // Single writer: every position up to the head is committed, so a filtered read may skip to it.
      readHead: () => this.stmt.headPosition.get()!.head,
      readBatch: (fromPosition, toPosition, maxCount) =>
        this.readAllSync({ fromPosition, toPosition, maxCount, ...(options.filter ? { filter: options.filter } : {}) }),
      onClose: (s) => this.subscriptions.delete(s),
    });
    this.subscriptions.add(subscription);
    return subscription;
  }

  async headPosition(): Promise<bigint> {
    this.assertOpen();
    return this.stmt.headPosition.get()!.head;
  }

  async eventIdAt(position: bigint): Promise<string | undefined> {
    this.assertOpen();
    return this.stmt.eventIdAt.get(position)?.event_id;
  }

  async saveCheckpoint(subscriberId: string, position: bigint): Promise<void> {
    this.assertOpen();
    try {
      await this.withWriteLock(() => this.stmt.saveCheckpoint.run(subscriberId, position));
    } catch (err) {
      if (isSqliteError(err, 'SQLITE_BUSY')) {
        throw new TransientError(`save checkpoint of ${subscriberId}: the database stayed locked by another writer`, { cause: err });
      }
      throw err;
    }
  }

  async loadCheckpoint(subscriberId: string): Promise<bigint | undefined> {
    this.assertOpen();
    return this.stmt.loadCheckpoint.get(subscriberId)?.position;
  }

  /** A projection table in this file (created when missing), on this store's connection. */
  async openProjectionTable(spec: ProjectionTableSpec): Promise<ProjectionTable> {
    this.assertOpen();
    return SqliteProjectionTable.open(this.db, spec, this.projectionWrite(spec.name));
  }

  async dropProjectionTable(name: string): Promise<boolean> {
    this.assertOpen();
    return SqliteProjectionTable.drop(this.db, name, this.projectionWrite(name));
  }

  /** A projection table's writes, under this store's write lock; a lock held too long is transient. */
  private projectionWrite(name: string): <T>(work: () => T) => Promise<T> {
    return async <T>(work: () => T): Promise<T> => {
      this.assertOpen();
      try {
        return await this.withWriteLock(work);
      } catch (err) {
        if (isSqliteError(err, 'SQLITE_BUSY')) throw new TransientError(`projection table ${name}: the database stayed locked by another writer`, { cause: err });
        throw err;
      }
    };
  }

  /**
   * Walks the log in position order inside one read transaction (a consistent snapshot), checking
   * every stream's revisions run 0, 1, 2, ..., every hash links to its predecessor, and every
   * stream ends exactly at the head the `streams` table recorded. Memory is per stream, not per event.
   */
  async verify(): Promise<VerifyResult> {
    this.assertOpen();
    return this.db.transaction(() => this.verifyInSnapshot()).deferred();
  }

  private verifyInSnapshot(): VerifyResult {
    const recorded = new Map<string, StreamRow>();
    for (const s of this.stmt.allStreams.iterate()) recorded.set(s.stream_id, s);
    const found = new Map<string, { revision: bigint; hash: string }>();
    let events = 0;
    let head = 0n;
    let bad: { position: bigint; streamId: string; reason: string } | undefined;

    for (const row of this.stmt.allEvents.iterate()) {
      const seen = found.get(row.stream_id);
      const head0 = recorded.get(row.stream_id);
      const expectedRevision = seen ? seen.revision + 1n : 0n;
      const prevHash = seen ? seen.hash : GENESIS_HASH;
      let reason: string | undefined;
      if (!head0) {
        reason = `stream ${row.stream_id} is not in the streams table: inserted behind the store's back`;
      } else if (row.revision !== expectedRevision) {
        reason = `revision ${row.revision} where ${expectedRevision} was due: ${row.revision > expectedRevision ? 'events deleted before it' : 'revision out of order'}`;
      } else if (row.revision > head0.revision) {
        reason = `revision ${row.revision} is past the recorded stream head ${head0.revision}: inserted behind the store's back`;
      } else {
        const hash = computeEventHashCanonical(
          prevHash,
          {
            streamId: row.stream_id,
            revision: row.revision,
            position: row.position,
            eventId: row.event_id,
            type: row.type,
            dataJson: row.data,
            metadataJson: row.metadata,
            recordedAt: row.recorded_at,
          },
          this.chainKey,
        );
        if (hash !== row.hash) reason = 'hash does not match the event and its predecessor: altered or inserted';
        else if (row.revision === head0.revision && (row.hash !== head0.head_hash || row.position !== head0.head_position)) {
          reason = 'the event at the recorded head revision is not the recorded head';
        }
      }
      if (reason) {
        bad = { position: row.position, streamId: row.stream_id, reason };
        break;
      }
      found.set(row.stream_id, { revision: row.revision, hash: row.hash });
      events += 1;
      head = row.position;
    }

    // A stream whose recorded head lies before the first bad row (or anywhere, when none) must
    // have been walked up to that head; if not, its tail was deleted.
    for (const [streamId, s] of recorded) {
      if (bad && s.head_position >= bad.position) continue;
      const seen = found.get(streamId);
      if (!seen || seen.revision < s.revision) {
        bad = {
          position: s.head_position,
          streamId,
          reason: `stream ends at revision ${seen ? seen.revision : 'none'} but its recorded head is revision ${s.revision}: events deleted`,
        };
      }
    }

    if (bad) return { ok: false, events, firstBadPosition: bad.position, streamId: bad.streamId, reason: bad.reason };
    return { ok: true, events, headPosition: head, streams: found.size };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    const listeners = appendListeners.get(this.file);
    listeners?.delete(this.onAppendedElsewhere);
    if (listeners?.size === 0) appendListeners.delete(this.file);
    this.db.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new IllegalStateError(`event store ${this.file} is closed`);
  }
}

/**
 * Creates the store file 0600 (and its directory 0700 when it does not exist yet) before SQLite
 * opens it, whatever the umask; an existing file is made 0600. An existing directory keeps its
 * mode: its owner chose it (`gpunet up` keeps its data dir passable for job users, never readable).
 */
function createPrivately(file: string): void {
  const dir = dirname(file);
  if (!existsSync(dir)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
  }
  closeSync(openSync(file, 'a', 0o600));
  chmodSync(file, 0o600);
}

/**
 * The SQL of a `readAll` (undefined when it can match nothing). A job's events are found by the
 * job's index: with a team too, `+team` keeps SQLite from walking the team's index instead, which
 * reads every event of a team with many jobs to find one job's few (a job's feed, its logs' end).
 */
export function readAllQuery(options: ReadAllOptions): { sql: string; params: unknown[] } | undefined {
  const filter: ReadAllFilter = options.filter ?? {};
  if (filter.types && filter.types.length === 0) return undefined;
  const where = ['position > ?', 'position <= ?'];
  const params: unknown[] = [options.fromPosition ?? 0n, options.toPosition ?? MAX_POSITION];
  if (filter.types) {
    where.push('type IN (SELECT value FROM json_each(?))');
    params.push(JSON.stringify(filter.types));
  }
  if (filter.streamPrefix !== undefined) {
    // substr, not LIKE: the prefix is literal, `_` and `%` included.
    where.push('substr(stream_id, 1, length(?)) = ?');
    params.push(filter.streamPrefix, filter.streamPrefix);
  }
  if (filter.jobId !== undefined) {
    where.push('job_id = ?');
    params.push(filter.jobId);
  }
  if (filter.team !== undefined) {
    where.push(filter.jobId !== undefined ? '+team = ?' : 'team = ?');
    params.push(filter.team);
  }
  params.push(BigInt(options.maxCount ?? DEFAULT_READ_ALL_MAX));
  return { sql: `SELECT ${EVENT_COLUMNS} FROM events WHERE ${where.join(' AND ')} ORDER BY position LIMIT ?`, params };
}
