/**
 * `npm run bench:notary`: the notary's first pass over a store of many streams (a ledger starting
 * on a year of history), its catch-up at a restart, and one digest in steady state, beside the raw
 * read of the same store in the same run.
 *
 * The store: `--streams` streams (default 500,000) of `--events` events each (default 2), ids as
 * long as the services' attempt streams, written through the store's own append path (hash chain
 * included) in large transactions. The first pass signs digests of at most 1,000 heads each, as
 * the ledger does, until one covers the head.
 *
 * Figures:
 * - notary.first_pass: store events covered per second by the first pass (walk, chain check,
 *   tree, signature, append of each digest); raw: `readAll` of every event in the same pages;
 * - notary.restart_sync: ms for a new notary to catch up with the digests recorded (a restarted
 *   ledger: it loads its table of heads and folds the digests after it, decision 0051);
 * - notary.steady_digest: ms for one more digest after one event (p50 of `--reps`);
 * - notary.heap_mb: JavaScript heap after the restart's fold (the notary's memory per stream);
 * - notary.outside_heap_per_stream: bytes the restarted notary holds outside the heap (buffers), per stream.
 * Ends with one JSON line per figure.
 */
import { DIGEST_STREAM } from '#contracts';
import { SqliteEventStore, type EventToAppend } from '#event-store';
import { newIdentity } from '#identity';
import { Command } from 'commander';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Notary } from '../../services/ledger/src/digests/store-digests.js';
import { positive } from './args.js';

const opts = new Command('notary.bench')
  .option('--streams <n>', 'streams in the store', positive, 500_000)
  .option('--events <n>', 'events per stream', positive, 2)
  .option('--reps <n>', 'steady-state digests', positive, 20)
  .parse()
  .opts<{ streams: number; events: number; reps: number }>();

const say = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const figures: Record<string, unknown>[] = [];

function event(type = 'UsageRecorded'): EventToAppend {
  const id = randomUUID();
  return { eventId: id, type, data: { n: 1 }, metadata: { correlationId: id, causationId: id, producer: 'bench', occurredAt: '2026-06-10T00:00:00.000Z' } };
}

const streamId = (i: number) => `execution-node-${i % 64}-attempt-job_${i.toString(36).padStart(12, '0')}-a1`;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'gpunet-notary-bench-'));
  const store = new SqliteEventStore({ path: join(dir, 'events.db') });
  try {
    say(`building ${opts.streams.toLocaleString('en')} streams × ${opts.events} events`);
    for (let from = 0; from < opts.streams; from += 5_000) {
      const batch = [];
      for (let i = from; i < Math.min(opts.streams, from + 5_000); i++) batch.push({ streamId: streamId(i), events: Array.from({ length: opts.events }, () => event()) });
      await store.appendMany(batch);
    }
    const head = await store.headPosition();
    say(`store: ${head} events`);

    let t = performance.now();
    let read = 0;
    for (let at = 0n; ; ) {
      const page = await store.readAll({ fromPosition: at, maxCount: 5_000 });
      read += page.length;
      if (page.length < 5_000) break;
      at = page[page.length - 1]!.position;
    }
    const rawRate = read / ((performance.now() - t) / 1000);
    say(`raw read: ${read} events at ${Math.round(rawRate)} events/s`);

    const key = newIdentity();
    const notary = new Notary(store, key);
    t = performance.now();
    let digests = 0;
    for (;;) {
      const next = await notary.next(new Date().toISOString());
      if (!next) break;
      await store.appendToStream(DIGEST_STREAM, [{ ...event('ChainHeadsSigned'), data: next.digest }], { expectedRevision: Notary.expectedRevision(next.digest) });
      digests += 1;
      if (digests % 100 === 0) say(`  ${digests} digests, ${Math.round((performance.now() - t) / 1000)} s`);
      if (!next.partial) break;
    }
    const firstMs = performance.now() - t;
    const firstRate = Number(head) / (firstMs / 1000);
    say(`first pass: ${digests} digests in ${round(firstMs / 1000)} s (${Math.round(firstRate)} events/s, raw read ${Math.round(rawRate)})`);
    figures.push({ bench: 'notary.first_pass', value: Math.round(firstRate), unit: 'events/s', raw: Math.round(rawRate), ratio: round(firstRate / rawRate, 3), digests, streams: opts.streams });

    global.gc?.();
    const outsideBefore = process.memoryUsage().arrayBuffers;
    const restarted = new Notary(store, key);
    t = performance.now();
    await restarted.sync();
    const syncMs = performance.now() - t;
    global.gc?.();
    // What the restarted notary holds outside the JavaScript heap (its tree's buffers), per stream.
    const outsidePerStream = (process.memoryUsage().arrayBuffers - outsideBefore) / opts.streams;
    // It must hold every stream once (and the digest stream when a digest covers it); sync checked the root.
    if (restarted.streams < opts.streams || restarted.streams > opts.streams + 1) throw new Error(`the restarted notary holds ${restarted.streams} streams, the store ${opts.streams} and the digests`);
    global.gc?.();
    const heapMb = process.memoryUsage().heapUsed / 2 ** 20;
    say(`restart: folded ${digests} digests in ${round(syncMs)} ms; heap ${round(heapMb)} MB, rss ${round(process.memoryUsage().rss / 2 ** 20)} MB`);
    figures.push({ bench: 'notary.restart_sync', value: round(syncMs), unit: 'ms', digests, streams: opts.streams });
    figures.push({ bench: 'notary.heap_mb', value: round(heapMb), unit: 'MB', streams: opts.streams });
    say(`restart: the notary holds ${round(outsidePerStream)} bytes per stream outside the heap`);
    figures.push({ bench: 'notary.outside_heap_per_stream', value: round(outsidePerStream), unit: 'bytes', streams: opts.streams });

    const steady: number[] = [];
    for (let r = 0; r < opts.reps; r++) {
      await store.appendToStream(streamId(r * 7919 % opts.streams), [event()], {});
      t = performance.now();
      const next = (await restarted.next(new Date().toISOString()))!;
      await store.appendToStream(DIGEST_STREAM, [{ ...event('ChainHeadsSigned'), data: next.digest }], { expectedRevision: Notary.expectedRevision(next.digest) });
      steady.push(performance.now() - t);
    }
    steady.sort((a, b) => a - b);
    const p50 = steady[Math.floor(steady.length / 2)]!;
    say(`steady state: one digest after one event, p50 ${round(p50)} ms, max ${round(steady.at(-1)!)} ms`);
    figures.push({ bench: 'notary.steady_digest', value: round(p50), unit: 'ms', streams: opts.streams });
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
  for (const f of figures) console.log(JSON.stringify(f));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
