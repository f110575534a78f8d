/**
 * A relay as its own process, for the crash test (and by hand):
 *   node dist/libs/messaging/test-fixtures/relay-process.js <sqlite-file> <nats-url> [relay-name]
 * Prints one JSON line `{"startedFrom":"<position>"}` once relaying, then relays until SIGTERM
 * (graceful stop) or SIGKILL (the crash under test).
 */
import { connect } from '@nats-io/transport-node';
import { SqliteEventStore } from '#event-store';
import { pino } from 'pino';
import { OutboxRelay } from '../src/outbox/outbox-relay.js';

const [path, servers, name = 'outbox-relay'] = process.argv.slice(2);
if (!path || !servers) {
  process.stderr.write('usage: relay-process <sqlite-file> <nats-url> [relay-name]\n');
  process.exit(2);
}
const store = new SqliteEventStore({ path });
const nc = await connect({ servers, noAsyncTraces: true });
const relay = new OutboxRelay(store, nc, {
  name,
  checkpointEvery: 200,
  checkpointIntervalMs: 50,
  pollIntervalMs: 20,
  logger: pino({ level: 'warn' }, pino.destination(2)),
});
await relay.start();
process.stdout.write(`${JSON.stringify({ startedFrom: relay.stats.startedFrom.toString() })}\n`);
process.once('SIGTERM', () => {
  void (async () => {
    await relay.stop();
    await nc.close();
    await store.close();
    process.exit(0);
  })();
});
