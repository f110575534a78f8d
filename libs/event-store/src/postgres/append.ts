import type pg from 'pg';
import { TransientError, ValidationError } from '#errors';
import { prepareAppend } from '../append-validation.js';
import { FencedError, IdempotencyConflictError, WrongExpectedVersionError } from '../errors.js';
import type { AppendOptions, AppendResult, EventToAppend, ExpectedRevision } from '../event-store.js';
import { computeEventHashCanonical } from '../hash-chain.js';
import { SQLSTATE } from './schema.js';

/** What an append needs to know about the store it writes to. */
export interface PostgresAppendSettings {
  /** Schema of the store's tables (validated at open). */
  schema: string;
  /** HMAC key of the hash chain; absent: plain sha256, computed in the database. */
  chainKey?: string;
  /** Source of `recordedAt`. */
  clock: () => Date;
}

interface AppendRow {
  o_outcome: 'appended' | 'duplicate' | 'plan';
  o_next_expected_revision: string | null;
  o_last_position: string | null;
  o_current_revision: string;
  o_head_hash: string;
  o_first_position: string | null;
}

/**
 * Appends to one stream on `client`, inside the transaction the client is in, if any: the
 * events commit or roll back with the caller's own writes (an outbox, a read model). Without a
 * transaction the append is its own. Without a chain key it is one statement (one round trip);
 * with one, the database plans (locks the head, checks, picks positions), the HMACs are
 * computed here so the key never reaches the server, then the same function writes.
 *
 * The caller's transaction must be READ COMMITTED (the default): the head lock waits for a
 * concurrent appender and then reads its committed head.
 *
 * Throws WrongExpectedVersionError, IdempotencyConflictError, ValidationError, and
 * TransientError when the database is unreachable.
 */
export async function appendOnClient(
  client: pg.ClientBase,
  settings: PostgresAppendSettings,
  streamId: string,
  events: readonly EventToAppend[],
  options: AppendOptions = {},
): Promise<AppendResult> {
  const prepared = prepareAppend(streamId, events, options);
  const expected: ExpectedRevision = options.expectedRevision ?? 'any';
  // PostgreSQL returns uuids in lower case; hash and compare the form it gives back.
  const eventIds = prepared.map((e) => e.eventId.toLowerCase());
  const types = prepared.map((e) => e.type);
  const data = prepared.map((e) => e.dataJson);
  const metadata = prepared.map((e) => e.metadataJson);
  const recordedAt = settings.clock().toISOString();
  const call = (expectedText: string, heads: string[] | null, hashes: string[] | null, firstPosition: bigint | null, planOnly: boolean) =>
    client.query<AppendRow>({
      name: `gpunet_append_${settings.schema}`,
      text: `SELECT * FROM ${settings.schema}.append_events($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
      values: [
        streamId,
        expectedText,
        eventIds,
        types,
        data,
        metadata,
        recordedAt,
        '[' + JSON.stringify(streamId) + ',"',
        heads,
        JSON.stringify(recordedAt),
        hashes,
        firstPosition?.toString() ?? null,
        planOnly,
      ],
    });

  try {
    const fence = options.fence;
    if (fence) {
      // The fence stream's head is share-locked until this transaction ends: an election (an
      // append there, which locks the head for update) waits for this append to commit, and
      // one that committed first is seen here. Lock order is always fence, then stream.
      return await inTransaction(client, async () => {
        const { rows } = await client.query<{ revision: string }>({
          name: `gpunet_fence_${settings.schema}`,
          text: `SELECT revision FROM ${settings.schema}.streams WHERE stream_id = $1 FOR SHARE`,
          values: [fence.streamId],
        });
        const at = rows[0] === undefined || rows[0].revision === '-1' ? 'no_stream' : BigInt(rows[0].revision);
        if (at !== fence.revision) throw new FencedError(streamId, fence, at);
        return append();
      });
    }
    return await append();
  } catch (err) {
    throw mapAppendError(err, streamId, expected);
  }

  async function append(): Promise<AppendResult> {
    if (!settings.chainKey) {
      const heads = prepared.map((e, i) => `${JSON.stringify(eventIds[i])},${JSON.stringify(e.type)}`);
      return toResult((await call(String(expected), heads, null, null, false)).rows[0]!);
    }
    return await inTransaction(client, async () => {
      const plan = (await call(String(expected), null, null, null, true)).rows[0]!;
      if (plan.o_outcome === 'duplicate') return toResult(plan);
      const revision = BigInt(plan.o_current_revision);
      const first = BigInt(plan.o_first_position!);
      let prev = plan.o_head_hash;
      const hashes = prepared.map((e, i) => {
        prev = computeEventHashCanonical(
          prev,
          { ...e, streamId, eventId: eventIds[i]!, revision: revision + 1n + BigInt(i), position: first + BigInt(i), recordedAt },
          settings.chainKey,
        );
        return prev;
      });
      // Under the head lock nothing moved: the plan's revision is now an exact expectation.
      const exact = revision < 0n ? 'no_stream' : revision.toString();
      return toResult((await call(exact, null, hashes, first, false)).rows[0]!);
    });
  }
}

function toResult(row: AppendRow): AppendResult {
  return { nextExpectedRevision: BigInt(row.o_next_expected_revision!), position: BigInt(row.o_last_position!) };
}

/** Runs `fn` in the client's current transaction, or in one of its own when there is none. */
async function inTransaction<T>(client: pg.ClientBase, fn: () => Promise<T>): Promise<T> {
  if ((client as pg.Client).getTransactionStatus?.() !== 'I') return fn();
  await client.query('BEGIN');
  try {
    const result = await fn();
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}

/** PostgreSQL error codes after which the same call may succeed (connection loss, shutdown, deadlock, overload). */
const RETRYABLE_SQLSTATES = new Set(['40001', '40P01', '53300', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);
const RETRYABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE']);

/** Maps a driver error of an append to the port's error family; leaves other errors as they are. */
export function mapAppendError(err: unknown, streamId: string, expected: ExpectedRevision): unknown {
  const e = err as pg.DatabaseError & { code?: string };
  switch (e?.code) {
    case SQLSTATE.wrongExpectedVersion: {
      const actual = e.detail === '-1' ? 'no_stream' : BigInt(e.detail ?? '-1');
      return new WrongExpectedVersionError(streamId, expected, actual);
    }
    case SQLSTATE.idempotencyConflict:
      return Object.assign(new IdempotencyConflictError(e.message, e.detail ?? ''), { cause: err });
    case SQLSTATE.transactionFull:
      return new ValidationError(e.message, [{ path: 'events', message: e.message, fix: 'split the work over several transactions' }], { cause: err });
    case '22P05': // untranslatable character, e.g. \u0000 in a JSON string: jsonb refuses it
    case '22021':
      return new ValidationError(`event data cannot be stored: ${e.message}`, [{ path: 'events', message: e.message }], { cause: err });
    default:
      return isRetryableDriverError(e) ? new TransientError(`PostgreSQL unavailable: ${e.message}`, { cause: err }) : err;
  }
}

export function isRetryableDriverError(e: { code?: string } | undefined): boolean {
  return !!e?.code && (RETRYABLE_SQLSTATES.has(e.code) || RETRYABLE_NODE_CODES.has(e.code));
}
