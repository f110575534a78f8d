import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { RecordedEvent } from '../event-store.js';
import { SubscriptionReader } from '../conformance/fixtures.js';
import { SqliteEventStore } from './sqlite-event-store.js';

const run = promisify(execFile);

/** Child processes run the built adapter (`npm test` builds first), as separate services would. */
const BUILT_INDEX = resolve('dist/libs/event-store/src/index.js');

/** One writer process: `perProcess` events to a contested stream (read, append at that revision, retry on conflict) and as many to its own stream. */
const WORKER = `
import { SqliteEventStore, WrongExpectedVersionError } from ${JSON.stringify(BUILT_INDEX)};
import { randomUUID } from 'node:crypto';
const [path, name, perProcess] = process.argv.slice(1);
const store = new SqliteEventStore({ path, busyTimeoutMs: 20000 });
const event = (i) => ({ eventId: randomUUID(), type: 'Step', data: { name, i },
  metadata: { correlationId: name, causationId: name, producer: name, occurredAt: new Date().toISOString() } });
let conflicts = 0;
for (let i = 0; i < Number(perProcess); i++) {
  const e = event(i);
  for (;;) {
    const current = await store.readStream('contested');
    const expectedRevision = current.length ? current[current.length - 1].revision : 'no_stream';
    try { await store.appendToStream('contested', [e], { expectedRevision }); break; }
    catch (err) { if (!(err instanceof WrongExpectedVersionError)) throw err; conflicts++; }
  }
  await store.appendToStream('own-' + name, [event(i)]);
}
await store.close();
console.log(JSON.stringify({ name, conflicts }));
`;

describe('sqlite event store across processes', () => {
  let dir: string;

  beforeAll(() => {
    if (!existsSync(BUILT_INDEX)) {
      throw new Error(`${BUILT_INDEX} is missing: run \`npm run build\` first (\`npm test\` does).`);
    }
  });
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpunet-es-mp-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('four writer processes on one file: gap-free positions and revisions, all seen live by a polling subscriber', async () => {
    const path = join(dir, 'events.db');
    const processes = 4;
    const perProcess = 40;
    const total = processes * perProcess * 2;
    const store = new SqliteEventStore({ path });
    const reader = new SubscriptionReader(store.subscribeToAll({ pollIntervalMs: 50 }));
    try {
      const seen: Promise<RecordedEvent[]> = reader.take(total, 60_000);
      seen.catch(() => undefined); // a failing child is the error to report, not the cut-short subscription
      const outputs = await Promise.all(
        Array.from({ length: processes }, (_, p) =>
          run(process.execPath, ['--input-type=module', '-e', WORKER, path, `w${p}`, String(perProcess)], { timeout: 60_000 }),
        ),
      );
      const events = await seen;

      // Single writer: positions are 1..total with no gap, so nothing can commit behind a reader.
      expect(events.map((e) => e.position)).toEqual(Array.from({ length: total }, (_, i) => BigInt(i + 1)));
      expect(events).toEqual(await store.readAll());
      const contested = await store.readStream('contested');
      expect(contested.map((e) => e.revision)).toEqual(Array.from({ length: processes * perProcess }, (_, i) => BigInt(i)));
      for (let p = 0; p < processes; p++) {
        expect(contested.filter((e) => (e.data as { name: string }).name === `w${p}`)).toHaveLength(perProcess);
        expect(await store.readStream(`own-w${p}`)).toHaveLength(perProcess);
      }
      const conflicts = outputs.map((o) => (JSON.parse(o.stdout) as { conflicts: number }).conflicts);
      expect(conflicts.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
      expect(await store.verify()).toMatchObject({ ok: true, events: total, streams: processes + 1 });
    } finally {
      await reader.subscription.close();
      await store.close();
    }
  }, 90_000);
});
