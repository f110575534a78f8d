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
  RAISE EXCEPTION 'gpunet event store: % on %.% refused (the log is append-only, stream heads only move forward)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
    USING ERRCODE = '${SQLSTATE.appendOnly}';
END
$fn$;
CREATE OR REPLACE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON ${s}.events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.refuse_log_change();
CREATE OR REPLACE TRIGGER events_no_truncate BEFORE TRUNCATE ON ${s}.events
  FOR EACH STATEMENT EXECUTE FUNCTION ${s}.refuse_log_change();

-- Stream heads only move forward and are never removed, so a stray statement cannot hide a
-- deleted tail by rewinding the head. The WHEN clause keeps the trigger off the append's path.
CREATE OR REPLACE TRIGGER streams_forward_only BEFORE UPDATE ON ${s}.streams
  FOR EACH ROW WHEN (NEW.stream_id <> OLD.stream_id OR NEW.revision <= OLD.revision)
  EXECUTE FUNCTION ${s}.refuse_log_change();
CREATE OR REPLACE TRIGGER streams_no_delete BEFORE DELETE OR TRUNCATE ON ${s}.streams
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

/** Transaction-local setting holding `<xid>:<next ordinal>` between appends of one transaction. */
const ORDINAL_SETTING = 'gpunet.append_ordinal';

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
 * Returns o_outcome 'appended' | 'duplicate' | 'plan', with the stream's revision and head before
 * the append, its first and last position and the next expected revision.
 *
 * Every statement on the hot path is an equality or a unique-index lookup, so no cached plan
 * depends on table statistics (a fresh, fast-growing table once turned an `= ANY` probe into a
 * sequential scan per append).
 */
