import type pg from 'pg';

/** How {@link withTransaction} opens its transaction. */
export interface TransactionOptions {
  /** The statement that opens it. Default `BEGIN`. */
  readonly begin?: string;
  /**
   * Key of an advisory lock held until the transaction ends (`pg_advisory_xact_lock(hashtext(key))`):
   * callers that make the same tables take turns, since two `CREATE TABLE IF NOT EXISTS` of one
   * table at the same moment fail one of them (pg_type's unique index).
   */
  readonly lock?: string;
}

/**
 * Runs `work` on a client of `connect` in one transaction: committed when it resolves, rolled
 * back when it throws (the error is rethrown), and the client released either way.
 */
export async function withTransaction<T>(connect: () => Promise<pg.PoolClient>, work: (client: pg.PoolClient) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
  const client = await connect();
  try {
    await client.query(options.begin ?? 'BEGIN');
    if (options.lock !== undefined) await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [options.lock]);
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
