import Database from 'better-sqlite3';
import type { Inbox } from './inbox.js';

export interface SqliteInboxOptions {
  /** The database file, typically the SQLite event store's own file (the inbox has its own table and connection). */
  path: string;
  /** How long to wait for another writer's lock. Default 5000 ms. */
  busyTimeoutMs?: number;
}

/**
 * Durable inbox on SQLite (WAL, synchronous=FULL). Records are group-committed: every `record()`
 * issued in one event-loop turn shares one transaction, and each promise resolves after that
 * commit, so a consumer acks only what is durably recorded without paying one fsync per message.
 */
export class SqliteInbox implements Inbox {
  private readonly db: Database.Database;
  private readonly hasStmt: Database.Statement<[string, string]>;
  private readonly insertStmt: Database.Statement<[string, string, string]>;
  private pending: { consumer: string; eventId: string; resolve: () => void; reject: (e: unknown) => void }[] = [];
  private readonly pendingKeys = new Set<string>();
  private flushScheduled = false;

  constructor(options: SqliteInboxOptions) {
    this.db = new Database(options.path, { timeout: options.busyTimeoutMs ?? 5_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS messaging_inbox (
      consumer TEXT NOT NULL,
      event_id TEXT NOT NULL,
      recorded_at TEXT NOT NULL,
      PRIMARY KEY (consumer, event_id)
    ) WITHOUT ROWID`);
    this.hasStmt = this.db.prepare('SELECT 1 FROM messaging_inbox WHERE consumer = ? AND event_id = ?');
    this.insertStmt = this.db.prepare('INSERT OR IGNORE INTO messaging_inbox (consumer, event_id, recorded_at) VALUES (?, ?, ?)');
  }

  has(consumer: string, eventId: string): boolean {
    return this.pendingKeys.has(`${consumer}\u0000${eventId}`) || this.hasStmt.get(consumer, eventId) !== undefined;
  }

  record(consumer: string, eventId: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ consumer, eventId, resolve, reject });
      this.pendingKeys.add(`${consumer}\u0000${eventId}`);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Forgets records older than `before` (e.g. beyond the relay's longest possible re-publish). Returns how many. */
  prune(before: Date): number {
    return this.db.prepare('DELETE FROM messaging_inbox WHERE recorded_at < ?').run(before.toISOString()).changes;
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.pending;
    this.pending = [];
    const now = new Date().toISOString();
    try {
      this.db.transaction(() => {
        for (const r of batch) this.insertStmt.run(r.consumer, r.eventId, now);
      })();
      for (const r of batch) r.resolve();
    } catch (err) {
      for (const r of batch) r.reject(err);
    } finally {
      for (const r of batch) this.pendingKeys.delete(`${r.consumer}\u0000${r.eventId}`);
    }
  }

  async close(): Promise<void> {
    if (this.pending.length > 0) this.flush();
    this.db.close();
  }
}
