/**
 * `npm run bench:replay`: replays 1,000,000 events of a SQLite event store through the ledger's
 * pure billing fold (`store.readAll` in pages of 5,000, each event folded by `evolveBilling` into a
 * settling state, as the ledger's own: decision 0046),
 * beside a raw read of the same store in the same run (the same pages by a plain
 * `SELECT … ORDER BY position` on the file, `JSON.parse` of data and metadata, nothing folded).
 * Also reported: the ledger's projection as it really reads (only the billing event types,
 * through the store's type index; the figure is store events covered per second), the fold alone
 * over events already in memory, and deriving every invoice from the folded state. The ledger
 * itself folds into its table in the store's database (decision 0053): `bench:restart` measures that.
 * Target: ≥ 100,000 events/s and ≥ 0.3 of raw.
 *
 * The history: 20 teams, 200 nodes, about 111,000 jobs over three months, each job's life as the
 * services record it (JobSubmitted, InputsStaged, JobPlaced, ComputeHeld, JobStarted, JobFinished,
 * ComputeReleased, OutputsStored, UsageRecorded; 1% of attempts lost with their node), two price
 * list versions, heartbeats to make up the count. Seeded; the store file is generated once and
 * reused (`GPUNET_BENCH_DIR/gpunet-replay-<events>.db`; delete it to generate again). Generation
 * writes through the store's own append path (hash chain included) with `synchronous=OFF` on its
 * connection: it is setup, not what is measured.
 *
 * Raw, ledger and projection passes alternate (3 rounds each, the order reversed in odd rounds); medians are reported.
 * Environment: GPUNET_BENCH_EVENTS (default 1000000), GPUNET_BENCH_DIR (default OS temp dir),
 * GPUNET_BENCH_ROUNDS (default 3).
 * Prints a table, then one JSON line per figure, e.g.
 * {"bench":"replay.ledger","value":N,"unit":"events/s","raw":R,"ratio":X}
 */
import type { EventData } from '#contracts';
import { SqliteEventStore, type EventToAppend, type RecordedEvent } from '#event-store';
import Database from 'better-sqlite3';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allInvoices, BILLING_EVENT_TYPES, evolveBilling, initialBilling, type BillingState } from '../src/domain/index.js';

const EVENTS = Number(process.env.GPUNET_BENCH_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.GPUNET_BENCH_ROUNDS ?? 3);
const DIR = process.env.GPUNET_BENCH_DIR ?? tmpdir();
const PAGE = 5_000;
const TEAMS = 20;
const NODES = 200;
const START = Date.parse('2025-04-01T00:00:00.000Z');
const SPAN = Date.parse('2025-07-01T00:00:00.000Z') - START;

let seed = 20250401;
const rnd = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const iso = (t: number) => new Date(t).toISOString();
const hex = (n: number, len = 64) => n.toString(16).padStart(len, '0').slice(-len);

let counter = 0;
function id(): string {
  counter++;
  return `00000000-0000-4000-8000-${hex(counter, 12)}`;
}

function event<T extends string>(type: T, data: unknown, meta: { jobId?: string; team?: string; producer: string; at: number }): EventToAppend {
  const correlationId = meta.jobId ?? 'bench';
  return {
    eventId: id(),
    type,
    data,
    metadata: {
      correlationId,
      causationId: correlationId,
      producer: meta.producer,
      occurredAt: iso(meta.at),
      ...(meta.jobId ? { jobId: meta.jobId } : {}),
      ...(meta.team ? { team: meta.team } : {}),
    },
  };
}

