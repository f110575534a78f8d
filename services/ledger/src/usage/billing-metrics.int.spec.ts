/**
 * The billing figures' snapshot, on both stores: a restart folds only the usage lines after it
 * and shows the same totals as a fold of every line; a snapshot the store does not vouch for is
 * ignored and everything is folded again.
 */
import type { UsageRecorded } from '#contracts';
import { projectionTablesOf } from '#event-store';
import { Metrics } from '#telemetry';
import { afterEach, describe, expect, it } from '@jest/globals';
import { appendBatch, historyJob, type HistoryOptions } from '../../../../test/support/history.js';
import { storeBackends, type TestStore } from '../../../../test/support/store-backends.js';
import { BILLING_METRICS_SNAPSHOT, BillingMetrics, decodeTotals, encodeTotals } from './billing.metrics.js';
import { capturedLogger } from '../../../../test/support/captured-logger.js';

const HISTORY: HistoryOptions = { jobs: 40, teams: 3, days: 2, lostEvery: 7, nodes: 3, start: '2026-03-01T00:00:00.000Z' };

const stores = storeBackends({ prefix: 'gpunet-billing-metrics-' });
const running: BillingMetrics[] = [];
afterEach(async () => {
  for (const m of running.splice(0)) await m.onModuleDestroy();
  await stores.cleanUp();
}, 60_000);

async function appendJobs(store: TestStore, from: number, to: number): Promise<void> {
  const appends = [];
  for (let i = from; i < to; i++) appends.push(...historyJob(i, HISTORY));
  await appendBatch(store, appends);
}

/** A ledger's billing figures started on `store`: its counters' lines and what its start folded. */
async function started(store: TestStore): Promise<{ metrics: BillingMetrics; text: () => Promise<string[]>; folded: () => number; logs: Record<string, unknown>[] }> {
  const registry = new Metrics({ service: 'ledger', instance: 'ledger' }, { processMetrics: false });
  const { logger, lines } = capturedLogger();
  const metrics = new BillingMetrics(registry, store, logger);
  await metrics.onModuleInit();
  running.push(metrics);
  const text = async () => (await registry.text()).split('\n').filter((l) => /^gpunet_(billed|usage)/.test(l)).sort();
  const folded = () => lines.find((l) => l.msg === 'billing metrics folded from the store')!.events as number;
  return { metrics, text, folded, logs: lines };
}

/** Every UsageRecorded in the store, summed as the counters should show them. */
async function expectedTotals(store: TestStore): Promise<Map<string, number>> {
  const sums = new Map<string, number>();
  const inc = (k: string, n: number) => sums.set(k, (sums.get(k) ?? 0) + n);
  for (const e of await store.readAll({ filter: { types: ['UsageRecorded'] }, maxCount: 100_000 })) {
    const u = e.data as UsageRecorded;
    inc(`gpuMs ${u.team} ${u.gpuModel}`, u.gpus * u.billableMs);
    inc(`micros ${u.team} ${u.gpuModel} ${u.currency}`, u.amountMicros);
    inc(`lines ${u.team} ${u.gpuModel} ${u.outcome}`, 1);
  }
  return sums;
}

/** The counters' text as the same keys as {@link expectedTotals}. */
function shown(lines: string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of lines) {
    const m = /^gpunet_(\w+?)_total\{(.*)\} (\d+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const name = { billed_gpu_milliseconds: 'gpuMs', billed_amount_micros: 'micros', usage_lines: 'lines' }[m[1]!];
    const rest = name === 'gpuMs' ? '' : name === 'micros' ? ` ${labels.currency}` : ` ${labels.outcome}`;
    out.set(`${name} ${labels.team} ${labels.model}${rest}`, Number(m[3]));
  }
  return out;
}

describe('encodeTotals / decodeTotals', () => {
  it('reads back what it wrote, in one order whatever the order given, and refuses anything else', () => {
    const a = { team: 'a', model: 'h100', currency: 'EUR', outcome: 'completed', gpuMs: 7_200_000, micros: 2_000_000, lines: 2 };
    const b = { team: 'b', model: 'h100', currency: 'EUR', outcome: 'failed', gpuMs: 1, micros: 0, lines: 1 };
    expect(encodeTotals([b, a])).toBe(encodeTotals([a, b]));
    expect(decodeTotals(encodeTotals([a, b]))).toEqual([a, b]);
    expect(() => decodeTotals('{}')).toThrow(/not a list/);
    expect(() => decodeTotals(JSON.stringify([['a', 'h100', 'EUR', 'completed', 1.5, 0, 1]]))).toThrow(/not a row/);
    expect(() => decodeTotals(JSON.stringify([['a', 'h100', 'EUR', 'completed', -1, 0, 1]]))).toThrow(/not a row/);
  });
});

describe.each(stores.backends)('billing figures from a snapshot ($name)', (backend) => {
  it('a restart folds only the lines after the snapshot and shows the totals of every line', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    await appendJobs(store, 0, 30);
    const first = await started(store);
    const linesAtFirst = (await store.readAll({ filter: { types: ['UsageRecorded'] }, maxCount: 100_000 })).length;
    expect(linesAtFirst).toBeGreaterThan(0);
    expect(first.folded()).toBe(linesAtFirst);
    expect(shown(await first.text())).toEqual(await expectedTotals(store));
    await first.metrics.onModuleDestroy();
    running.splice(running.indexOf(first.metrics), 1);

    await appendJobs(store, 30, 40);
    const again = await started(await open());
    const linesNow = (await store.readAll({ filter: { types: ['UsageRecorded'] }, maxCount: 100_000 })).length;
    expect(linesNow).toBeGreaterThan(linesAtFirst);
    // Only the lines written since: the snapshot held the rest.
    expect(again.folded()).toBe(linesNow - linesAtFirst);
    expect(shown(await again.text())).toEqual(await expectedTotals(store));

    // Nothing new: a restart folds nothing, and still shows every line.
    await again.metrics.onModuleDestroy();
    running.splice(running.indexOf(again.metrics), 1);
    const third = await started(await open());
    expect(third.folded()).toBe(0);
    expect(shown(await third.text())).toEqual(await expectedTotals(store));
  }, 120_000);

  it('folds every line again when the snapshot’s position is not in the store (another store’s database, an older backup)', async () => {
    const { open } = await backend.fresh();
    const store = await open();
    await appendJobs(store, 0, 10);
    const first = await started(store);
    await first.metrics.onModuleDestroy();
    running.splice(running.indexOf(first.metrics), 1);
    // The snapshot now claims a position past the store's head, with an event id the store never had.
    const table = await projectionTablesOf(store)!.openProjectionTable({ name: `snapshot_${BILLING_METRICS_SNAPSHOT}`, version: 1, columns: [], indexes: [] });
    const at = await table.checkpoint();
    const doc = (await table.query({})).rows[0]!.doc;
    expect(await table.commit(at, { position: at.position + 1_000_000n, eventId: '0190a6c2-7f3e-7b4a-9c1d-bbbbbbbbbbbb' }, [{ key: 'snapshot', doc, values: {} }])).toBe(true);

    const again = await started(await open());
    const lines = (await store.readAll({ filter: { types: ['UsageRecorded'] }, maxCount: 100_000 })).length;
    expect(again.folded()).toBe(lines);
    expect(again.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('billing figures\' snapshot ignored'))).toBe(true);
    expect(shown(await again.text())).toEqual(await expectedTotals(store));
  }, 120_000);
});