function appendFunctionSql(s: string): string {
  return `
-- The events of a batch already recorded, compared with the batch. Raises IdempotencyConflict
-- when one was recorded in another stream or with another payload, or when only part of the
-- batch was recorded, or not as one run; o_found = 0: none recorded; o_found = n: a retry.
-- Rows at positions [p_skip_from, p_skip_to) (the caller's own insert) are not "recorded before".
CREATE OR REPLACE FUNCTION ${s}.match_recorded(
  p_stream_id text, p_event_ids uuid[], p_types text[], p_data text[], p_metadata text[],
  p_skip_from bigint, p_skip_to bigint,
  OUT o_found int, OUT o_last_revision bigint, OUT o_last_position bigint
) LANGUAGE plpgsql AS $fn$
DECLARE
  v_row      record;
  v_in_order boolean := true;
  v_first_id uuid;
BEGIN
  o_found := 0;
  FOR v_row IN
    SELECT b.id, e.stream_id, e.revision, e.position,
           (e.type = b.type AND e.data = b.data::jsonb AND e.metadata = b.metadata::jsonb) AS same
      FROM unnest(p_event_ids, p_types, p_data, p_metadata) WITH ORDINALITY AS b(id, type, data, metadata, ord)
      LEFT JOIN LATERAL (
        SELECT * FROM ${s}.events r
         WHERE r.event_id = b.id AND (p_skip_from IS NULL OR r.position < p_skip_from OR r.position >= p_skip_to)
      ) e ON true
     ORDER BY b.ord
  LOOP
    CONTINUE WHEN v_row.stream_id IS NULL; -- not recorded before
    IF v_row.stream_id <> p_stream_id THEN
      RAISE EXCEPTION 'event % is already recorded in stream %', v_row.id, v_row.stream_id
        USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_row.id::text;
    ELSIF NOT v_row.same THEN
      RAISE EXCEPTION 'event % is already recorded with a different payload', v_row.id
        USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_row.id::text;
    END IF;
    v_in_order := v_in_order AND (o_found = 0 OR v_row.revision = o_last_revision + 1);
    o_found := o_found + 1;
    o_last_revision := v_row.revision;
    o_last_position := v_row.position;
    v_first_id := coalesce(v_first_id, v_row.id);
  END LOOP;
  IF o_found > 0 AND (o_found < cardinality(p_event_ids) OR NOT v_in_order) THEN
    RAISE EXCEPTION 'the batch partly overlaps an earlier append (event % is already recorded, not as this batch)', v_first_id
      USING ERRCODE = '${SQLSTATE.idempotencyConflict}', DETAIL = v_first_id::text;
  END IF;
END
$fn$;

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
  p_plan_only      boolean DEFAULT false,
  OUT o_outcome    text,
  OUT o_next_expected_revision bigint,
  OUT o_last_position bigint,
  OUT o_current_revision bigint,
  OUT o_head_hash  text,
  OUT o_first_position bigint
) LANGUAGE plpgsql AS $fn$
DECLARE
  n         int := cardinality(p_event_ids);
  v_rev     bigint;
  v_head    text;
  v_xid     bigint;
  v_ordinal bigint := 0;
  v_counter text;
  v_first   bigint;
  v_hashes  text[];
  v_prev    text;
  v_count   int;
  v_match   record;
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

  -- 2. Positions: this transaction's id above ${ORDINAL_BITS} ordinal bits; a later append of the
  --    same transaction continues the ordinal (kept in a transaction-local setting, which a
  --    rolled-back savepoint rewinds together with its rows).
  v_xid := pg_current_xact_id()::text::bigint;
  v_counter := current_setting('${ORDINAL_SETTING}', true);
  IF v_counter LIKE v_xid::text || ':%' THEN
    v_ordinal := split_part(v_counter, ':', 2)::bigint;
  END IF;
  IF v_ordinal + n > ${2 ** ORDINAL_BITS} THEN
    RAISE EXCEPTION 'a transaction holds at most ${2 ** ORDINAL_BITS} events' USING ERRCODE = '${SQLSTATE.transactionFull}';
  END IF;
  v_first := (v_xid << ${ORDINAL_BITS}) + v_ordinal;

  -- 3. Expected revision. A retried batch carries the revision it expected back then: when the
  --    batch is already recorded, as this batch, the retry gets the original result.
  --    DETAIL carries the actual revision (-1: no stream).
  IF (p_expected = 'no_stream' AND v_rev <> -1)
     OR (p_expected = 'stream_exists' AND v_rev = -1)
     OR (p_expected NOT IN ('any', 'no_stream', 'stream_exists') AND v_rev <> p_expected::bigint) THEN
    SELECT * INTO v_match FROM ${s}.match_recorded(p_stream_id, p_event_ids, p_types, p_data, p_metadata, NULL, NULL);
    IF v_match.o_found = n THEN
      o_outcome := 'duplicate'; o_next_expected_revision := v_match.o_last_revision; o_last_position := v_match.o_last_position;
      RETURN;
    END IF;
    RAISE EXCEPTION 'stream %: expected revision %, actual %', p_stream_id, p_expected, v_rev
      USING ERRCODE = '${SQLSTATE.wrongExpectedVersion}', DETAIL = v_rev::text;
  END IF;

  o_current_revision := v_rev; o_head_hash := v_head; o_first_position := v_first;
  IF p_plan_only THEN
    o_outcome := 'plan';
    RETURN;
  END IF;

  -- 4. The hash chain, continuing from the stream head.
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

  -- 5. Insert. Event ids are idempotency keys: the unique index finds a recorded one (waiting
  --    for a concurrent first attempt to commit or roll back), and only then is the batch compared.
  INSERT INTO ${s}.events (position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash)
  SELECT v_first + u.ord - 1, p_stream_id, v_rev + u.ord, u.id, u.type, u.data::jsonb, u.metadata::jsonb, p_recorded_at, u.hash
    FROM unnest(p_event_ids, p_types, p_data, p_metadata, v_hashes) WITH ORDINALITY AS u(id, type, data, metadata, hash, ord)
  ON CONFLICT (event_id) DO NOTHING;
  GET DIAGNOSTICS v_count = ROW_COUNT;
  IF v_count < n THEN
    -- Raises (rolling back this insert) unless the whole batch was recorded before, as one run.
    SELECT * INTO v_match FROM ${s}.match_recorded(p_stream_id, p_event_ids, p_types, p_data, p_metadata, v_first, v_first + n);
    IF v_match.o_found < n THEN -- only an id repeated within the batch conflicts with this insert
      RAISE EXCEPTION 'an event id repeats within the batch' USING ERRCODE = '${SQLSTATE.idempotencyConflict}';
    END IF;
    o_outcome := 'duplicate'; o_next_expected_revision := v_match.o_last_revision; o_last_position := v_match.o_last_position;
    RETURN;
  END IF;

  -- 6. Advance the head and this transaction's ordinal.
  UPDATE ${s}.streams SET revision = v_rev + n, head_hash = v_hashes[n], head_position = v_first + n - 1
   WHERE stream_id = p_stream_id;
  PERFORM set_config('${ORDINAL_SETTING}', v_xid::text || ':' || (v_ordinal + n)::text, true);

  o_outcome := 'appended'; o_next_expected_revision := v_rev + n; o_last_position := v_first + n - 1;
END
$fn$;
`;
}
