import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The PostgreSQL server tests run against. `scripts/test.sh` makes sure one is running and
 * exports GPUNET_TEST_PG_URL; the default matches a Debian server with trust auth on loopback.
 */
export const TEST_PG_ADMIN_URL = process.env.GPUNET_TEST_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** Drops the database (terminating any connection still open to it). */
  drop(): Promise<void>;
}

/** Creates a fresh database of this test's own; never reuses state from an earlier run. */
export async function createTestDatabase(prefix = 'gpunet_t'): Promise<TestDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL is not reachable at ${TEST_PG_ADMIN_URL} (${(err as Error).message}). ` +
        'Run the tests through `npm test`, which starts it, or set GPUNET_TEST_PG_URL.',
      { cause: err },
    );
  }
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(TEST_PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: TEST_PG_ADMIN_URL });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}
