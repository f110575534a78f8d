/**
 * The PostgreSQL event store schema, created idempotently at open.
 *
 * - `events` is the append-only log. `position` is not drawn from a sequence: it is
 *   `transaction_id << 16 | ordinal`, so position order is transaction order and the
 *   `pg_snapshot_xmin` visibility rule yields a gap-free prefix (docs/decisions/0003).
 * - `streams` holds each stream's head (revision, hash, position). Its row lock is where
 *   appenders to one stream serialize; appenders to different streams never wait on each other.
 * - `checkpoints` is the one mutable table (subscriber positions).
 * - `append_events` is the whole append (lock head, idempotency, expected revision, positions,
 *   hash chain, insert, head update) in one statement, so an append costs one round trip.
 */
import { GENESIS_HASH } from '../hash-chain.js';

/** Bits of `position` below the transaction id: at most 65,536 events per transaction. */
export const ORDINAL_BITS = 16;

/** SQLSTATEs raised by `append_events`; the adapter maps them to the port's errors. */
export const SQLSTATE = {
  wrongExpectedVersion: 'GPW01',
  idempotencyConflict: 'GPI01',
  transactionFull: 'GPT01',
  appendOnly: 'GPA01',
  planChanged: 'GPP01',
} as const;

/** Schema names are interpolated into DDL, so only plain lower-case identifiers are accepted. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The NOTIFY channel that wakes subscriptions of this schema. */
export function channelOf(schema: string): string {
  return `${schema}_events`;
}

/** DDL and functions, in the order they run; every statement is idempotent. */
export function migrationSql(schema: string): string {
  const s = schema;
  return `
CREATE SCHEMA IF NOT EXISTS ${s};

${eventsTableSql(s)}
CREATE TABLE IF NOT EXISTS ${s}.streams (
  stream_id     text   PRIMARY KEY,
  revision      bigint NOT NULL,
  head_hash     text   NOT NULL,
  head_position bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
  subscriber_id text        PRIMARY KEY,
  position      bigint      NOT NULL,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- The database itself refuses edits of the log, whoever connects. Statement-level, so even an
-- UPDATE or DELETE that matches no row is refused. Ordinary (not ALWAYS) triggers: a superuser
-- can still bypass them with session_replication_role = replica, which the tests' tamper hooks do.
CREATE OR REPLACE FUNCTION ${s}.refuse_log_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  RAISE EXCEPTION 'gpunet event store: % on %.% refused, the event log is append-only', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = '${SQLSTATE.appendOnly}';
END
$fn$;
CREATE OR REPLACE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON ${s}.events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.refuse_log_change();
CREATE OR REPLACE TRIGGER events_no_truncate BEFORE TRUNCATE ON ${s}.events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.refuse_log_change();

-- Stream heads only move forward and are never removed, so a stray statement cannot hide a
-- deleted tail by rewinding the head.
CREATE OR REPLACE FUNCTION ${s}.refuse_head_rewind() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  IF TG_OP = 'DELETE' OR NEW.stream_id <> OLD.stream_id OR NEW.revision <= OLD.revision THEN
    RAISE EXCEPTION 'gpunet event store: stream heads only move forward (% on %)', TG_OP, OLD.stream_id
      USING ERRCODE = '${SQLSTATE.appendOnly}';
  END IF;
  RETURN NEW;
END
$fn$;
CREATE OR REPLACE TRIGGER streams_forward_only BEFORE UPDATE OR DELETE ON ${s}.streams
  FOR EACH ROW EXECUTE FUNCTION ${s}.refuse_head_rewind();
CREATE OR REPLACE TRIGGER streams_no_truncate BEFORE TRUNCATE ON ${s}.streams
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.refuse_log_change();

${appendFunctionSql(s)}
`;
}

/**
 * The `events` table and its indexes, without the guards. Also used by the benchmark for its raw
 * limit, so that both sides write the same table.
 */
