import pg from 'pg';
import { IllegalStateError, TransientError, ValidationError } from '#errors';
import type {
  AppendOptions,
  AppendResult,
  EventStore,
  EventToAppend,
  ReadAllFilter,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  SubscribeToAllOptions,
  Subscription,
  VerifyResult,
} from '../event-store.js';
import { computeEventHash, GENESIS_HASH } from '../hash-chain.js';
import { appendOnClient, isRetryableDriverError, type PostgresAppendSettings } from './append.js';
import { withTransaction } from './transaction.js';
import { ChangeFeed, ChangeNotifier } from './change-feed.js';
import { channelOf, migrationSql, ORDINAL_BITS, SCHEMA_NAME } from './schema.js';
import type { ProjectionTable, ProjectionTableHost, ProjectionTableSpec } from '../projection-table.js';
import { PostgresProjectionTable } from './postgres-projection-table.js';
import { CatchUpSubscription } from './subscription.js';

/** Options of the PostgreSQL event store. */
export interface PostgresEventStoreOptions {
  /** `postgres://user@host:port/database`. Required. */
  connectionString: string;
  /** Schema holding the store's tables; a plain lower-case identifier. Default `gpunet`. */
  schema?: string;
  /** Most pooled connections (subscriptions' LISTEN connection not counted). Default 10. */
  poolSize?: number;
  /**
   * HMAC key of the hash chain: without it anyone with write access to the database can forge
   * a consistent chain. With it the hashes are computed in this process (the key never reaches
   * the server), which costs four round trips per append (BEGIN, plan, write, COMMIT) instead
   * of one statement. Default none (sha256).
   */
  chainKey?: string;
  /** Source of `recordedAt`. Default `() => new Date()`. */
  clock?: () => Date;
  /**
   * How long `readAll` and `headPosition` wait for this instance's own last append to become
   * readable. They read this database's visibility frontier (the oldest of its transactions in
   * flight), so right after an append an older transaction of this database may still hold it
   * back (usually for milliseconds). After this long they answer without it. Default 2000 ms.
   */
  readYourWritesMs?: number;
}

/** Defaults of `PostgresEventStoreOptions`. */
export const POSTGRES_DEFAULTS = { schema: 'gpunet', poolSize: 10, readYourWritesMs: 2_000 } as const;

/** Bumped when the schema changes; kept in `<schema>.meta`. */
export const SCHEMA_VERSION = 1;

/** Rows per query when `verify` walks the log. */
const VERIFY_PAGE = 5_000;

/**
 * The visibility frontier of the statement's snapshot: `xmin`, the oldest transaction still in
 * flight, and `frontier`, the first position such a transaction could hold. Events of older
 * transactions (`transaction_id < xmin`) are the gap-free committed prefix of the log; `position`
 * carries the transaction id in its high bits, so the same bound on `position` lets the primary
 * key index stop there (docs/decisions/0003-postgres-global-order.md).
 *
 * This one is cheap and cluster-wide: any database's transaction counts. `open`: some
 * transaction is in flight (else the frontier is simply the next transaction id).
 */
const FRONTIER = `(SELECT x.xmin, x.xmin::text::bigint << ${ORDINAL_BITS} AS frontier, x.xmin < x.xmax AS open, NULL::boolean AS settling
   FROM (SELECT pg_snapshot_xmin(s.snap) AS xmin, pg_snapshot_xmax(s.snap) AS xmax FROM (SELECT pg_current_snapshot() AS snap) s) x)`;