/** Writes the seeded history through the store's append path. */
async function generate(path: string): Promise<void> {
  const store = new SqliteEventStore({ path, clock: () => new Date(START) });
  // Setup only: no fsync per append (the measured part only reads).
  (store as unknown as { db: Database.Database }).db.pragma('synchronous = OFF');
  let written = 0;
  const append = async (stream: string, events: EventToAppend[]) => {
    const room = EVENTS - written;
    if (room <= 0) return;
    const batch = events.slice(0, room);
    await store.appendToStream(stream, batch);
    written += batch.length;
  };
  const rates = { A100: 3_500_000, H100: 6_000_000 };
  await append('ledger-pricelist', [
    event('PriceListPublished', { version: 1, currency: 'EUR', effectiveFrom: '1970-01-01T00:00:00.000Z', ratesMicrosPerGpuHour: rates, defaultRateMicrosPerGpuHour: 2_000_000, publishedAt: iso(START) }, { producer: 'ledger', at: START }),
    event('PriceListPublished', { version: 2, currency: 'EUR', effectiveFrom: '2025-05-15T00:00:00.000Z', ratesMicrosPerGpuHour: { A100: 3_200_000, H100: 5_500_000 }, minimumChargeMicros: 1_000, publishedAt: iso(START) }, { producer: 'ledger', at: START }),
  ]);
  const started = Date.now();
  let job = 0;
  while (written < EVENTS) {
    if (EVENTS - written < 9) {
      const nodeId = `node-${job % NODES}`;
      await append(`execution-${nodeId}-node`, [event('NodeHeartbeat', { nodeId, freeGpus: [], runningAttempts: [], sentAt: iso(START) }, { producer: 'execution', at: START })]);
      continue;
    }
    job++;
    const jobId = `job-${hex(job, 8)}`;
    const attemptId = `${jobId}-a1`;
    const team = `team-${job % TEAMS}`;
    const nodeId = `node-${Math.floor(rnd() * NODES)}`;
    const gpuModel = nodeId.endsWith('7') ? 'H100' : 'A100';
    const gpus = [1, 1, 2, 4, 8][Math.floor(rnd() * 5)]!;
    const gpuIndices = Array.from({ length: gpus }, (_, i) => i);
    const submitted = START + Math.floor((job / (EVENTS / 9)) * SPAN);
    const held = submitted + 60_000;
    const finished = held + 1_000 + Math.floor(rnd() * 4 * 3_600_000);
    const outcome: EventData<'JobFinished'>['outcome'] = rnd() < 0.01 ? 'node_lost' : rnd() < 0.9 ? 'completed' : 'failed';
    const meta = (producer: string, at: number) => ({ jobId, team, producer, at });
    const spec = {
      work: { kind: 'script', script: { inline: 'python train.py' }, args: [], env: {} },
      data: { inputs: [{ name: 'data', sha256: hex(job), size: 1_000_000 }] },
      request: { gpus, timeLimitMs: 4 * 3_600_000, network: false },
      outputs: { globs: ['**'] },
    };
    await append(`intake-job-${jobId}`, [event('JobSubmitted', { jobId, team, spec, submittedAt: iso(submitted) }, meta('intake', submitted))]);
    await append(`storage-job-${jobId}`, [event('InputsStaged', { jobId, inputs: [{ name: 'data', sha256: hex(job), size: 1_000_000 }], totalBytes: 1_000_000, stagedAt: iso(submitted + 1_000) }, meta('storage', submitted))]);
    await append(`placement-job-${jobId}`, [event('JobPlaced', { jobId, attemptId, attempt: 1, nodeId, gpuIndices, gpuModel, placedAt: iso(submitted + 2_000) }, meta('placement', submitted))]);
    await append(`execution-${nodeId}-attempt-${attemptId}`, [
      event('ComputeHeld', { jobId, attemptId, nodeId, gpuIndices, gpuModel, gpus, heldAt: iso(held) }, meta('execution', held)),
      event('JobStarted', { jobId, attemptId, nodeId, startedAt: iso(held + 500) }, meta('execution', held)),
      event('JobFinished', { jobId, attemptId, nodeId, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: iso(finished) }, meta('execution', finished)),
      event('ComputeReleased', { jobId, attemptId, nodeId, gpuIndices, releasedAt: iso(finished + 2_000) }, meta('execution', finished)),
    ]);
    await append(`storage-job-${jobId}`, [
      event('OutputsStored', { jobId, attemptId, files: [{ path: 'model.bin', sha256: hex(job + 1), size: 4_096 }], totalBytes: 4_096, truncated: false, logs: [], storedAt: iso(finished + 1_000) }, meta('storage', finished)),
    ]);
    const ms = outcome === 'node_lost' ? 0 : finished - held;
    await append(`ledger-usage-${jobId}`, [
      event(
        'UsageRecorded',
        {
          jobId,
          attemptId,
          team,
          nodeId,
          gpuModel,
          gpus,
          outcome,
          heldFrom: iso(held),
          finishedAt: iso(finished),
          billableMs: ms,
          rateMicrosPerGpuHour: rates[gpuModel],
          amountMicros: Math.round((gpus * ms * rates[gpuModel]) / 3_600_000),
          currency: 'EUR',
          priceListVersion: 1,
          rounding: 'per-line-half-up-micros',
          recordedAt: iso(finished),
        },
        meta('ledger', finished),
      ),
    ]);
    if (written % 100_000 < 9) process.stderr.write(`  generated ${written.toLocaleString('en')} events (${Math.round((Date.now() - started) / 1000)} s)\n`);
  }
  await store.close();
}