export function eventsTableSql(s: string): string {
  return `
CREATE TABLE IF NOT EXISTS ${s}.events (
  position       bigint      PRIMARY KEY,
  transaction_id xid8        NOT NULL DEFAULT pg_current_xact_id(),
  stream_id      text        NOT NULL,
  revision       bigint      NOT NULL,
  event_id       uuid        NOT NULL UNIQUE,
  type           text        NOT NULL,
  data           jsonb       NOT NULL,
  metadata       jsonb       NOT NULL,
  job_id         text        GENERATED ALWAYS AS (metadata ->> 'jobId') STORED,
  team           text        GENERATED ALWAYS AS (metadata ->> 'team') STORED,
  recorded_at    timestamptz NOT NULL,
  hash           text        NOT NULL,
  UNIQUE (stream_id, revision)
);
-- Audit queries read one job / team / type in log order, so position is the second key.
CREATE INDEX IF NOT EXISTS events_job_id ON ${s}.events (job_id, position) WHERE job_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_team ON ${s}.events (team, position) WHERE team IS NOT NULL;
CREATE INDEX IF NOT EXISTS events_type ON ${s}.events (type, position);
CREATE INDEX IF NOT EXISTS events_recorded_at ON ${s}.events (recorded_at);
`;
}

/**
 * append_events: one append, atomically, on the caller's transaction.
 *
 * p_expected: 'any' | 'no_stream' | 'stream_exists' | a decimal revision.
 * p_data / p_metadata: canonical JSON texts, stored and hashed as sent.
 * p_hash_prefix / p_hash_heads / p_recorded_at_json: the pieces of each event's canonical hash
 *   body that only the caller serializes: prefix = '[' || JSON(streamId) || ',"', head =
 *   JSON(eventId) || ',' || JSON(type). body = prefix || revision || '","' || position || '",' ||
 *   head || ',' || data || ',' || metadata || ',' || recorded_at_json || ']' (see
 *   computeEventHashCanonical in hash-chain.ts). NULL when the caller hashes (HMAC chain key).
 * p_hashes / p_first_position: hashes computed by the caller from an earlier p_plan_only call in
 *   the same transaction, and the first position that plan returned.
 * p_plan_only: lock and check, return the plan (current head, first position), write nothing.
 *
 * Returns outcome 'appended' | 'duplicate' | 'plan'.
 */