/**
 * The same frontier, counting only transactions that could have written this database: of the
 * snapshot's in-progress ids (all below its `xmax`; everything else below it has ended), those a
 * session of another database still holds when `pg_stat_activity` is read are left out. One that
 * has ended since the snapshot, or a prepared one, still counts (it may have been this
 * database's): latency, never a skip. `settling`: the id the frontier stands on is held by no
 * session at all, so it ended between the statement's snapshot and its reading of the sessions
 * (or it is prepared); a one-shot read asks again, and a new snapshot sees it ended. Reading the
 * backends costs about 0.4 ms against 0.07. One-shot
 * reads (`readAll`, `headPosition`) always use it: what they answer may be all a caller reads.
 * A subscription's pages use it only once the cheap frontier has stood still on an open
 * transaction for `PRECISE_AFTER_MS`, and then for `PRECISE_FOR_MS` before the cheap one is asked
 * again: a long write transaction in another database (a bulk load, a migration) no longer stalls
 * this database's readers, and short transactions, which move the frontier all the time, cost
 * nothing.
 */
const DATABASE_FRONTIER = `(SELECT x.xmin::text::xid8 AS xmin, x.xmin << ${ORDINAL_BITS} AS frontier, NULL::boolean AS open,
          x.held AND x.xmin % ${2 ** 32} NOT IN (
            SELECT a.backend_xid::text::bigint FROM pg_stat_get_activity(NULL) a WHERE a.backend_xid IS NOT NULL) AS settling
   FROM (SELECT COALESCE(h.xid, pg_snapshot_xmax(s.snap)::text::bigint) AS xmin, h.xid IS NOT NULL AS held
           FROM (SELECT pg_current_snapshot() AS snap) s,
           LATERAL (SELECT min(t.xid::text::bigint) AS xid FROM pg_snapshot_xip(s.snap) AS t(xid)
             WHERE t.xid::text::bigint % ${2 ** 32} NOT IN (
               SELECT a.backend_xid::text::bigint FROM pg_stat_get_activity(NULL) a
                WHERE a.backend_xid IS NOT NULL AND a.datid IS NOT NULL
                  AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))) h) x)`;

/** How many times a one-shot read asks again while its frontier stands on a transaction that has just ended. */
const SETTLE_ATTEMPTS = 5;

/** How long the cluster-wide frontier may stand still on an open transaction before reads ask which database holds it. */
const PRECISE_AFTER_MS = 100;
/** How long reads keep asking before they look at the cluster-wide frontier again. */
const PRECISE_FOR_MS = 1_000;

const COLUMNS = 'position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash';

interface EventRow {
  position: string;
  stream_id: string;
  revision: string;
  event_id: string;
  type: string;
  data: unknown;
  metadata: RecordedEvent['metadata'];
  recorded_at: Date;
  hash: string;
}

/** Opens (and migrates) a PostgreSQL event store. */
export async function openPostgresEventStore(options: PostgresEventStoreOptions): Promise<PostgresEventStore> {
  const store = new PostgresEventStore(options);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}

/**
 * The production event store on PostgreSQL (13 or newer: xid8). Appends to different streams
 * run concurrently; appends to one stream serialize on its head row. Global reads return only
 * the committed prefix that no in-flight transaction can still extend below.
 */
export class PostgresEventStore implements EventStore, ProjectionTableHost {
  readonly schema: string;
  private readonly pool: pg.Pool;
  private readonly settings: PostgresAppendSettings;
  private readonly feed: ChangeFeed;
  /** The cluster-wide frontier last read on an open transaction, and since when it stands there. */
  private standing: { frontier: bigint; since: number } | undefined;
  /** Until when reads use this database's frontier. */
  private preciseUntil = 0;
  private readonly notifier: ChangeNotifier;
  private readonly subscriptions = new Set<CatchUpSubscription>();
  private readonly readYourWritesMs: number;
  /** Last position this instance appended: `readAll` and `headPosition` wait until it is readable. */
  private lastAppended = 0n;
  private closed = false;

