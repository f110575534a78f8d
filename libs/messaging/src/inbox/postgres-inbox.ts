import { withTransaction } from '#event-store';
import type { Pool } from 'pg';
import type { Inbox } from './inbox.js';

/**
 * Durable inbox on PostgreSQL, in the event store's database (its own table). Records issued in
 * one event-loop turn are inserted by one statement; each promise resolves after it commits.
 */
export class PostgresInbox implements Inbox {
  private pending: { consumer: string; eventId: string; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private readonly pendingKeys = new Set<string>();
  private flushScheduled = false;
  private ready: Promise<void> | undefined;

  /** @param pool a pool on the event store's database; not closed by `close()`. */
  constructor(private readonly pool: Pool) {}

  /**
   * Creates the inbox table when missing. Called lazily by the other methods. Several services
   * start at once on a new database, and two `CREATE TABLE IF NOT EXISTS` of one table at the same
   * moment fail one of them (pg_type's unique index): they take turns on an advisory lock.
   */
  init(): Promise<void> {
    this.ready ??= withTransaction(
      () => this.pool.connect(),
      async (client) => {
        await client.query(
          `CREATE TABLE IF NOT EXISTS messaging_inbox (
            consumer text NOT NULL,
            event_id text NOT NULL,
            recorded_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (consumer, event_id)
          )`,
        );
      },
      { lock: 'gpunet-messaging-inbox' },
    );
    return this.ready;
  }

  async has(consumer: string, eventId: string): Promise<boolean> {
    if (this.pendingKeys.has(`${consumer}\u0000${eventId}`)) return true;
    await this.init();
    const r = await this.pool.query('SELECT 1 FROM messaging_inbox WHERE consumer = $1 AND event_id = $2', [consumer, eventId]);
    return (r.rowCount ?? 0) > 0;
  }

  record(consumer: string, eventId: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ consumer, eventId, resolve, reject });
      this.pendingKeys.add(`${consumer}\u0000${eventId}`);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => void this.flush());
      }
    });
  }

  /** Forgets records older than `before`. Returns how many. */
  async prune(before: Date): Promise<number> {
    await this.init();
    const r = await this.pool.query('DELETE FROM messaging_inbox WHERE recorded_at < $1', [before]);
    return r.rowCount ?? 0;
  }

  private async flush(): Promise<void> {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    try {
      await this.init();
      await this.pool.query(
        `INSERT INTO messaging_inbox (consumer, event_id)
         SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`,
        [batch.map((r) => r.consumer), batch.map((r) => r.eventId)],
      );
      for (const r of batch) r.resolve();
    } catch (err) {
      for (const r of batch) r.reject(err);
    } finally {
      for (const r of batch) this.pendingKeys.delete(`${r.consumer}\u0000${r.eventId}`);
    }
  }

  async close(): Promise<void> {
    if (this.pending.length > 0) await this.flush();
  }
}
