/**
 * Audit queries at scale (issue 16, item 5): a store of N jobs (default 1,000,000, about 13
 * events each: test/support/history.ts, written straight into the store in large transactions),
 * then the ledger as its real process on it, then the audit queries over the bus as intake asks
 * them, and through `gpunet audit` (intake's HTTP) when intake comes up in time.
 *
 *   npm run bench:audit -- [--jobs 1000000] [--postgres] [--reps 30] [--keep] [--from-store FILE [--keep-audit-table]] [--settle]
 *
 * `--from-store` copies a SQLite store an earlier run kept (`--keep`: `<data-dir>/events.db`)
 * instead of building one; `--jobs` must say how many jobs it holds.
 *
 * Steps and figures:
 * - build: the history written into the network's store (every service stopped but nats-server);
 * - ledger first start: the ledger started on it, until it answers its health query; its audit
 *   table is folded from the whole store here, once;
 * - ledger restart: stopped (SIGTERM) and started again; the audit table folds only the tail;
 * - audit.jobs_day: `AuditJobs` of one team over one day (gpunet.qry.ledger.AuditJobs, the
 *   request intake sends), p50 / p99 of `--reps` repetitions on different days;
 * - audit.job: `AuditJob` of one job, p50 / p99 over different jobs;
 * - with intake up: the same two through `gpunet audit jobs --team T --from D --to D+1d` and
 *   `gpunet audit job ID` (CLI → intake HTTP → NATS → ledger).
 * The services run with a 120 s leader lease (`--lease-ms`): at 100,000 jobs on a loaded 2-core
 * machine the ledger's start-up folds of the whole store other than the audit table (the billing
 * projection, billing metrics: issue 16 item 3) keep its event loop too busy to renew the default
 * 6 s lease, and it stepped down during every start.
 * Ends with one JSON line per figure: {"bench":"audit.jobs_day","value":N,"unit":"ms",...}.
 */
