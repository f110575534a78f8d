/**
 * Chaos under load on separate hosts (issue 12, item 5): while a producer on c1 submits jobs at a
 * steady rate, one nats-server of the cluster is SIGKILLed and brought back, a GPU host's link is
 * cut for longer than its node lease and restored, placement's leader is SIGKILLed (its standby on
 * another control host takes over; the killed one comes back as a standby), so is the ledger's,
 * and PostgreSQL is restarted. Then, from the store alone:
 *
 * - every job accepted is terminal (`JobEnded`), and no submit was given up;
 * - no GPU of a node was held by two attempts at once (`ComputeHeld` → `ComputeReleased`, or the
 *   node's `NodeLost` for an attempt it never released);
 * - no attempt is billed twice, and every `UsageRecorded` equals the line recomputed from the
 *   store, with every attempt of a lost node waived (billed 0) whatever it reported afterwards:
 *   a node cut off past its lease has its late reports recorded, never charged (docs/billing.md);
 * - the hash chain verifies.
 *
 *   npm run bench:chaos -- [--rate 20] [--seconds 120] [--gpus 8] [--job-ms 2000] [--intakes 3] [--drain-s 1800]
 *
 * The producer spreads its submits over the intake replicas (one per control host), retrying a
 * failed submit on the next one with the same idempotency key.
 *
 * A script, not a test tier: two minutes at 20 jobs/s on two cores, with the drain after it, does
 * not fit `npm test`'s budget. Prints each fault with its time, each check with what it found,
 * then one JSON line per figure, and exits 1 when a check fails.
 */
import type { ComputeHeld, ComputeReleased, JobFinished, NodeLost, UsageRecorded } from '#contracts';
import type { RecordedEvent } from '#event-store';
import { Command } from 'commander';
import { GpunetOnHosts } from '../support/gpunet-on-hosts.js';
import { until } from '../support/poll.js';
import { recomputeUsage } from '../support/billing.js';
import { positive } from './args.js';


const opts = new Command('chaos.bench')
  .option('--rate <n>', 'jobs submitted per second', positive, 20)
  .option('--seconds <n>', 'how long the load runs', positive, 120)
  .option('--gpus <n>', 'GPU slots of each of the two GPU hosts', positive, 8)
  .option('--job-ms <n>', 'how long each job runs (sleep)', positive, 2_000)
  .option('--intakes <n>', 'intake replicas, one per control host (1–3)', positive, 3)
  .option('--drain-s <n>', 'how long to wait, after the load, for every accepted job to end', positive, 1_800)
  .parse()
  .opts<{ rate: number; seconds: number; gpus: number; jobMs: number; intakes: number; drainS: number }>();

/** Heartbeats every 500 ms: placement's node lease is then max(3 × 500 ms, 5 s) = 5 s. */
const HEARTBEAT_MS = 500;
const LEASE_MS = 5_000;

