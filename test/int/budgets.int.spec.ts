/**
 * Budgets against real parts: a nats-server, the ledger (which prices every worst case) and two
 * intake instances on one event store, SQLite and PostgreSQL. Who may set and read a budget (the
 * attacks), 50 submits at once at the edge of a hard budget over both instances and both
 * transports (never an overshoot), the replay of the budget stream re-deriving every decision,
 * `hold`, and a reservation released by the job's JobEnded.
 */
import { budgetStreamId, Commands, Queries, type EventData } from '#contracts';
import type { EventStore, RecordedEvent } from '#event-store';
import { EventWriter, startService, systemClock, type RunningService } from '#service-kit';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { replayBudget } from '../../services/intake/src/domain/budget.js';
import { keyDigest } from '../../services/intake/src/auth/api-keys.js';
import { intakeService } from '../../services/intake/src/intake.service.js';
import { ledgerService } from '../../services/ledger/src/ledger.definition.js';
import { startNatsServer, type TestNatsServer } from '../support/nats-server.js';
import { until } from '../support/poll.js';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';

const BILLING = 'bootstrap-billing-key-of-ops-000001';
const PRODUCER_A = 'bootstrap-producer-key-team-a-00002';
const PRODUCER_B = 'bootstrap-producer-key-team-b-00003';

/** 3.60 EUR per GPU-hour: one GPU for one hour is 3,600,000 µ. */
const RATE = 3_600_000;
const WORST = RATE;
/** Ten and a half worst cases: exactly ten jobs fit. */
const MONTHLY = 10 * WORST + WORST / 2;

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed JSON answers; expect() checks their shapes
type JsonBody = Record<string, any>;