import { Commands, Queries, replyEnvelope, SignChainHeadsReply, type AuditJobReply, type AuditJobsReply } from '#contracts';
import { natsAuthOptions } from '#identity';
import { openEventStore, PostgresEventStore, SqliteEventStore } from '#event-store';
import { QueryUnavailableError, requestQuery } from '#messaging';
import { connect } from '@nats-io/transport-node';
import Database from 'better-sqlite3';
import { Command } from 'commander';
import { randomBytes, createHash } from 'node:crypto';
import { appendFile, copyFile, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { readState } from '../../libs/cli/src/local/state.js';
import { runCli } from '../../libs/cli/src/program.js';
import { buildHistoryStore, HISTORY_DEFAULTS, historyJobId, historyTeam, relaysAtHead } from '../support/history.js';
import { TestNetwork } from '../support/network.js';
import { stopBenchNetwork, timed } from './bench-network.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { percentile } from './cluster.js';
import { positive } from './args.js';


const opts = new Command('audit.bench')
  .option('--jobs <n>', 'jobs in the store', positive, 1_000_000)
  .option('--teams <n>', 'teams the jobs belong to', positive, HISTORY_DEFAULTS.teams)
  .option('--days <n>', 'days the submissions spread over', positive, HISTORY_DEFAULTS.days)
  .option('--reps <n>', 'repetitions of each query', positive, 30)
  .option('--postgres', 'the store on PostgreSQL (a database made for the run) instead of SQLite')
  .option('--no-intake', 'skip intake and the CLI path (intake folds its job views from the whole store at start)')
  .option('--intake-timeout <s>', 'how long intake may take to start on the store before the CLI path is skipped', positive, 600)
  .option('--keep', 'keep the data directory (and database) afterwards; kept anyway when the bench fails')
  .option('--lease-ms <ms>', 'leader lease of the services (GPUNET_LEASE_MS); see below', positive, 120_000)
  .option('--from-store <file>', 'copy this SQLite store (kept by an earlier run, same --jobs) instead of building one')
  .option('--keep-audit-table', 'with --from-store: keep the copy\'s audit table, so the first start folds only its tail')
  .option('--settle', 'before the queries, wait until the notary has signed up to the head (SignChainHeads): queries in steady state, not beside a first pass')
  .parse()
  .opts<{ jobs: number; teams: number; days: number; reps: number; postgres?: boolean; intake: boolean; intakeTimeout: number; keep?: boolean; fromStore?: string; keepAuditTable?: boolean; settle?: boolean; leaseMs: number }>();

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const say = (line: string) => console.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
const figures: Record<string, unknown>[] = [];
const figure = (bench: string, value: number, unit: string, extra: Record<string, unknown> = {}) => figures.push({ bench, value: round(value), unit, jobs: opts.jobs, store: opts.postgres ? 'postgres' : 'sqlite', ...extra });

function summary(name: string, ms: number[]): { p50: number; p99: number } {
  const sorted = [...ms].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p99 = percentile(sorted, 99);
  say(`${name}: p50 ${round(p50)} ms, p99 ${round(p99)} ms, max ${round(sorted.at(-1)!)} ms over ${ms.length}`);
  return { p50, p99 };
}

async function main(): Promise<void> {
  const start = Date.parse(HISTORY_DEFAULTS.start);
  const history = { jobs: opts.jobs, teams: opts.teams, days: opts.days };
  const db: TestDatabase | undefined = opts.postgres ? await createTestDatabase('gpunet_bench_audit') : undefined;
  const complianceKey = randomBytes(32).toString('hex');
  say(`starting a network (${opts.postgres ? 'PostgreSQL' : 'SQLite'} store)`);
  let done = false;
  const net = await TestNetwork.start({ agents: 1, gpus: 1, dirPrefix: 'gpunet-bench-audit-', logLevel: 'info', env: {
      GPUNET_LEASE_MS: String(opts.leaseMs),
      // The ledger's first start folds the audit table from the whole store: 771 s at a million jobs
      // here, past its default 10 minutes, after which it gives up and starts again. The bench waits
      // up to an hour for that start (firstAnswer below), so the fold may take as long.
      GPUNET_AUDIT_CATCH_UP: '60m',
    }, ...(db ? { postgresUrl: db.url } : {}) });
  try {
    const state = await readState(net.dataDir);
    const sha = createHash('sha256').update(complianceKey, 'utf8').digest('hex');
    await appendFile(state!.apiKeysFile, `- { id: officer, sha256: ${sha}, team: compliance-office, role: compliance }\n`);
    // Every service but nats-server stops while the history is written: none folds it live.
    for (const p of state!.processes) if (p.role !== 'nats') await net.kill(p.name, 'SIGTERM', 60_000);

    const file = net.storeUrl.replace(/^sqlite:/, '');
    if (opts.fromStore) {
      if (opts.postgres) throw new Error('--from-store copies a SQLite store');
      for (const suffix of ['-wal', '-shm']) await rm(`${file}${suffix}`, { force: true });
      await copyFile(opts.fromStore, file);
      await copyFile(`${opts.fromStore}-wal`, `${file}-wal`).catch(() => undefined);
      // The copy's audit table goes (unless kept): the first start below folds it from the whole store again.
      if (!opts.keepAuditTable) {
        const copy = new Database(file);
        copy.exec('DROP TABLE IF EXISTS projection_audit_jobs');
        if (copy.prepare("SELECT 1 FROM sqlite_master WHERE name = 'projections'").get()) copy.exec("DELETE FROM projections WHERE name = 'audit_jobs'");
        copy.close();
      }
      say(`copied ${opts.fromStore} (${round((await stat(file)).size / 1e9, 2)} GB) as the store, ${opts.keepAuditTable ? 'with' : 'without'} its audit table`);
    } else {
      const store = await openEventStore(net.storeUrl);
      if (!(store instanceof SqliteEventStore) && !(store instanceof PostgresEventStore)) throw new Error('unexpected store adapter');
      let lastReport = Date.now();
      const built = await timed(() =>
        buildHistoryStore(store, {
          ...history,
          progress: (done) => {
            if (Date.now() - lastReport > 15_000) {
              lastReport = Date.now();
              say(`  ${done} jobs written`);
            }
          },
        }),
      );
      const head = await store.headPosition();
      await store.close();
      const size = db ? undefined : (await stat(file)).size;
      say(`built ${built.result.jobs} jobs, ${built.result.events} events in ${round(built.ms / 1000)} s (${round(built.result.events / (built.ms / 1000), 0)} events/s)${size ? `, ${round(size / 1e9, 2)} GB` : ''}; head ${head}`);
      figure('audit.build_store', built.ms / 1000, 's', { events: built.result.events });
    }

    // The ledger's first start folds the audit table, not its relay publishing the history it never saw.
    const relays = await openEventStore(net.storeUrl);
    await relaysAtHead(relays, state!.processes.filter((p) => p.role !== 'nats').map((p) => p.name));
    await relays.close();

    const nc = await connect({ ...(await natsAuthOptions(net.operatorKeyFile)), servers: net.natsUrl, name: 'gpunet-bench-audit', noAsyncTraces: true });
    const requester = { keyId: 'bench', team: 'compliance-office', role: 'compliance', allTeams: true };
    /** Until the ledger answers an audit query (health comes first: a standby answers it while it waits for the lease). */
    const firstAnswer = async () => {
      for (const deadline = Date.now() + 3_600_000; ; ) {
        try {
          return await requestQuery<AuditJobReply>(nc, Queries.AuditJob.subject, { requester, jobId: historyJobId(0) }, { request: Queries.AuditJob.schema, response: Queries.AuditJob.replySchema }, { timeoutMs: 60_000 });
        } catch (err) {
          // No responder yet, or one that stepped down (its lease lapsed) and is starting again.
          const retryable = err instanceof QueryUnavailableError || (err as { retryable?: boolean }).retryable === true;
          if (!retryable || Date.now() > deadline) throw err;
          if (!(err instanceof QueryUnavailableError)) say(`  waiting for the ledger's first audit answer: ${(err as Error).message}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const startLedger = async () => {
      const healthy = await timed(() => net.restart('ledger', { healthTimeoutMs: 3_600_000 }));
      const answering = await timed(firstAnswer);
      return { healthyMs: healthy.ms, answeringMs: healthy.ms + answering.ms };
    };
    const first = await startLedger();
    say(`ledger first start (audit table ${opts.fromStore && opts.keepAuditTable ? 'kept: only its tail folded' : 'folded from the whole store'}): healthy after ${round(first.healthyMs / 1000, 2)} s, first audit answer after ${round(first.answeringMs / 1000, 2)} s`);
    figure('audit.ledger_first_start', first.answeringMs / 1000, 's', { healthy: round(first.healthyMs / 1000) });
    await net.kill('ledger', 'SIGTERM', 60_000);
    const again = await startLedger();
    say(`ledger restart (audit table: the tail only): healthy after ${round(again.healthyMs / 1000, 2)} s, first audit answer after ${round(again.answeringMs / 1000, 2)} s`);
    figure('audit.ledger_restart', again.answeringMs / 1000, 's', { healthy: round(again.healthyMs / 1000) });
    for (const line of (await readFile(join(net.dataDir, 'logs', 'ledger.log'), 'utf8')).split('\n')) {
      if (/folded|caught up/.test(line)) say(`  ledger: ${line.slice(0, 300)}`);
    }

    if (opts.settle) {
      // The notary's first pass over a store without digests takes minutes beside the queries.
      const settled = await timed(async () => {
        // One answer is one pass (shared with the pass already running): signed up to the head it
        // saw. nats-server lets a service answer a request for 2 minutes only (allow_responses'
        // default expiry), and a first pass takes longer: ask again until an answer comes.
        let msg;
        while (!msg) {
          msg = await nc.request(Commands.SignChainHeads.subject, '{}', { timeout: 90_000 }).catch((err: unknown) => {
            if ((err as { code?: string }).code !== 'TIMEOUT' && !/timeout/i.test((err as Error).message)) throw err;
            say('  notary: still signing; asking again');
            return undefined;
          });
        }
        const reply = replyEnvelope(SignChainHeadsReply).parse(JSON.parse(new TextDecoder().decode(msg.data)));
        if (!reply.ok) throw new Error(`SignChainHeads: ${reply.error.message}`);
        say(`  notary: digest #${reply.data.digest?.sequence} covers position ${reply.data.digest?.position}`);
      });
      say(`notary settled after ${round(settled.ms / 1000, 1)} s`);
      figure('audit.notary_settle', settled.ms / 1000, 's');
    }

    const day = (k: number) => {
      const from = start + (k % opts.days) * 86_400_000;
      return { from: new Date(from).toISOString(), to: new Date(from + 86_400_000).toISOString() };
    };
    const team = (k: number) => historyTeam(k, history);
    // As intake asks: the request and the reply checked against the contract.
    const listJobs = (t: string, d: { from: string; to: string }, timeoutMs: number) =>
      requestQuery<AuditJobsReply>(
        nc,
        Queries.AuditJobs.subject,
        { requester, filter: { team: t, ...d, limit: 500, offset: 0 } },
        { request: Queries.AuditJobs.schema, response: Queries.AuditJobs.replySchema },
        { timeoutMs },
      );
    const job = (k: number) => historyJobId(Math.floor(((k + 0.5) * opts.jobs) / opts.reps) % opts.jobs);
    try {
      // One of each first: what a cold cache costs is in the repetitions, not in this one.
      const warm = await listJobs(team(0), day(0), 120_000);
      say(`warm-up list: ${warm.total} jobs of ${team(0)} that day`);
      const jobsMs: number[] = [];
      const totals: number[] = [];
      for (let k = 0; k < opts.reps; k++) {
        const { result, ms } = await timed(() => listJobs(team(k), day(k), 60_000));
        jobsMs.push(ms);
        totals.push(result.total);
      }
      const list = summary(`AuditJobs (team, one day, NATS query) — ~${round(totals.reduce((a, b) => a + b, 0) / totals.length, 0)} jobs per answer`, jobsMs);
      figure('audit.jobs_day_p50', list.p50, 'ms', { path: 'nats', matched: Math.round(totals.reduce((a, b) => a + b, 0) / totals.length) });
      figure('audit.jobs_day_p99', list.p99, 'ms', { path: 'nats' });
      const jobMs: number[] = [];
      for (let k = 0; k < opts.reps; k++) {
        const { result, ms } = await timed(() =>
          requestQuery<AuditJobReply>(nc, Queries.AuditJob.subject, { requester, jobId: job(k) }, { request: Queries.AuditJob.schema, response: Queries.AuditJob.replySchema }, { timeoutMs: 60_000 }),
        );
        if (!result.job) throw new Error(`AuditJob ${job(k)} found no job`);
        jobMs.push(ms);
      }
      const one = summary('AuditJob (one job, NATS query)', jobMs);
      figure('audit.job_p50', one.p50, 'ms', { path: 'nats' });
      figure('audit.job_p99', one.p99, 'ms', { path: 'nats' });
    } finally {
      await nc.close();
    }

    if (opts.intake) {
      const intake = await timed(() => net.restart('intake', { healthTimeoutMs: opts.intakeTimeout * 1_000 })).catch((err: unknown) => {
        say(`intake did not come up within ${opts.intakeTimeout} s (${(err as Error).message.split('\n')[0]}): the CLI path is skipped`);
        return undefined;
      });
      if (intake) {
        say(`intake start on the store: ${round(intake.ms / 1000, 2)} s`);
        figure('audit.intake_start', intake.ms / 1000, 's');
        const env = { GPUNET_URL: net.url, GPUNET_API_KEY: complianceKey };
        const cli = async (args: string[]) => {
          const out = new PassThrough();
          const err = new PassThrough();
          const chunks: Buffer[] = [];
          out.on('data', (c: Buffer) => chunks.push(c));
          err.resume();
          const code = await runCli(args, { stdout: out, stderr: err, env, cwd: net.dataDir });
          if (code !== 0) throw new Error(`gpunet ${args.join(' ')} exited ${code}`);
          return Buffer.concat(chunks).toString('utf8');
        };
        await cli(['audit', 'jobs', '--team', team(0), '--from', day(0).from, '--to', day(0).to, '--format', 'json']);
        const jobsMs: number[] = [];
        for (let k = 0; k < opts.reps; k++) jobsMs.push((await timed(() => cli(['audit', 'jobs', '--team', team(k), '--from', day(k).from, '--to', day(k).to, '--format', 'json']))).ms);
        const list = summary('gpunet audit jobs --team T --from D --to D+1d (CLI → intake → ledger)', jobsMs);
        figure('audit.cli_jobs_day_p50', list.p50, 'ms', { path: 'cli' });
        figure('audit.cli_jobs_day_p99', list.p99, 'ms', { path: 'cli' });
        const jobMs: number[] = [];
        for (let k = 0; k < opts.reps; k++) jobMs.push((await timed(() => cli(['audit', 'job', job(k), '--format', 'json']))).ms);
        const one = summary('gpunet audit job ID (CLI → intake → ledger)', jobMs);
        figure('audit.cli_job_p50', one.p50, 'ms', { path: 'cli' });
        figure('audit.cli_job_p99', one.p99, 'ms', { path: 'cli' });
      }
    }
    done = true;
  } finally {
    await stopBenchNetwork(net, db, { keep: opts.keep, done }, say);
  }
  for (const f of figures) console.log(JSON.stringify(f));
}

await main();
