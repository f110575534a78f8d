/**
 * `npm run bench:store`: appends per second through each event store adapter, at 1 and at 100
 * events per append, beside a raw INSERT of the same rows into the same kind of database measured
 * in the same run, and the ratio (target ≥ 0.5).
 *
 * Raw and store alternate in short rounds (raw first in even rounds, store first in odd ones) so
 * that disk and CPU drift over the run hits both sides alike.
 *
 * Environment: GPUNET_BENCH_SECONDS (per side and size, default 3), GPUNET_BENCH_ADAPTERS
 * (comma-separated names, default all), GPUNET_BENCH_DIR (SQLite files, default OS temp dir).
 * Prints a table, then one JSON line per figure:
 * {"bench":"store.sqlite.batch1","value":N,"unit":"events/s","raw":R,"ratio":X}
 */
import { randomUUID } from 'node:crypto';
import type { EventMetadata, EventToAppend } from '#event-store';
import type { BenchAdapter, BenchTarget, RawBenchRow } from './bench-adapter.js';
import { postgresBenchAdapter } from './postgres.bench-adapter.js';
import { sqliteBenchAdapter } from './sqlite.bench-adapter.js';

/** Every backend measured; add yours here. */
const ADAPTERS: BenchAdapter[] = [sqliteBenchAdapter, postgresBenchAdapter];

const BATCH_SIZES = [1, 100] as const;
const SECONDS = Number(process.env.GPUNET_BENCH_SECONDS ?? 3);
const ROUNDS = 6;
const WARMUP_MS = 300;
/** Appends go round-robin over this many streams, as a service's jobs would. */
const STREAMS = 1_000;
const FAKE_HASH = 'a'.repeat(64);

interface Figure {
  adapter: string;
  batch: number;
  value: number;
  raw: number;
  ratio: number;
  notes: string;
}

/** A realistic event of ~400 bytes stored (data + metadata). */
function makeEvent(stream: number): EventToAppend {
  const metadata: EventMetadata = {
    correlationId: randomUUID(),
    causationId: randomUUID(),
    jobId: `job-${stream}`,
    team: `team-${stream % 17}`,
    producer: 'execution',
    occurredAt: new Date().toISOString(),
  };
  return {
    eventId: randomUUID(),
    type: 'JobCheckpointed',
    data: { jobId: `job-${stream}`, attempt: 1, node: 'node-a17', gpus: [0, 1, 2, 3], checkpoint: { blob: 'sha256-' + 'f'.repeat(64), bytes: 1_234_567 } },
    metadata,
  };
}

/** The driver's side of the raw writer: the same events, serialized plainly, with per-stream revisions. */
function rawRows(events: EventToAppend[], streamId: string, revisions: Map<string, bigint>): RawBenchRow[] {
  const recordedAt = new Date().toISOString();
  let revision = revisions.get(streamId) ?? -1n;
  const rows = events.map((e) => ({
    streamId,
    revision: ++revision,
    eventId: e.eventId,
    type: e.type,
    dataJson: JSON.stringify(e.data),
    metadataJson: JSON.stringify(e.metadata),
    jobId: e.metadata.jobId ?? null,
    team: e.metadata.team ?? null,
    recordedAt,
    hash: FAKE_HASH,
  }));
  revisions.set(streamId, revision);
  return rows;
}

/**
 * Repeats one append of `batch` events until `ms` of time spent inside the appends have passed.
 * Inputs are made outside the timed window (`prepare`), so neither side pays for generating
 * events and the raw side does not pay for serializing them: a strict raw limit.
 */
async function runFor<T>(ms: number, prepare: () => T, op: (input: T) => Promise<unknown>, batch: number): Promise<{ events: number; ms: number }> {
  let spent = 0;
  let events = 0;
  while (spent < ms) {
    const input = prepare();
    const start = performance.now();
    await op(input);
    spent += performance.now() - start;
    events += batch;
  }
  return { events, ms: spent };
}

async function measure(target: BenchTarget, batch: number): Promise<{ value: number; raw: number }> {
  let streamCounter = 0;
  const revisions = new Map<string, bigint>();
  const nextAppend = () => {
    const s = streamCounter++ % STREAMS;
    return { streamId: `job-${s}`, events: Array.from({ length: batch }, () => makeEvent(s)) };
  };
  const store = {
    prepare: nextAppend,
    op: (a: { streamId: string; events: EventToAppend[] }) => target.store.appendToStream(a.streamId, a.events),
  };
  const raw = {
    prepare: () => {
      const a = nextAppend();
      return rawRows(a.events, a.streamId, revisions);
    },
    op: (rows: RawBenchRow[]) => target.rawInsert(rows),
  };

  await runFor(WARMUP_MS, raw.prepare, raw.op, batch);
  await runFor(WARMUP_MS, store.prepare, store.op, batch);
  const totals = { store: { events: 0, ms: 0 }, raw: { events: 0, ms: 0 } };
  const roundMs = (SECONDS * 1000) / ROUNDS;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['raw', 'store'] as const) : (['store', 'raw'] as const);
    for (const side of order) {
      const r = side === 'raw' ? await runFor(roundMs, raw.prepare, raw.op, batch) : await runFor(roundMs, store.prepare, store.op, batch);
      totals[side].events += r.events;
      totals[side].ms += r.ms;
    }
  }
  const verdict = await target.store.verify();
  if (!verdict.ok) throw new Error(`the benchmarked store does not verify: ${verdict.reason} at ${verdict.firstBadPosition}`);
  return {
    value: Math.round((totals.store.events * 1000) / totals.store.ms),
    raw: Math.round((totals.raw.events * 1000) / totals.raw.ms),
  };
}

function printTable(figures: Figure[]): void {
  const rows = [
    ['adapter', 'events/append', 'store events/s', 'raw events/s', 'ratio', 'target ≥ 0.5'],
    ...figures.map((f) => [f.adapter, String(f.batch), String(f.value), String(f.raw), f.ratio.toFixed(2), f.ratio >= 0.5 ? 'met' : 'NOT met']),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const [i, r] of rows.entries()) {
    console.log(r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
    if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  }
  for (const note of new Set(figures.map((f) => `${f.adapter}: ${f.notes}`))) console.log(note);
}

async function main(): Promise<void> {
  const wanted = process.env.GPUNET_BENCH_ADAPTERS?.split(',').map((s) => s.trim());
  const adapters = wanted ? ADAPTERS.filter((a) => wanted.includes(a.name)) : ADAPTERS;
  if (adapters.length === 0) throw new Error(`no adapter matches GPUNET_BENCH_ADAPTERS=${process.env.GPUNET_BENCH_ADAPTERS}`);
  console.log(`store benchmark: ${SECONDS} s per side and size, ${ROUNDS} alternating rounds, ${STREAMS} streams`);

  const figures: Figure[] = [];
  for (const adapter of adapters) {
    for (const batch of BATCH_SIZES) {
      // A fresh database per size, so the second size does not start on a bigger file.
      const target = await adapter.open();
      try {
        const { value, raw } = await measure(target, batch);
        figures.push({ adapter: adapter.name, batch, value, raw, ratio: Math.round((value / raw) * 100) / 100, notes: target.notes });
      } finally {
        await target.close();
      }
    }
  }

  console.log('');
  printTable(figures);
  console.log('');
  for (const f of figures) {
    console.log(JSON.stringify({ bench: `store.${f.adapter}.batch${f.batch}`, value: f.value, unit: 'events/s', raw: f.raw, ratio: f.ratio }));
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