  /** Prefer `openPostgresEventStore`, which also migrates. */
  constructor(options: PostgresEventStoreOptions) {
    const schema = options.schema ?? POSTGRES_DEFAULTS.schema;
    if (!SCHEMA_NAME.test(schema)) {
      throw new ValidationError(`invalid schema name ${JSON.stringify(schema)}`, [
        { path: 'schema', message: 'must be a lower-case identifier', fix: 'use letters, digits and _, starting with a letter' },
      ]);
    }
    this.schema = schema;
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? POSTGRES_DEFAULTS.poolSize });
    // An idle pooled connection that dies (server restart) must not crash the process; the
    // next query on the pool gets a fresh connection or a TransientError.
    this.pool.on('error', () => undefined);
    guardCheckedOutClients(this.pool);
    this.settings = { schema, chainKey: options.chainKey, clock: options.clock ?? (() => new Date()) };
    this.readYourWritesMs = options.readYourWritesMs ?? POSTGRES_DEFAULTS.readYourWritesMs;
    this.feed = new ChangeFeed(options.connectionString, channelOf(schema));
    // A notification is a hint: its transaction need not wait for a WAL flush.
    this.notifier = new ChangeNotifier((position) =>
      this.pool.query(`SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)`, [channelOf(schema), position.toString()]),
    );
  }

  /** The settings `appendOnClient` needs to append on a client of the caller's own transaction. */
  get appendSettings(): PostgresAppendSettings {
    return this.settings;
  }

  /**
   * Creates the schema if missing (idempotent; concurrent openers serialize on an advisory
   * lock). Refuses a database migrated by a newer version of this code.
   */
  async migrate(): Promise<void> {
    const s = this.schema;
    await withTransaction(() => this.connect(), async (client) => {
      const { rows: exists } = await client.query<{ meta: string | null }>('SELECT to_regclass($1)::text AS meta', [`${s}.meta`]);
      let current = 0;
      if (exists[0]?.meta) {
        const { rows } = await client.query<{ value: string }>(`SELECT value FROM ${s}.meta WHERE key = 'schema_version'`);
        current = Number(rows[0]?.value ?? 0);
      }
      if (current > SCHEMA_VERSION) {
        throw new IllegalStateError(`schema ${s} is at version ${current}, newer than this code (${SCHEMA_VERSION}); upgrade gpunet`);
      }
      if (current < SCHEMA_VERSION) {
        const { rows: enc } = await client.query<{ server_encoding: string }>('SHOW server_encoding');
        if (enc[0]?.server_encoding !== 'UTF8') {
          throw new IllegalStateError(`the event store needs a UTF8 database (the hash chain hashes UTF-8), found ${enc[0]?.server_encoding}`);
        }
        await client.query(migrationSql(s));
        await client.query(`CREATE TABLE IF NOT EXISTS ${s}.meta (key text PRIMARY KEY, value text NOT NULL)`);
        await client.query(
          `INSERT INTO ${s}.meta (key, value) VALUES ('schema_version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
          [String(SCHEMA_VERSION)],
        );
      }
    }, { lock: `gpunet-event-store-migrate:${s}` });
  }

  async appendToStream(streamId: string, events: readonly EventToAppend[], options?: AppendOptions): Promise<AppendResult> {
    const client = await this.connect();
    try {
      const result = await appendOnClient(client, this.settings, streamId, events, options);
      if (result.position > this.lastAppended) this.lastAppended = result.position;
      this.notifyAppended(result.position);
      return result;
    } finally {
      client.release();
    }
  }

  /**
   * Wakes subscriptions here and, through NOTIFY, in other processes. `appendToStream` calls it;
   * call it after committing a transaction in which you used `appendOnClient`, or subscribers
   * elsewhere find those events at their next poll.
   */
  notifyAppended(position: bigint): void {
    this.feed.bump(position);
    if (!this.closed) this.notifier.poke(position);
  }

  async readStream(streamId: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const { rows } = await this.query<EventRow>(
      `SELECT ${COLUMNS} FROM ${this.schema}.events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision LIMIT $3`,
      [streamId, (options.fromRevision ?? 0n).toString(), options.maxCount ?? null],
    );
    return rows.map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    // A one-shot read answers what this database has decided, whatever other databases of the
    // server have in flight (their transactions hold the cluster-wide frontier back): it may be
    // all a caller reads, unlike a subscription's next page, which can wait for the frontier.
    return (await this.readOwnWrites(() => this.readPage(options, true))).events;
  }

  /**
   * `readAll`, plus the visibility frontier of the same snapshot: every position below it is
   * decided (committed or rolled back), none at or above it is returned. `precise`: this
   * database's frontier (about 0.45 ms against 0.07 ms), whatever the cluster-wide one does.
   */
  async readPage(options: ReadAllOptions = {}, precise = false): Promise<{ events: RecordedEvent[]; frontier: bigint; settling: boolean }> {
    const params: unknown[] = [(options.fromPosition ?? 0n).toString(), options.maxCount ?? 1000];
    const where = ['e.position > $1', 'e.position < f.frontier', 'e.transaction_id < f.xmin'];
    if (options.toPosition !== undefined) {
      params.push(options.toPosition.toString());
      where.push(`e.position <= $${params.length}`);
    }
    where.push(...filterSql(options.filter, params));
    // One row per event, or a single row of NULLs carrying the frontier when there is none.
    const { rows } = await this.query<EventRow & { frontier: string; open: boolean | null; settling: boolean | null }>(
      `SELECT f.frontier, f.open, f.settling, page.*
         FROM ${this.frontierSql(precise)} f
         LEFT JOIN LATERAL (
           SELECT ${COLUMNS.split(', ').map((c) => `e.${c}`).join(', ')} FROM ${this.schema}.events e
            WHERE ${where.join(' AND ')} ORDER BY e.position LIMIT $2
         ) page ON true
        ORDER BY page.position`,
      params,
    );
    const frontier = BigInt(rows[0]!.frontier);
    this.noteFrontier(frontier, rows[0]!.open);
    return { events: rows[0]?.position === null ? [] : rows.map(toRecorded), frontier, settling: rows[0]!.settling === true };
  }

  subscribeToAll(options: SubscribeToAllOptions = {}): Subscription {
    this.assertOpen();
    const sub = new CatchUpSubscription((o) => this.readPage(o), this.feed, options, (s) => this.subscriptions.delete(s));
    this.subscriptions.add(sub);
    return sub;
  }

  async headPosition(): Promise<bigint> {
    const { head } = await this.readOwnWrites(async () => {
      const { rows } = await this.query<{ head: string | null; frontier: string; open: boolean | null; settling: boolean | null }>(
        `SELECT f.frontier, f.open, f.settling,
                (SELECT e.position FROM ${this.schema}.events e
                  WHERE e.position < f.frontier AND e.transaction_id < f.xmin
                  ORDER BY e.position DESC LIMIT 1) AS head
           FROM ${this.frontierSql(true)} f`,
      );
      this.noteFrontier(BigInt(rows[0]!.frontier), rows[0]!.open);
      return { head: BigInt(rows[0]!.head ?? 0), frontier: BigInt(rows[0]!.frontier), settling: rows[0]!.settling === true };
    });
    return head;
  }

  /** The frontier a read uses: this database's when asked, or while a long transaction stands in the cluster-wide one. */
  private frontierSql(precise = false): string {
    return precise || Date.now() < this.preciseUntil ? DATABASE_FRONTIER : FRONTIER;
  }

  /**
   * After a read: a cluster-wide frontier (`open` not null) that has stood on the same open
   * transaction for `PRECISE_AFTER_MS` switches reads to this database's frontier for
   * `PRECISE_FOR_MS`. Short transactions move it all the time; an idle cluster has none open.
   */
  private noteFrontier(frontier: bigint, open: boolean | null): void {
    if (open === null) return;
    const now = Date.now();
    if (!open) this.standing = undefined;
    else if (this.standing?.frontier !== frontier) this.standing = { frontier, since: now };
    else if (now - this.standing.since >= PRECISE_AFTER_MS) this.preciseUntil = now + PRECISE_FOR_MS;
  }

  /**
   * Repeats `read` with short, growing pauses while its frontier has not passed this instance's
   * last append, for at most `readYourWritesMs`: a caller that appended and then reads the
   * global log sees its own events, unless an older transaction stays open that long. Asks again
   * at once, up to `SETTLE_ATTEMPTS` times, while the frontier stands on a transaction that ended
   * during the read (`settling`): a reader that appended nothing sees every event committed
   * before its read began.
   */
  private async readOwnWrites<T extends { frontier: bigint; settling: boolean }>(read: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.readYourWritesMs;
    let settleAttempts = 1;
    for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
      const result = await read();
      if (result.settling && settleAttempts < SETTLE_ATTEMPTS) {
        settleAttempts++;
        continue;
      }
      if (result.frontier > this.lastAppended || Date.now() >= deadline) return result;
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
    }
  }

  async saveCheckpoint(subscriberId: string, position: bigint): Promise<void> {
    await this.query(
      `INSERT INTO ${this.schema}.checkpoints (subscriber_id, position) VALUES ($1, $2)
       ON CONFLICT (subscriber_id) DO UPDATE SET position = EXCLUDED.position, updated_at = now()`,
      [subscriberId, position.toString()],
    );
  }

  async eventIdAt(position: bigint): Promise<string | undefined> {
    // Only a committed row is visible; a projection's position names one its writer read.
    const { rows } = await this.query<{ event_id: string }>(`SELECT event_id FROM ${this.schema}.events WHERE position = $1`, [position.toString()]);
    return rows[0]?.event_id;
  }

  async loadCheckpoint(subscriberId: string): Promise<bigint | undefined> {
    const { rows } = await this.query<{ position: string }>(`SELECT position FROM ${this.schema}.checkpoints WHERE subscriber_id = $1`, [
      subscriberId,
    ]);
    return rows[0] ? BigInt(rows[0].position) : undefined;
  }

  /** A projection table in this store's schema (created when missing), on this store's pool. */
  async openProjectionTable(spec: ProjectionTableSpec): Promise<ProjectionTable> {
    return PostgresProjectionTable.open(() => this.connect(), this.schema, spec);
  }

  async dropProjectionTable(name: string): Promise<boolean> {
    return PostgresProjectionTable.drop(() => this.connect(), this.schema, name);
  }

  /**
   * Walks the whole log in position order in one REPEATABLE READ snapshot (so `events` and
   * `streams` agree), checks each stream's revisions and hash links, then each stream head.
   * Reports the lowest position where anything fails.
   */
  async verify(): Promise<VerifyResult> {
    const s = this.schema;
    return withTransaction(() => this.connect(), async (client) => {
      const chains = new Map<string, { revision: bigint; hash: string; position: bigint; first: bigint }>();
      let bad: { position: bigint; streamId: string; reason: string } | undefined;
      const fail = (position: bigint, streamId: string, reason: string) => {
        if (!bad || position < bad.position) bad = { position, streamId, reason };
      };
      let count = 0;
      let head = 0n;
      for (let from = -1n; ; ) {
        const { rows } = await client.query<EventRow>(`SELECT ${COLUMNS} FROM ${s}.events WHERE position > $1 ORDER BY position LIMIT $2`, [
          from.toString(),
          VERIFY_PAGE,
        ]);
        for (const row of rows) {
          const e = toRecorded(row);
          count++;
          head = e.position;
          const chain = chains.get(e.streamId);
          const prevRevision = chain?.revision ?? -1n;
          if (e.revision !== prevRevision + 1n) {
            fail(e.position, e.streamId, `revision ${e.revision} follows ${prevRevision < 0n ? 'nothing' : `revision ${prevRevision}`}`);
          } else if (computeEventHash(chain?.hash ?? GENESIS_HASH, e, this.settings.chainKey) !== e.hash) {
            fail(e.position, e.streamId, `hash of revision ${e.revision} does not match its content and predecessor`);
          }
          chains.set(e.streamId, { revision: e.revision, hash: e.hash, position: e.position, first: chain?.first ?? e.position });
        }
        if (rows.length < VERIFY_PAGE) break;
        from = BigInt(rows[rows.length - 1]!.position);
      }

      const { rows: heads } = await client.query<{ stream_id: string; revision: string; head_hash: string; head_position: string }>(
        `SELECT stream_id, revision, head_hash, head_position FROM ${s}.streams`,
      );
      const headed = new Set<string>();
      for (const h of heads) {
        headed.add(h.stream_id);
        const revision = BigInt(h.revision);
        const headPosition = BigInt(h.head_position);
        const last = chains.get(h.stream_id);
        if (!last || last.revision < revision) {
          fail(headPosition, h.stream_id, `stream head is revision ${revision} but the log ends at ${last ? `revision ${last.revision}` : 'nothing'}`);
        } else if (last.revision > revision) {
          const { rows: beyond } = await client.query<{ position: string }>(
            `SELECT min(position) AS position FROM ${s}.events WHERE stream_id = $1 AND revision > $2`,
            [h.stream_id, h.revision],
          );
          fail(BigInt(beyond[0]!.position), h.stream_id, `events beyond the stream head (revision ${revision})`);
        } else if (last.hash !== h.head_hash || last.position !== headPosition) {
          fail(last.position, h.stream_id, 'stream head does not match the last event of the stream');
        }
      }
      for (const [streamId, chain] of chains) {
        if (!headed.has(streamId)) fail(chain.first, streamId, 'stream the store never wrote (no stream head)');
      }
      return bad
        ? { ok: false as const, events: count, firstBadPosition: bad.position, streamId: bad.streamId, reason: bad.reason }
        : { ok: true as const, events: count, headPosition: head, streams: chains.size };
    }, { begin: 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' });
  }

  /** Ends subscriptions (waiting for their in-flight reads), the LISTEN connection and the pool. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    await this.notifier.close();
    await this.feed.close();
    await this.pool.end();
  }

  /**
   * A pooled client for work in the caller's own transaction (e.g. `appendOnClient` with an
   * outbox write); release it when done.
   */
  async connect(): Promise<pg.PoolClient> {
    this.assertOpen();
    try {
      return await this.pool.connect();
    } catch (err) {
      throw isRetryableDriverError(err as { code?: string })
        ? new TransientError(`PostgreSQL unavailable: ${(err as Error).message}`, { cause: err })
        : err;
    }
  }

  private async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    try {
      return await this.pool.query<R>(text, values);
    } catch (err) {
      throw isRetryableDriverError(err as { code?: string })
        ? new TransientError(`PostgreSQL unavailable: ${(err as Error).message}`, { cause: err })
        : err;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new IllegalStateError('the event store is closed');
  }
}

/** Conditions on the events table aliased `e`. */
function filterSql(filter: ReadAllFilter | undefined, params: unknown[]): string[] {
  if (!filter) return [];
  const where: string[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  if (filter.types) where.push(`e.type = ANY (${param(filter.types)}::text[])`);
  // starts_with takes the prefix literally (no LIKE wildcards to escape).
  if (filter.streamPrefix !== undefined) where.push(`starts_with(e.stream_id, ${param(filter.streamPrefix)})`);
  if (filter.jobId !== undefined) where.push(`e.job_id = ${param(filter.jobId)}`);
  if (filter.team !== undefined) where.push(`e.team = ${param(filter.team)}`);
  return where;
}

function toRecorded(r: EventRow): RecordedEvent {
  return {
    streamId: r.stream_id,
    revision: BigInt(r.revision),
    position: BigInt(r.position),
    eventId: r.event_id,
    type: r.type,
    data: r.data,
    metadata: r.metadata,
    recordedAt: r.recorded_at.toISOString(),
    hash: r.hash,
  };
}

/**
 * The pool listens for a client's 'error' only while the client is idle; a checked-out client
 * (an append's transaction between two statements, a caller's outbox transaction) whose server
 * ends it — a restart's "terminating connection due to administrator command" arrives with no
 * query running — emits 'error' with nobody listening, and Node ends the process. Every client
 * gets a listener for its whole life: the statement in hand fails with the lost connection, and
 * the pool drops the client on release (it is no longer queryable).
 */
export function guardCheckedOutClients(pool: pg.Pool): void {
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
}
