/**
 * What an attacker with write access to a SQLite store file can do, for attack tests: drop the
 * append-only triggers, rewrite events, and recompute every later hash of the stream and its head
 * exactly as the store computes them (canonical JSON, `computeEventHashCanonical`, the same chain
 * key if they have it), then put the triggers back so nothing looks touched. After `rechainStream`
 * the store's own `verify()` passes: only signed heads held elsewhere can tell.
 */
import { canonicalJson, computeEventHashCanonical, GENESIS_HASH } from '#event-store';
import Database from 'better-sqlite3';
import { CREATE_EVENT_GUARDS, CREATE_STREAM_GUARDS, DROP_EVENT_GUARDS } from '../../libs/event-store/src/sqlite/schema.js';

const DROP_STREAM_GUARDS = 'DROP TRIGGER IF EXISTS streams_forward_only; DROP TRIGGER IF EXISTS streams_no_delete;';

interface Row {
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

/** One event as the attacker sees it; return new data to rewrite it, or undefined to leave it. */
export type Rewrite = (e: { type: string; revision: bigint; position: bigint; data: Record<string, unknown> }) => Record<string, unknown> | undefined;

function unguarded(file: string, fn: (db: Database.Database) => void): void {
  const db = new Database(file, { timeout: 10_000 });
  db.defaultSafeIntegers(true);
  try {
    db.transaction(() => {
      db.exec(DROP_EVENT_GUARDS);
      db.exec(DROP_STREAM_GUARDS);
      fn(db);
      db.exec(CREATE_EVENT_GUARDS);
      db.exec(CREATE_STREAM_GUARDS);
    }).immediate();
  } catch (err) {
    // Rethrown in this realm: better-sqlite3 may build its errors in another VM context.
    throw new Error(String((err as { message?: unknown }).message), { cause: err });
  } finally {
    db.close();
  }
}

/** Recomputes the hashes of `streamId` from revision 0 and its head, as the store would have. */
function rechain(db: Database.Database, streamId: string, chainKey?: string): void {
  const rows = db.prepare('SELECT * FROM events WHERE stream_id = ? ORDER BY revision').all(streamId) as Row[];
  let prev = GENESIS_HASH;
  const update = db.prepare('UPDATE events SET hash = ? WHERE position = ?');
  for (const r of rows) {
    const hash = computeEventHashCanonical(
      prev,
      { streamId: r.stream_id, revision: r.revision, position: r.position, eventId: r.event_id, type: r.type, dataJson: r.data, metadataJson: r.metadata, recordedAt: r.recorded_at },
      chainKey,
    );
    update.run(hash, r.position);
    prev = hash;
  }
  const last = rows[rows.length - 1];
  if (last) db.prepare('UPDATE streams SET revision = ?, head_position = ?, head_hash = ? WHERE stream_id = ?').run(last.revision, last.position, prev, streamId);
  else db.prepare('DELETE FROM streams WHERE stream_id = ?').run(streamId);
}

/**
 * Rewrites the events of `streamId` that `rewrite` changes and recomputes the stream's chain and
 * head. Returns the positions rewritten.
 */
export function rechainStream(file: string, streamId: string, rewrite: Rewrite, chainKey?: string): bigint[] {
  const changed: bigint[] = [];
  unguarded(file, (db) => {
    const rows = db.prepare('SELECT * FROM events WHERE stream_id = ? ORDER BY revision').all(streamId) as Row[];
    const update = db.prepare('UPDATE events SET data = ? WHERE position = ?');
    for (const r of rows) {
      const data = rewrite({ type: r.type, revision: r.revision, position: r.position, data: JSON.parse(r.data) as Record<string, unknown> });
      if (!data) continue;
      update.run(canonicalJson(data), r.position);
      changed.push(r.position);
    }
    rechain(db, streamId, chainKey);
  });
  return changed;
}

/** Deletes every event of `streamId` from `fromRevision` on and re-heads the stream (a deleted tail, hidden). */
export function truncateStream(file: string, streamId: string, fromRevision: bigint, chainKey?: string): void {
  unguarded(file, (db) => {
    db.prepare('DELETE FROM events WHERE stream_id = ? AND revision >= ?').run(streamId, fromRevision);
    rechain(db, streamId, chainKey);
  });
}

/** Deletes a whole stream and its head (e.g. the signed digests). */
export function deleteStream(file: string, streamId: string): void {
  unguarded(file, (db) => {
    db.prepare('DELETE FROM events WHERE stream_id = ?').run(streamId);
    db.prepare('DELETE FROM streams WHERE stream_id = ?').run(streamId);
  });
}

/**
 * Inserts an event after revision `afterRevision` of `streamId` so that the chain still verifies:
 * the later events move up one revision into the positions they held (the last one into a new
 * position past the head), and the chain is recomputed.
 */
export function insertIntoStream(file: string, streamId: string, afterRevision: bigint, event: { eventId: string; type: string; data: unknown }, chainKey?: string): void {
  unguarded(file, (db) => {
    const later = db.prepare('SELECT * FROM events WHERE stream_id = ? AND revision > ? ORDER BY revision').all(streamId, afterRevision) as Row[];
    if (later.length === 0) throw new Error(`stream ${streamId} has no event after revision ${afterRevision}`);
    const top = (db.prepare('SELECT MAX(position) AS p FROM events').get() as { p: bigint }).p;
    db.prepare('DELETE FROM events WHERE stream_id = ? AND revision > ?').run(streamId, afterRevision);
    const inserted = { ...later[0]!, event_id: event.eventId, type: event.type, data: canonicalJson(event.data) };
    const moved = [inserted, ...later];
    const positions = [...later.map((r) => r.position), top + 1n];
    const insert = db.prepare('INSERT INTO events (position, stream_id, revision, event_id, type, data, metadata, job_id, team, recorded_at, hash) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?, ?)');
    moved.forEach((r, i) => insert.run(positions[i]!, streamId, afterRevision + 1n + BigInt(i), r.event_id, r.type, r.data, r.metadata, r.recorded_at, 'x'));
    rechain(db, streamId, chainKey);
  });
}

/** Rewrites one event's data in place and leaves its hash as it was (the crudest edit of the file: only the chain tells). */
export function alterEvent(file: string, position: bigint, data: unknown): void {
  unguarded(file, (db) => {
    const changed = db.prepare('UPDATE events SET data = ? WHERE position = ?').run(canonicalJson(data), position).changes;
    if (changed !== 1) throw new Error(`no event at position ${position}`);
  });
}
