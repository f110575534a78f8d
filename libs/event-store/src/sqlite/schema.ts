/**
 * The SQLite event store schema. `events` is the append-only log; `streams` holds each stream's
 * head (revision, position, hash), written in the same transaction as the events, so that
 * `verify` can tell a deleted tail from a stream that simply ended; `checkpoints` is the one
 * mutable table (subscriber positions).
 */

/** Bumped when the schema changes; stored in `PRAGMA user_version`. */
export const SCHEMA_VERSION = 1;

export const CREATE_TABLES = `
CREATE TABLE IF NOT EXISTS events (
  position    INTEGER PRIMARY KEY AUTOINCREMENT,
  stream_id   TEXT    NOT NULL,
  revision    INTEGER NOT NULL,
  event_id    TEXT    NOT NULL UNIQUE,
  type        TEXT    NOT NULL,
  data        TEXT    NOT NULL,
  metadata    TEXT    NOT NULL,
  job_id      TEXT,
  team        TEXT,
  recorded_at TEXT    NOT NULL,
  hash        TEXT    NOT NULL,
  UNIQUE (stream_id, revision)
);
CREATE INDEX IF NOT EXISTS events_job_id ON events (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_team ON events (team) WHERE team IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_type ON events (type);
CREATE INDEX IF NOT EXISTS events_recorded_at ON events (recorded_at);

CREATE TABLE IF NOT EXISTS streams (
  stream_id     TEXT    PRIMARY KEY,
  revision      INTEGER NOT NULL,
  head_position INTEGER NOT NULL,
  head_hash     TEXT    NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS checkpoints (
  subscriber_id TEXT    PRIMARY KEY,
  position      INTEGER NOT NULL
) WITHOUT ROWID;
`;

/** Names of the triggers that make `events` append-only; tamper hooks in tests drop and recreate them. */
export const EVENT_GUARD_TRIGGERS = ['events_no_update', 'events_no_delete'] as const;

/** The append-only guards on `events`: the database itself refuses UPDATE and DELETE. */
export const CREATE_EVENT_GUARDS = `
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'gpunet event store: events are append-only, UPDATE refused'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'gpunet event store: events are append-only, DELETE refused'); END;
`;

/**
 * Stream heads only move forward and are never removed, so a stray statement cannot hide a
 * deleted tail by rewinding the head.
 */
export const CREATE_STREAM_GUARDS = `
CREATE TRIGGER IF NOT EXISTS streams_forward_only BEFORE UPDATE ON streams
WHEN NEW.stream_id IS NOT OLD.stream_id OR NEW.revision <= OLD.revision OR NEW.head_position <= OLD.head_position
BEGIN SELECT RAISE(ABORT, 'gpunet event store: stream heads only move forward'); END;
CREATE TRIGGER IF NOT EXISTS streams_no_delete BEFORE DELETE ON streams
BEGIN SELECT RAISE(ABORT, 'gpunet event store: stream heads are never deleted'); END;
`;

export const DROP_EVENT_GUARDS = EVENT_GUARD_TRIGGERS.map((name) => `DROP TRIGGER IF EXISTS ${name};`).join('\n');
