/** What the benches that run a TestNetwork on a built history share: timing, and the network's end. */
import { rm } from 'node:fs/promises';
import type { TestNetwork } from '../support/network.js';
import type { TestDatabase } from '../support/postgres.js';

/** The result of `fn` and how long it took. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const started = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - started };
}

/**
 * Stops the network; removes its data directory and drops its database when the bench got
 * through (`done`) and `keep` was not asked, else keeps both and says where.
 */
export async function stopBenchNetwork(net: TestNetwork, db: TestDatabase | undefined, options: { keep?: boolean | undefined; done: boolean }, say: (line: string) => void): Promise<void> {
  // TestNetwork keeps the data directory when this is set.
  if (options.keep || !options.done) process.env.GPUNET_E2E_KEEP_DATA = '1';
  await net.stop().catch(() => undefined);
  if (!options.keep && options.done) {
    await rm(net.dataDir, { recursive: true, force: true });
    await db?.drop().catch(() => undefined);
  } else say(`kept ${net.dataDir}${db ? ` and database ${db.name}` : ''}`);
}