const log = (t0: number, text: string) => console.log(`  +${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${text}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readAll(g: GpunetOnHosts): Promise<RecordedEvent[]> {
  const store = await g.store();
  const out: RecordedEvent[] = [];
  let from = 0n;
  for (;;) {
    const page = await store.readAll({ fromPosition: from, maxCount: 5_000 });
    out.push(...page);
    if (page.length < 5_000) return out;
    from = page.at(-1)!.position;
  }
}

/**
 * The node with the most attempts running now (compute held, no end reported), waiting up to
 * `waitMs` for one to have any: a node whose attempts all ended has nothing left to lose.
 */
async function busiestNode(g: GpunetOnHosts, waitMs = 60_000): Promise<{ nodeId: string; running: number }> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const events = await readAll(g);
    const ended = new Set(events.filter((e) => e.type === 'JobFinished' || e.type === 'ComputeReleased').map((e) => (e.data as { attemptId: string }).attemptId));
    const running = new Map<string, number>(g.nodeIds.map((n) => [n, 0]));
    for (const e of events) {
      const h = e.data as ComputeHeld;
      if (e.type === 'ComputeHeld' && !ended.has(h.attemptId)) running.set(h.nodeId, (running.get(h.nodeId) ?? 0) + 1);
    }
    const [nodeId, n] = [...running].sort((a, b) => b[1] - a[1])[0]!;
    if (n > 0 || Date.now() > deadline) return { nodeId, running: n };
    await sleep(100);
  }
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/** Overlapping holds of one GPU: intervals per `<node>/<gpu>`, sorted by start. */
function doubleHolds(events: readonly RecordedEvent[]): string[] {
  const lostAt = new Map<string, number>();
  for (const e of events) if (e.type === 'NodeLost') for (const a of (e.data as NodeLost).affectedAttempts) if (!lostAt.has(a.attemptId)) lostAt.set(a.attemptId, Date.parse((e.data as NodeLost).detectedAt));
  const released = new Map<string, number>();
  for (const e of events) if (e.type === 'ComputeReleased') released.set(`${(e.data as ComputeReleased).attemptId}@${(e.data as ComputeReleased).nodeId}`, Date.parse((e.data as ComputeReleased).releasedAt));
  const byGpu = new Map<string, { attemptId: string; from: number; to: number }[]>();
  for (const e of events) {
    if (e.type !== 'ComputeHeld') continue;
    const h = e.data as ComputeHeld;
    // The physical GPU is busy until the node says it released it; a node that never does holds it.
    const to = released.get(`${h.attemptId}@${h.nodeId}`) ?? Number.POSITIVE_INFINITY;
    for (const gpu of h.gpuIndices) {
      const list = byGpu.get(`${h.nodeId}/${gpu}`) ?? [];
      list.push({ attemptId: h.attemptId, from: Date.parse(h.heldAt), to });
      byGpu.set(`${h.nodeId}/${gpu}`, list);
    }
  }
  const found: string[] = [];
  for (const [gpu, list] of byGpu) {
    list.sort((a, b) => a.from - b.from);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const cur = list[i]!;
      if (cur.from < prev.to) found.push(`${gpu}: ${cur.attemptId} held from ${new Date(cur.from).toISOString()} while ${prev.attemptId} held it${Number.isFinite(prev.to) ? ` until ${new Date(prev.to).toISOString()}` : ' (never released)'}`);
    }
  }
  return found;
}

function checks(events: readonly RecordedEvent[], jobIds: readonly string[], givenUp: number): Check[] {
  const out: Check[] = [];
  const ended = new Set(events.filter((e) => e.type === 'JobEnded').map((e) => e.metadata.jobId));
  const open = jobIds.filter((j) => !ended.has(j));
  out.push({ name: 'every job terminal', ok: open.length === 0 && givenUp === 0, detail: `${jobIds.length - open.length}/${jobIds.length} ended, ${givenUp} submits given up${open.length ? `; open: ${open.slice(0, 5).join(', ')}` : ''}` });

  const doubles = doubleHolds(events);
  out.push({ name: 'no GPU held by two attempts', ok: doubles.length === 0, detail: doubles.length === 0 ? `${events.filter((e) => e.type === 'ComputeHeld').length} holds, none overlapping` : doubles.slice(0, 5).join('; ') });

  const usage = events.filter((e) => e.type === 'UsageRecorded').map((e) => e.data as UsageRecorded);
  const perAttempt = new Map<string, number>();
  for (const u of usage) perAttempt.set(u.attemptId, (perAttempt.get(u.attemptId) ?? 0) + 1);
  const twice = [...perAttempt].filter(([, n]) => n > 1).map(([a]) => a);
  out.push({ name: 'no attempt billed twice', ok: twice.length === 0, detail: `${usage.length} usage lines${twice.length ? `; billed more than once: ${twice.slice(0, 5).join(', ')}` : ''}` });

  // The ledger's rule: an attempt a NodeLost lists is waived, whatever its node reports later.
  const lost = new Set(events.filter((e) => e.type === 'NodeLost').flatMap((e) => (e.data as NodeLost).affectedAttempts.map((a) => a.attemptId)));
  const expected = recomputeUsage(events);
  const wrong: string[] = [];
  for (const u of usage) {
    const line = expected.get(u.attemptId);
    const want = lost.has(u.attemptId) ? 0 : line?.amountMicros;
    if (want === undefined || u.amountMicros !== want) wrong.push(`${u.attemptId}: billed ${u.amountMicros}, expected ${want ?? 'no line'}`);
  }
  const unbilled = [...expected.keys()].filter((a) => !perAttempt.has(a));
  out.push({ name: 'every usage line equals its replay', ok: wrong.length === 0 && unbilled.length === 0, detail: `${expected.size} lines recomputed${wrong.length ? `; differ: ${wrong.slice(0, 5).join('; ')}` : ''}${unbilled.length ? `; never billed: ${unbilled.slice(0, 5).join(', ')}` : ''}` });

  const late = events.filter((e) => e.type === 'JobFinished' && lost.has((e.data as JobFinished).attemptId) && (e.data as JobFinished).outcome !== 'node_lost');
  const lateCharged = late.filter((e) => usage.some((u) => u.attemptId === (e.data as JobFinished).attemptId && u.amountMicros !== 0));
  // The cut must have cost a node its attempts, or the rule was never exercised.
  out.push({ name: 'late reports of a lost node recorded, never charged', ok: lost.size > 0 && lateCharged.length === 0, detail: `${lost.size} attempts lost, ${late.length} finished reports arrived after the loss, ${lateCharged.length} charged` });
  return out;
}

async function main(): Promise<number> {
  console.log(`chaos on separate hosts: ${opts.rate} jobs/s for ${opts.seconds} s, jobs of ${opts.jobMs} ms, 2 GPU hosts × ${opts.gpus} GPUs, ${opts.intakes} intake${opts.intakes > 1 ? 's' : ''}, PostgreSQL store`);
  const g = await GpunetOnHosts.start({ gpuHosts: 2, gpus: opts.gpus, intakes: opts.intakes, env: { GPUNET_HEARTBEAT_MS: String(HEARTBEAT_MS), GPUNET_NODE_CHECK_MS: '200' } });
  let keep = true;
  const undoSignals = g.stopOnSignals();
  try {
    const spec = { work: { kind: 'script', script: { inline: `sleep ${opts.jobMs / 1000}` } }, request: { gpus: 1, timeLimit: '5m' } };
    const t0 = Date.now();
    const load = g.operator('steady', { urls: g.urls, apiKey: g.apiKey, team: 'local', spec, rate: opts.rate, seconds: opts.seconds, retryMs: 180_000 }, (opts.seconds + 300) * 1000) as Promise<unknown> as Promise<{
      t0: number;
      latencies: number[];
      jobIds: string[];
      failedTries: number;
      givenUp: number;
    }>;
    let takeoverMs: number | undefined;
    let ledgerTakeoverMs: number | undefined;
    const at = (fraction: number) => sleep(Math.max(0, t0 + fraction * opts.seconds * 1000 - Date.now()));
    const faults = (async () => {
      const c3 = g.net.host('c3');
      await at(0.15);
      log(t0, 'SIGKILL nats-server on c3');
      await g.cluster.kill(c3);
      await sleep(5_000);
      await g.cluster.startServer(c3);
      log(t0, 'nats-server on c3 back');
      await at(0.35);
      // The GPU host running the most attempts now, so the loss has late reports to handle.
      const busy = await busiestNode(g);
      const cutHost = g.hostOf(busy.nodeId);
      log(t0, `cut ${cutHost.name} (${busy.nodeId}, ${busy.running} attempts running) off the network for ${(2 * LEASE_MS) / 1000} s (node lease ${LEASE_MS / 1000} s)`);
      await g.net.cut(cutHost);
      await sleep(2 * LEASE_MS);
      await g.net.restore(cutHost);
      log(t0, `${cutHost.name} back on the network`);
      await at(0.55);
      const leader = await g.leaderOf('placement');
      log(t0, `SIGKILL placement's leader (${leader.name}, term ${leader.terms}); its standby takes over`);
      await g.kill(leader.name);
      const killedAt = Date.now();
      await until('a standby to take placement over', async () => (await g.leaderOf('placement').catch(() => leader)).terms > leader.terms, { timeoutMs: 60_000, intervalMs: 100 });
      takeoverMs = Date.now() - killedAt;
      log(t0, `placement taken over by ${(await g.leaderOf('placement')).name} after ${takeoverMs} ms; ${leader.name} started again as a standby`);
      g.restart(leader.name);
      await at(0.65);
      // The ledger too: what it bills after the kill is billed once, by its standby.
      const ledger = await g.leaderOf('ledger');
      log(t0, `SIGKILL the ledger's leader (${ledger.name}, term ${ledger.terms}); its standby takes over`);
      await g.kill(ledger.name);
      const ledgerKilledAt = Date.now();
      await until('a standby to take the ledger over', async () => (await g.leaderOf('ledger').catch(() => ledger)).terms > ledger.terms, { timeoutMs: 60_000, intervalMs: 100 });
      ledgerTakeoverMs = Date.now() - ledgerKilledAt;
      log(t0, `ledger taken over by ${(await g.leaderOf('ledger')).name} after ${ledgerTakeoverMs} ms; ${ledger.name} started again as a standby`);
      g.restart(ledger.name);
      await at(0.75);
      log(t0, 'restart PostgreSQL (fast shutdown, start)');
      await g.pg.stopServer();
      await sleep(2_000);
      await g.pg.startServer();
      log(t0, 'PostgreSQL back');
    })();
    const [result] = await Promise.all([load, faults]);
    log(t0, `load done: ${result.jobIds.length} jobs accepted, ${result.failedTries} failed tries, ${result.givenUp} given up`);
    const wanted = new Set(result.jobIds);
    let events: RecordedEvent[] = [];
    let progress = '';
    await until(
      'every accepted job to end',
      async () => {
        events = await readAll(g);
        const ended = events.filter((e) => e.type === 'JobEnded' && wanted.has(e.metadata.jobId ?? '')).length;
        progress = `${ended}/${wanted.size} ended`;
        return ended === wanted.size;
      },
      { timeoutMs: opts.drainS * 1000, intervalMs: 2_000, describe: () => progress },
    ).catch((err: unknown) => log(t0, `gave up waiting: ${(err as Error).message}`));
    log(t0, `drained: ${progress}`);
    // Billing follows the ends: wait until every finished attempt that held compute has its line.
    await until('every finished attempt billed', async () => {
      events = await readAll(g);
      const expected = recomputeUsage(events);
      const billed = new Set(events.filter((e) => e.type === 'UsageRecorded').map((e) => (e.data as UsageRecorded).attemptId));
      return [...expected.keys()].every((a) => billed.has(a));
    }, { timeoutMs: 120_000, intervalMs: 1_000 }).catch(() => undefined);
    const verified = await (await g.store()).verify();
    const all = [...checks(events, result.jobIds, result.givenUp), { name: 'hash chain verifies', ok: verified.ok, detail: verified.ok ? `${verified.events} events` : `${verified.reason} at ${verified.firstBadPosition}` }];
    console.log('');
    for (const c of all) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(52)} ${c.detail}`);
    const sorted = [...result.latencies].sort((a, b) => a - b);
    const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;
    console.log('');
    console.log(JSON.stringify({ bench: 'chaos.jobs_accepted', value: result.jobIds.length, unit: 'jobs', offered: Math.round(opts.rate * opts.seconds) }));
    console.log(JSON.stringify({ bench: 'chaos.submit_p50', value: Number(p(0.5).toFixed(1)), unit: 'ms' }));
    console.log(JSON.stringify({ bench: 'chaos.submit_p99', value: Number(p(0.99).toFixed(1)), unit: 'ms' }));
    if (takeoverMs !== undefined) console.log(JSON.stringify({ bench: 'chaos.placement_takeover', value: takeoverMs, unit: 'ms' }));
    if (ledgerTakeoverMs !== undefined) console.log(JSON.stringify({ bench: 'chaos.ledger_takeover', value: ledgerTakeoverMs, unit: 'ms' }));
    console.log(JSON.stringify({ bench: 'chaos.checks_failed', value: all.filter((c) => !c.ok).length, unit: 'checks', of: all.length }));
    keep = all.some((c) => !c.ok);
    if (keep) console.log(`\ndata and logs kept in ${g.dir}`);
    return keep ? 1 : 0;
  } catch (err) {
    console.error(`${(err as Error).message}\n${g.logTails(5)}\n(data and logs kept in ${g.dir})`);
    return 1;
  } finally {
    undoSignals();
    await g.stop({ keep });
  }
}

process.exitCode = await main();
