/**
 * Restarts that do not grow with history (issue 16, item 3): a store of N jobs (about 13 events
 * each: test/support/history.ts, written straight into the store in large transactions), then
 * intake, placement, the ledger and storage as their real processes on it, each started more than once: once on the history as
 * written (intake's job views and placement's state come from the whole store, as every start
 * did before they kept anything), then again after each SIGTERM (`--restarts`, 2 by default; a restart: what it kept — intake's
 * table, placement's snapshot — lets it read only the tail). Beside them the store's raw read of the same events (`readAll` from the start
 * to the head in batches, nothing folded), the floor a fold from zero cannot beat.
 *
 *   npm run bench:restart -- [--jobs 20000] [--postgres] [--keep] [--only ledger] [--restarts 2] [--from-store FILE]
 *
 * Time is from spawning the process to its answer to the Health query (each answers once its state
 * is ready: it folds before it serves), and the events each start folded, from its log.
 * Ends with one JSON line per figure: {"bench":"restart.intake.ms","value":N,"unit":"ms","raw":R,...},
 * `restart.placement.ms`, `restart.placement.events_folded`, the same for storage (its input references), the ledger (its billing
 * projection's fold; its audit table catches up beside it), and the same for the first starts.
 */
import { openEventStore, PostgresEventStore, SqliteEventStore } from '#event-store';
import { Command } from 'commander';
import { copyFile, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { readState } from '../../libs/cli/src/local/state.js';
import { buildHistoryStore, HISTORY_DEFAULTS, relaysAtHead } from '../support/history.js';
import { TestNetwork } from '../support/network.js';
import { stopBenchNetwork, timed } from './bench-network.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { positive } from './args.js';


const opts = new Command('restart.bench')
  .option('--jobs <n>', 'jobs in the store', positive, 20_000)
  .option('--teams <n>', 'teams the jobs belong to', positive, HISTORY_DEFAULTS.teams)
  .option('--postgres', 'the store on PostgreSQL (a database made for the run) instead of SQLite')
  .option('--health-timeout <s>', 'how long a start may take (and the ledger\'s audit table to catch up at start, GPUNET_AUDIT_CATCH_UP)', positive, 1_800)
  .option('--only <services>', 'measure only these services (comma-separated: intake,placement,ledger,storage)', (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean))
  .option('--restarts <n>', 'restarts measured after the first start (the last is the figure: a first restart may still fold what the first start wrote, such as invoices finalized)', positive, 2)
  .option('--lease-ms <ms>', 'leader lease of the services (GPUNET_LEASE_MS), as bench:audit: a first start on a million jobs holds the event loop longer than the default 6 s while it folds, and steps down', positive, 120_000)
  .option('--keep', 'keep the data directory (and database) afterwards; kept anyway when the bench fails')
  .option('--from-store <file>', 'copy this SQLite store (kept by an earlier run, `<data-dir>/events.db`) instead of building one; what its services kept (snapshots, tables) comes with it')
  .parse()
  .opts<{ jobs: number; teams: number; postgres?: boolean; healthTimeout: number; restarts: number; leaseMs: number; keep?: boolean; only?: string[]; fromStore?: string }>();

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const say = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const figures: Record<string, unknown>[] = [];
const figure = (bench: string, value: number, unit: string, extra: Record<string, unknown> = {}) => figures.push({ bench, value: round(value), unit, jobs: opts.jobs, store: opts.postgres ? 'postgres' : 'sqlite', ...extra });

/** The store's own read of every event, in the batches a fold reads: the floor of a fold from zero. */
async function rawRead(url: string): Promise<{ events: number; ms: number }> {
  const store = await openEventStore(url);
  try {
    const { result, ms } = await timed(async () => {
      let events = 0;
      for (let from = 0n; ; ) {
        const batch = await store.readAll({ fromPosition: from, maxCount: 5_000 });
        if (batch.length === 0) return events;
        events += batch.length;
        from = batch.at(-1)!.position;
      }
    });
    return { events: result, ms };
  } finally {
    await store.close();
  }
}

/**
 * One service started twice on the history: first as the history was written (what it kept is
 * made from the whole store: every start before it kept anything), then again after a SIGTERM.
 * `folds` matches the log line where it says how many events a start folded.
 */
async function measureService(net: TestNetwork, name: 'intake' | 'placement' | 'ledger' | 'storage', folds: RegExp, raw: { events: number; ms: number }): Promise<void> {
  const start = () => timed(() => net.restart(name, { healthTimeoutMs: opts.healthTimeout * 1_000 }));
  const logFile = join(net.dataDir, 'logs', `${name}.log`);
  const foldLines = async () =>
    (await readFile(logFile, 'utf8').catch(() => ''))
      .split('\n')
      .filter((line) => folds.test(line))
      .map((line) => JSON.parse(line) as { events?: number; ms?: number });
  // The first fold the spawned process logged: a process that restarts in itself (a ledger that
  // lost its lease starts its application again) logs more, each folding less.
  const foldedBy = async (seen: number) => (await foldLines())[seen];
  const seenFirst = (await foldLines()).length;
  const first = await start();
  const firstFold = await foldedBy(seenFirst);
  say(`${name}'s first start on the history: healthy after ${round(first.ms / 1000, 2)} s${firstFold?.events !== undefined ? `, ${firstFold.events} events folded in ${firstFold.ms} ms` : ''}`);
  figure(`restart.${name}_first_start.ms`, first.ms, 'ms', { raw: round(raw.ms), events: raw.events });
  if (firstFold?.events !== undefined) figure(`restart.${name}_first_start.events_folded`, firstFold.events, 'events', { raw: raw.events });
  for (let i = 1; i <= opts.restarts; i++) {
    await net.kill(name, 'SIGTERM', 60_000);
    const seenAgain = (await foldLines()).length;
    const again = await start();
    const lastOne = i === opts.restarts;
    // The last restart is the figure; those before it are reported as restart 1, 2, …
    const bench = lastOne ? `restart.${name}` : `restart.${name}.restart${i}`;
    say(`${name} restart ${i}: healthy after ${round(again.ms / 1000, 2)} s`);
    figure(`${bench}.ms`, again.ms, 'ms', { raw: round(raw.ms), events: raw.events });
    // What the restart folded, as the service logs it: the events applied and how long that took.
    const last = await foldedBy(seenAgain);
    if (last?.events !== undefined) {
      say(`  ${name}'s restart ${i} folded ${last.events} events in ${last.ms} ms`);
      figure(`${bench}.events_folded`, last.events, 'events', { raw: raw.events });
    }
  }
  // Where the rest of the restart went: every fold and start-up line it logs.
  const log = (await readFile(logFile, 'utf8')).split('\n');
  const lastStart = log.findLastIndex((line) => /"msg":"stopped"/.test(line)) + 1;
  for (const line of log.slice(lastStart)) if (/folded|loaded|snapshot|ready|caught up|listening|started|acquired/.test(line)) say(`  ${name}: ${line.slice(0, 240)}`);
}

async function main(): Promise<void> {
  const db: TestDatabase | undefined = opts.postgres ? await createTestDatabase('gpunet_bench_restart') : undefined;
  say(`starting a network (${opts.postgres ? 'PostgreSQL' : 'SQLite'} store)`);
  let done = false;
  const net = await TestNetwork.start({ agents: 1, gpus: 1, dirPrefix: 'gpunet-bench-restart-', logLevel: 'info', env: {
      GPUNET_LEASE_MS: String(opts.leaseMs),
      // The ledger's first start folds its audit table from the whole store, which took longer than
      // its default 10 minutes at a million jobs here: it gave up, started again and reloaded its
      // billing state. A start may take as long as the bench waits for it.
      GPUNET_AUDIT_CATCH_UP: `${opts.healthTimeout}s`,
    }, ...(db ? { postgresUrl: db.url } : {}) });
  try {
    const state = await readState(net.dataDir);
    // Every service but nats-server stops while the history is written: none folds it live.
    for (const p of state!.processes) if (p.role !== 'nats') await net.kill(p.name, 'SIGTERM', 60_000);

    const file = net.storeUrl.replace(/^sqlite:/, '');
    if (opts.fromStore) {
      if (db) throw new Error('--from-store copies a SQLite store');
      for (const suffix of ['-wal', '-shm']) await rm(`${file}${suffix}`, { force: true });
      const copied = await timed(async () => {
        await copyFile(opts.fromStore!, file);
        await copyFile(`${opts.fromStore}-wal`, `${file}-wal`).catch(() => undefined);
      });
      say(`copied ${opts.fromStore} (${round((await stat(file)).size / 1e9, 2)} GB) as the store in ${round(copied.ms / 1000)} s`);
    } else {
      const store = await openEventStore(net.storeUrl);
      if (!(store instanceof SqliteEventStore) && !(store instanceof PostgresEventStore)) throw new Error('unexpected store adapter');
      const built = await timed(() => buildHistoryStore(store, { jobs: opts.jobs, teams: opts.teams }));
      const head = await store.headPosition();
      await store.close();
      const size = db ? undefined : (await stat(file)).size;
      say(`built ${built.result.jobs} jobs, ${built.result.events} events in ${round(built.ms / 1000)} s${size ? `, ${round(size / 1e9, 2)} GB` : ''}; head ${head}`);
    }

    // A restart measures itself, not the relays publishing the history they never saw.
    const relays = await openEventStore(net.storeUrl);
    await relaysAtHead(relays, state!.processes.filter((p) => p.role !== 'nats').map((p) => p.name));
    await relays.close();

    const raw = await rawRead(net.storeUrl);
    say(`raw read of the store: ${raw.events} events in ${round(raw.ms)} ms`);
    figure('restart.raw_read.ms', raw.ms, 'ms', { events: raw.events });

    const measured = (name: string) => !opts.only || opts.only.includes(name);
    if (measured('intake')) await measureService(net, 'intake', /job views folded/, raw);
    if (measured('placement')) await measureService(net, 'placement', /state folded from the store|state loaded from its snapshot/, raw);
    if (measured('ledger')) await measureService(net, 'ledger', /billing projection folded from the store|billing projection loaded from its table/, raw);
    if (measured('storage')) await measureService(net, 'storage', /input references folded from the store/, raw);
    done = true;
  } finally {
    await stopBenchNetwork(net, db, { keep: opts.keep, done }, say);
  }
  for (const f of figures) console.log(JSON.stringify(f));
}

await main();