interface Pass {
  ms: number;
  events: number;
  /** Time inside the fold itself (ledger pass only). */
  foldMs: number;
}

/**
 * The ledger: the store's readAll in pages, each event through evolveBilling. `filtered`: as the
 * ledger's projection reads (only the billing event types, through the store's type index).
 */
async function ledgerPass(path: string, keep?: RecordedEvent[], filtered = false): Promise<Pass & { state: BillingState }> {
  const store = new SqliteEventStore({ path });
  const state = initialBilling({ settle: true });
  let events = 0;
  let foldNs = 0n;
  const t0 = process.hrtime.bigint();
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, maxCount: PAGE, ...(filtered ? { filter: { types: BILLING_EVENT_TYPES } } : {}) });
    const f0 = process.hrtime.bigint();
    for (const e of page) evolveBilling(state, e);
    foldNs += process.hrtime.bigint() - f0;
    if (keep) for (const e of page) keep.push(e);
    events += page.length;
    if (page.length < PAGE) break;
    from = page[page.length - 1]!.position;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  await store.close();
  return { ms, events, foldMs: Number(foldNs) / 1e6, state };
}

/** Raw: the same pages by a plain SELECT on the file, data and metadata parsed, nothing else. */
function rawPass(path: string): Pass {
  const db = new Database(path, { readonly: true });
  db.defaultSafeIntegers(true);
  const select = db.prepare('SELECT position, stream_id, revision, event_id, type, data, metadata, recorded_at, hash FROM events WHERE position > ? ORDER BY position LIMIT ?');
  let events = 0;
  let sink = 0;
  const t0 = process.hrtime.bigint();
  let from = 0n;
  for (;;) {
    const rows = select.all(from, PAGE) as { position: bigint; data: string; metadata: string; type: string }[];
    for (const r of rows) {
      const data = JSON.parse(r.data) as unknown;
      const metadata = JSON.parse(r.metadata) as unknown;
      if (data !== null && metadata !== null) sink++;
    }
    events += rows.length;
    if (rows.length < PAGE) break;
    from = rows[rows.length - 1]!.position;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  db.close();
  if (sink !== events) throw new Error('raw read lost events');
  return { ms, events, foldMs: 0 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const path = join(DIR, `gpunet-replay-${EVENTS}.db`);
  const reuse = existsSync(path) && (await (async () => {
    const s = new SqliteEventStore({ path });
    const head = await s.headPosition();
    await s.close();
    return head === BigInt(EVENTS);
  })());
  if (!reuse) {
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true });
    process.stderr.write(`generating ${EVENTS.toLocaleString('en')} events into ${path} (once; reused by later runs)\n`);
    const t = Date.now();
    await generate(path);
    process.stderr.write(`  done in ${Math.round((Date.now() - t) / 1000)} s\n`);
  } else process.stderr.write(`reusing ${path}\n`);

  const raw: number[] = [];
  const ledger: number[] = [];
  const fold: number[] = [];
  const projection: number[] = [];
  let billingEvents = 0;
  let last: BillingState | undefined;
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['raw', 'ledger', 'projection'] : ['projection', 'ledger', 'raw'];
    for (const side of order) {
      if (side === 'projection') {
        const p = await ledgerPass(path, undefined, true);
        billingEvents = p.events;
        projection.push((EVENTS / p.ms) * 1000);
      } else if (side === 'raw') {
        const r = rawPass(path);
        raw.push((r.events / r.ms) * 1000);
      } else {
        const l = await ledgerPass(path);
        if (l.events !== EVENTS) throw new Error(`replayed ${l.events} events, expected ${EVENTS}`);
        ledger.push((l.events / l.ms) * 1000);
        fold.push((l.events / l.foldMs) * 1000);
        last = l.state;
      }
    }
  }
  // The fold alone over events already in memory, and every invoice derived from the result.
  const inMemory: RecordedEvent[] = [];
  await ledgerPass(path, inMemory);
  const f0 = process.hrtime.bigint();
  const state = initialBilling({ settle: true });
  for (const e of inMemory) evolveBilling(state, e);
  const foldOnlyMs = Number(process.hrtime.bigint() - f0) / 1e6;
  const i0 = process.hrtime.bigint();
  const invoices = allInvoices(state);
  const invoicesMs = Number(process.hrtime.bigint() - i0) / 1e6;
  const lines = [...invoices.values()].reduce((n, i) => n + i.lines.length, 0);
  if (last && last.attempts.size !== state.attempts.size) throw new Error('two replays of one store differ');

  const value = median(ledger);
  const rawValue = median(raw);
  const pureValue = (inMemory.length / foldOnlyMs) * 1000;
  const fmt = (n: number) => Math.round(n).toLocaleString('en').padStart(12);
  console.log(`replay of ${EVENTS.toLocaleString('en')} events (${ROUNDS} rounds, medians)`);
  console.log(`  ledger: store.readAll + evolveBilling   ${fmt(value)} events/s`);
  console.log(`  raw:    SELECT + JSON.parse, same file  ${fmt(rawValue)} events/s   ratio ${(value / rawValue).toFixed(2)}`);
  console.log(`  fold inside the ledger pass              ${fmt(median(fold))} events/s`);
  console.log(`  as the projection reads (billing types)  ${fmt(median(projection))} store events/s (${billingEvents.toLocaleString('en')} of them read and folded)   ratio ${(median(projection) / rawValue).toFixed(2)}`);
  console.log(`  fold alone, events in memory             ${fmt(pureValue)} events/s`);
  console.log(`  every invoice derived: ${invoices.size} invoices, ${lines.toLocaleString('en')} lines in ${Math.round(invoicesMs)} ms`);
  console.log(JSON.stringify({ bench: 'replay.ledger', value: Math.round(value), unit: 'events/s', raw: Math.round(rawValue), ratio: Number((value / rawValue).toFixed(3)) }));
  console.log(JSON.stringify({ bench: 'replay.ledger.projection', value: Math.round(median(projection)), unit: 'store events/s', raw: Math.round(rawValue), ratio: Number((median(projection) / rawValue).toFixed(3)) }));
  console.log(JSON.stringify({ bench: 'replay.ledger.fold', value: Math.round(pureValue), unit: 'events/s', raw: Math.round(rawValue), ratio: Number((pureValue / rawValue).toFixed(3)) }));
  console.log(JSON.stringify({ bench: 'replay.ledger.invoices', value: Math.round(invoicesMs), unit: 'ms', raw: Math.round((EVENTS / rawValue) * 1000), ratio: Number((invoicesMs / ((EVENTS / rawValue) * 1000)).toFixed(3)) }));
}

await main();