function appendFunctionSql(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}.append_events(
  p_stream_id      text,
  p_expected       text,
  p_event_ids      uuid[],
  p_types          text[],
  p_data           text[],
  p_metadata       text[],
  p_recorded_at    timestamptz,
  p_hash_prefix    text,
  p_hash_heads     text[],
  p_recorded_at_json text,
  p_hashes         text[] DEFAULT NULL,
  p_first_position bigint DEFAULT NULL,
  p_plan_only      boolean DEFAULT false
) RETURNS TABLE (outcome text, next_expected_revision bigint, last_position bigint, current_revision bigint, head_hash text, first_position bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  n         int := cardinality(p_event_ids);
  v_rev     bigint;
  v_head    text;
  v_xid     bigint;
  v_base    bigint;
  v_first   bigint;
  v_hashes  text[];
  v_prev    text;
  v_row     record;
  v_found   int := 0;
  v_in_order boolean := true;
  v_last_rev bigint;
  v_last_pos bigint;
  v_dup_id  uuid;
BEGIN
  -- 1. Lock the stream head; a new stream gets a placeholder row (revision -1) to lock, which
  --    this transaction always either advances or rolls back.
  SELECT st.revision, st.head_hash INTO v_rev, v_head FROM ${s}.streams st WHERE st.stream_id = p_stream_id FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO ${s}.streams (stream_id, revision, head_hash, head_position)
      VALUES (p_stream_id, -1, '${GENESIS_HASH}', 0) ON CONFLICT (stream_id) DO NOTHING;
    IF FOUND THEN
      v_rev := -1; v_head := '${GENESIS_HASH}';
    ELSE
      -- Created by a concurrent appender that has committed meanwhile (the insert waited for it).
      SELECT st.revision, st.head_hash INTO v_rev, v_head FROM ${s}.streams st WHERE st.stream_id = p_stream_id FOR UPDATE;
    END IF;
  END IF;

  -- 2. Idempotency, before the revision check: a retried batch carries the revision it expected
  --    back then. Done under the head lock, so a concurrent first attempt is visible.
  IF EXISTS (SELECT 1 FROM ${s}.events e WHERE e.event_id = ANY (p_event_ids)) THEN
    FOR v_row IN
      SELECT b.id, e.stream_id, e.revision, e.position,
             (e.type = b.type AND e.data = b.data::jsonb AND e.metadata = b.metadata::jsonb) AS same
        FROM unnest(p_event_ids, p_types, p_data, p_metadata) WITH ORDINALITY AS b(id, type, data, metadata, ord)
        LEFT JOIN ${s}.events e ON e.event_id = b.id
       ORDER BY b.ord
    LOOP
      CONTINUE WHEN v_row.stream_id IS NULL; -- not recorded yet
      IF v_row.stream_id <> p_stream_id THEN
        RAISE EXCEPTION 'event % is already recorded in stream %', v_row.id, v_row.stream_id
          USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_row.id::text;
      ELSIF NOT v_row.same THEN
        RAISE EXCEPTION 'event % is already recorded with a different payload', v_row.id
          USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_row.id::text;
      END IF;
      v_in_order := v_in_order AND (v_found = 0 OR v_row.revision = v_last_rev + 1);
      v_found := v_found + 1;
      v_last_rev := v_row.revision;
      v_last_pos := v_row.position;
      v_dup_id := coalesce(v_dup_id, v_row.id);
    END LOOP;
    IF v_found = n AND v_in_order THEN
      RETURN QUERY SELECT 'duplicate'::text, v_last_rev, v_last_pos, v_rev, v_head, NULL::bigint;
      RETURN;
    END IF;
    RAISE EXCEPTION 'the batch partly overlaps an earlier append (event % is already recorded, not as this batch)', v_dup_id
      USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_dup_id::text;
  END IF;

  -- 3. Expected revision. DETAIL carries the actual revision (-1: no stream).
  IF (p_expected = 'no_stream' AND v_rev <> -1)
     OR (p_expected = 'stream_exists' AND v_rev = -1)
     OR (p_expected NOT IN ('any', 'no_stream', 'stream_exists') AND v_rev <> p_expected::bigint) THEN
    RAISE EXCEPTION 'stream %: expected revision %, actual %', p_stream_id, p_expected, v_rev
      USING ERRCODE = '${SQLSTATE.wrongExpectedVersion}', DETAIL = v_rev::text;
  END IF;

  -- 4. Positions: this transaction's id above ${ORDINAL_BITS} ordinal bits, continuing after any
  --    earlier append of the same transaction (only this transaction can hold that range).
  v_xid := pg_current_xact_id()::text::bigint;
  v_base := v_xid << ${ORDINAL_BITS};
  SELECT coalesce(max(e.position) + 1, v_base) INTO v_first
    FROM ${s}.events e WHERE e.position >= v_base AND e.position < v_base + ${2 ** ORDINAL_BITS};
  IF v_first + n > v_base + ${2 ** ORDINAL_BITS} THEN
    RAISE EXCEPTION 'a transaction holds at most ${2 ** ORDINAL_BITS} events' USING ERRCODE = '${SQLSTATE.transactionFull}';
  END IF;

  IF p_plan_only THEN
    RETURN QUERY SELECT 'plan'::text, NULL::bigint, NULL::bigint, v_rev, v_head, v_first;
    RETURN;
  END IF;

  -- 5. The hash chain, continuing from the stream head.
  IF p_hashes IS NULL THEN
    v_prev := v_head;
    v_hashes := array_fill(NULL::text, ARRAY[n]);
    FOR i IN 1 .. n LOOP
      v_prev := encode(sha256(convert_to(
        v_prev || E'\\n' || p_hash_prefix || (v_rev + i)::text || '","' || (v_first + i - 1)::text || '",' || p_hash_heads[i]
          || ',' || p_data[i] || ',' || p_metadata[i] || ',' || p_recorded_at_json || ']',
        'UTF8')), 'hex');
      v_hashes[i] := v_prev;
    END LOOP;
  ELSE
    IF p_first_position IS DISTINCT FROM v_first OR cardinality(p_hashes) <> n THEN
      RAISE EXCEPTION 'append plan changed between plan and write (first position % then %)', p_first_position, v_first
        USING ERRCODE = '${SQLSTATE.planChanged}';
    END IF;
    v_hashes := p_hashes;
  END IF;

  -- 6. Insert, 7. advance the head.
  INSERT INTO ${s}.events (position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash)
  SELECT v_first + u.ord - 1, p_stream_id, v_rev + u.ord, u.id, u.type, u.data::jsonb, u.metadata::jsonb, p_recorded_at, u.hash
    FROM unnest(p_event_ids, p_types, p_data, p_metadata, v_hashes) WITH ORDINALITY AS u(id, type, data, metadata, hash, ord);
  UPDATE ${s}.streams SET revision = v_rev + n, head_hash = v_hashes[n], head_position = v_first + n - 1
   WHERE stream_id = p_stream_id;

  RETURN QUERY SELECT 'appended'::text, v_rev + n, v_first + n - 1, v_rev, v_head, v_first;
END
$fn$;
`;
}