const spec = (name: string) => ({ name, work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1h' } });

describe.each(['sqlite', 'postgres'] as const)('budgets on %s: two intakes, the ledger, real NATS', (backend) => {
  let nats: TestNatsServer;
  let dir: string;
  let db: TestDatabase | undefined;
  let ledger: RunningService;
  let one: RunningService;
  let two: RunningService;
  let store: EventStore;
  let nc: NatsConnection;

  beforeAll(async () => {
    nats = await startNatsServer();
    dir = await mkdtemp(join(tmpdir(), 'gpunet-budgets-'));
    if (backend === 'postgres') db = await createTestDatabase('gpunet_budget');
    const storeUrl = db?.url ?? `sqlite:${join(dir, 'events.db')}`;
    await writeFile(
      join(dir, 'keys.yaml'),
      [
        `- { id: billing, sha256: ${keyDigest(BILLING)}, team: ops, role: billing }`,
        `- { id: ci-a, key: ${PRODUCER_A}, team: team-a, role: producer }`,
        `- { id: ci-b, key: ${PRODUCER_B}, team: team-b, role: producer }`,
      ].join('\n'),
    );
    const base = { GPUNET_NATS_URL: nats.url, GPUNET_STORE_URL: storeUrl, GPUNET_LOG_LEVEL: 'silent' };
    ledger = await startService({ ...ledgerService, env: { ...base, GPUNET_PRICES: JSON.stringify({ 'sim-gpu': RATE }), GPUNET_CURRENCY: 'EUR' } });
    const intake = (instance: string) => ({ ...base, GPUNET_HTTP_PORT: '0', GPUNET_INSTANCE: instance, GPUNET_API_KEYS_FILE: join(dir, 'keys.yaml') });
    one = await startService(intakeService({ env: intake('intake') }));
    two = await startService(intakeService({ env: intake('intake-2') }));
    store = one.ctx.store;
    nc = await connect({ servers: nats.url });
  }, 90_000);

  afterAll(async () => {
    await nc?.close();
    await two?.stop();
    await one?.stop();
    await ledger?.stop();
    await nats?.stop();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  }, 60_000);

  async function http(path: string, init: { method?: string; key: string; body?: unknown; via?: RunningService }) {
    const headers: Record<string, string> = { authorization: `Bearer ${init.key}` };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${(init.via ?? one).httpUrl}${path}`, { method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'), headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as JsonBody };
  }

  async function overNats(subject: string, body: unknown, key: string): Promise<JsonBody> {
    const h = natsHeaders();
    h.set('Authorization', `Bearer ${key}`);
    return (await nc.request(subject, JSON.stringify(body), { timeout: 10_000, headers: h })).json<JsonBody>();
  }

  const budgetEvents = (team: string): Promise<RecordedEvent[]> => store.readStream(budgetStreamId(team));

  it('refuses a producer key setting or clearing a budget, over HTTP and NATS, and records nothing', async () => {
    const put = await http('/v1/budgets/team-a', { method: 'PUT', key: PRODUCER_A, body: { monthlyMicros: 1 } });
    expect(put.status).toBe(403);
    expect(put.json.error).toMatchObject({ code: 'forbidden', message: expect.stringContaining('needs a key with role billing') });
    const del = await http('/v1/budgets/team-a', { method: 'DELETE', key: PRODUCER_A });
    expect(del.status).toBe(403);
    const viaNats = await overNats(Commands.SetBudget.subject, { team: 'team-a', monthlyMicros: 1 }, PRODUCER_A);
    expect(viaNats).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    // Naming another team in the body changes nothing either.
    expect((await overNats(Commands.SetBudget.subject, { team: 'team-b', monthlyMicros: 1 }, PRODUCER_A)).error.code).toBe('forbidden');
    expect(await budgetEvents('team-a')).toEqual([]);
    expect(await budgetEvents('team-b')).toEqual([]);
  }, 30_000);

  it('a billing key sets a budget; the team reads its own, another team may not read it', async () => {
    const set = await http('/v1/budgets/team-a', { method: 'PUT', key: BILLING, body: { monthlyMicros: MONTHLY } });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ team: 'team-a', budget: { monthlyMicros: MONTHLY, currency: 'EUR', onExceed: 'refuse', thresholdsPercent: [50, 80, 100], setBy: { keyId: 'billing', team: 'ops' } }, remainingMicros: MONTHLY });
    expect((await budgetEvents('team-a')).map((e) => [e.type, e.metadata.producer])).toEqual([['BudgetSet', 'intake']]);

    expect((await http('/v1/budgets', { key: PRODUCER_A })).json).toMatchObject({ team: 'team-a', budget: { monthlyMicros: MONTHLY } });
    const other = await http('/v1/budgets/team-a', { key: PRODUCER_B });
    expect(other.status).toBe(403);
    expect(other.json.error.message).toContain('acts for team team-b only');
    const otherNats = await overNats(Queries.GetBudget.subject, { team: 'team-a' }, PRODUCER_B);
    expect(otherNats).toMatchObject({ ok: false, error: { code: 'forbidden' } });
    expect((await overNats(Queries.GetBudget.subject, {}, PRODUCER_B)).data).toMatchObject({ team: 'team-b', remainingMicros: 0 });
    const bad = await http('/v1/budgets/team-a', { method: 'PUT', key: BILLING, body: { monthlyMicros: -5, onExceed: 'explode' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.issues.map((i: { path: string }) => i.path).sort()).toEqual(['monthlyMicros', 'onExceed']);
  }, 30_000);

  it('50 submits at once at the edge of a hard budget, over two intakes and both transports: exactly 10 accepted, never an overshoot; a replay re-derives every decision', async () => {
    const t0 = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, i) => {
        if (i % 2 === 0) {
          const r = await http('/v1/jobs', { key: PRODUCER_A, body: spec(`edge-${i}`), via: i % 4 === 0 ? one : two });
          return { ok: r.status === 201, status: r.status, body: r.status === 201 ? r.json : r.json.error };
        }
        const r = await overNats(Commands.SubmitJob.subject, { spec: spec(`edge-${i}`) }, PRODUCER_A);
        return { ok: r.ok === true, status: r.ok ? 201 : 402, body: r.ok ? r.data : r.error };
      }),
    );
    const elapsedMs = Date.now() - t0;
    const accepted = answers.filter((a) => a.ok);
    const refused = answers.filter((a) => !a.ok);
    expect(accepted).toHaveLength(10);
    expect(refused).toHaveLength(40);
    for (const r of refused) {
      expect(r.body).toMatchObject({ code: 'budget_exceeded', retryable: false });
      expect(r.body.message).toMatch(/team team-a's monthly budget of 37\.80 EUR \(\d{4}-\d{2}\) would be exceeded: spent 0\.00 \+ reserved 36\.00 \+ this job's worst case 3\.60/);
      expect(r.body.message).toContain('gpunet budget set --team team-a');
    }
    const remaining = accepted.map((a) => a.body.budget.remainingMicros).sort((x: number, y: number) => y - x);
    expect(remaining).toEqual(Array.from({ length: 10 }, (_, i) => MONTHLY - (i + 1) * WORST));
    for (const a of accepted) expect(a.body.budget).toMatchObject({ worstCaseMicros: WORST, currency: 'EUR', monthlyMicros: MONTHLY, spentMicros: 0, held: false });

    // The log: one decision per revision, 10 reservations within the budget, 40 refusals, 10 jobs.
    const log = await budgetEvents('team-a');
    const reserved = log.filter((e) => e.type === 'BudgetReserved');
    expect(reserved).toHaveLength(10);
    expect(log.filter((e) => e.type === 'BudgetRefused')).toHaveLength(40);
    expect(reserved.reduce((sum, e) => sum + (e.data as { worstCaseMicros: number }).worstCaseMicros, 0)).toBeLessThanOrEqual(MONTHLY);
    expect(log.map((e) => e.revision)).toEqual(log.map((_, i) => BigInt(i)));
    const submitted = await store.readAll({ maxCount: 10_000, filter: { types: ['JobSubmitted'], team: 'team-a' } });
    expect(submitted.map((e) => e.metadata.jobId).sort()).toEqual(accepted.map((a) => a.body.jobId).sort());
    expect(reserved.map((e) => e.metadata.jobId).sort()).toEqual(accepted.map((a) => a.body.jobId).sort());
    // Soft thresholds: 50 % at the 6th job (21.60 ≥ 18.90), 80 % at the 9th (32.40 ≥ 30.24), never 100 %.
    expect(log.filter((e) => e.type === 'BudgetThresholdCrossed').map((e) => (e.data as { thresholdPercent: number }).thresholdPercent)).toEqual([50, 80]);

    const replay = replayBudget('team-a', log);
    expect(replay.mismatches).toEqual([]);
    expect(replay.decisions.filter((d) => d.decision === 'reserve')).toHaveLength(10);
    expect(replay.decisions.filter((d) => d.decision === 'refuse')).toHaveLength(40);
    // The replayed account is the one the intakes hold.
    const view = await http('/v1/budgets', { key: PRODUCER_A, via: two });
    expect(view.json).toMatchObject({ reservedMicros: 10 * WORST, remainingMicros: MONTHLY - 10 * WORST, thresholdsCrossed: [50, 80], revision: String(log.length - 1) });
    // The producer follows the thresholds on its team feed; another team never sees them.
    const feedOf = async (key: string) => {
      const entries: JsonBody[] = [];
      let after = '0';
      for (;;) {
        const page = (await overNats(Queries.ReadFeed.subject, { after, limit: 1000 }, key)).data as JsonBody;
        entries.push(...page.entries);
        if (page.entries.length === 0 || page.caughtUp) return entries;
        after = page.next;
      }
    };
    const crossings = (await feedOf(PRODUCER_A)).filter((e) => e.type === 'BudgetThresholdCrossed');
    expect(crossings.map((e) => [e.team, e.data.thresholdPercent])).toEqual([['team-a', 50], ['team-a', 80]]);
    expect((await feedOf(PRODUCER_B)).filter((e) => String(e.type).startsWith('Budget'))).toEqual([]);
    process.stdout.write(`budgets (${backend}): 50 concurrent submits decided in ${elapsedMs} ms (10 accepted, 40 refused, ${log.length} budget events)\n`);
  }, 120_000);

  it('under `hold`, a job past the budget is accepted and held; a JobEnded releases its reservation with the real charge', async () => {
    const set = await overNats(Commands.SetBudget.subject, { team: 'team-a', monthlyMicros: MONTHLY, onExceed: 'hold' }, BILLING);
    expect(set).toMatchObject({ ok: true, data: { budget: { onExceed: 'hold' } } });
    const held = await http('/v1/jobs', { key: PRODUCER_A, body: spec('held') });
    expect(held.status).toBe(201);
    expect(held.json.budget).toMatchObject({ held: true, onExceed: 'hold', remainingMicros: MONTHLY - 11 * WORST });
    expect((await http('/v1/budgets', { key: PRODUCER_A })).json.heldJobs).toEqual([held.json.jobId]);

    // One reserved job ends having cost 1.00 EUR (as the ledger records JobEnded).
    const [first] = (await budgetEvents('team-a')).filter((e) => e.type === 'BudgetReserved');
    const jobId = first!.metadata.jobId!;
    const ledgerWriter = new EventWriter(store, 'ledger', systemClock);
    const ended: EventData<'JobEnded'> = { jobId, team: 'team-a', outcome: 'completed', attempts: 1, exitCode: 0, billed: { billableMs: 1_000_000, totals: [{ currency: 'EUR', amountMicros: 1_000_000 }] }, outputs: null, endedAt: new Date().toISOString() };
    await ledgerWriter.append(`ledger-job-${jobId}`, [{ type: 'JobEnded', data: ended }], { jobId, team: 'team-a' });
    const release = await until('the reservation to be released', async () => (await budgetEvents('team-a')).find((e) => e.type === 'BudgetReleased'), { timeoutMs: 10_000 });
    expect(release.data).toMatchObject({ jobId, reservedMicros: WORST, chargedMicros: 1_000_000 });
    const after = await http('/v1/budgets', { key: PRODUCER_A });
    // 1.00 spent + 10 × 3.60 reserved = 37.00 ≤ 37.80: the held job now fits.
    expect(after.json).toMatchObject({ spentMicros: 1_000_000, reservedMicros: 10 * WORST, heldJobs: [] });
    expect(replayBudget('team-a', await budgetEvents('team-a')).mismatches).toEqual([]);
  }, 60_000);
});
