import { emptyBudgetAccount, evolveBudget, reservationFits, type BudgetAccount, type BudgetSet } from '#contracts';
import fc from 'fast-check';
import { decideAdmission, decideRelease, formatMicros, replayBudget, type WorstCase } from './budget.js';

const NOW = new Date('2026-12-02T10:00:00.000Z');
const UNIT = 1_000_000;
const actor = { keyId: 'billing-1', team: 'ops' };

function set(monthly: number, onExceed: 'refuse' | 'hold' = 'refuse', thresholdsPercent = [50, 80, 100]): { type: 'BudgetSet'; data: BudgetSet } {
  return { type: 'BudgetSet', data: { team: 'team-a', monthlyMicros: monthly, currency: 'EUR', onExceed, thresholdsPercent, setBy: actor, setAt: NOW.toISOString() } };
}

function worst(micros: number, currency = 'EUR'): WorstCase {
  return { worstCaseMicros: micros, currency, gpus: 1, timeLimitMs: 3_600_000, rateMicrosPerGpuHour: micros, priceListVersion: 1 };
}

function fold(account: BudgetAccount, events: readonly { type: string; data: unknown }[]): BudgetAccount {
  return events.reduce((a, e) => evolveBudget(a, e), account);
}

const withBudget = (monthly: number, onExceed: 'refuse' | 'hold' = 'refuse') => fold(emptyBudgetAccount('team-a'), [set(monthly, onExceed)]);

describe('decideAdmission', () => {
  it('records nothing for a team without budget', () => {
    expect(decideAdmission(emptyBudgetAccount('team-a'), { jobId: 'j1', worst: worst(UNIT), now: NOW })).toEqual({ kind: 'unbudgeted' });
  });

  it('reserves a job that fits exactly at the edge, and says what remains', () => {
    const d = decideAdmission(withBudget(10 * UNIT), { jobId: 'j1', worst: worst(10 * UNIT), now: NOW });
    expect(d.kind).toBe('reserve');
    if (d.kind !== 'reserve') return;
    expect(d.held).toBe(false);
    expect(d.figures).toMatchObject({ worstCaseMicros: 10 * UNIT, monthlyMicros: 10 * UNIT, spentMicros: 0, reservedMicros: 0, remainingMicros: 0, held: false });
    expect(d.events.map((e) => e.type)).toEqual(['BudgetReserved', 'BudgetThresholdCrossed', 'BudgetThresholdCrossed', 'BudgetThresholdCrossed']);
  });

  it('refuses one micro over a hard budget, naming the budget, the figures and the fix', () => {
    const account = fold(withBudget(10 * UNIT), decideAdmission(withBudget(10 * UNIT), { jobId: 'j1', worst: worst(6 * UNIT), now: NOW }).kind === 'reserve' ? [{ type: 'BudgetReserved', data: { team: 'team-a', jobId: 'j1', ...worst(6 * UNIT), held: false, reservedAt: NOW.toISOString() } }] : []);
    const d = decideAdmission(account, { jobId: 'j2', worst: worst(4 * UNIT + 1), now: NOW });
    expect(d.kind).toBe('refuse');
    if (d.kind !== 'refuse') return;
    expect(d.message).toContain('monthly budget of 10.00 EUR (2026-12)');
    expect(d.message).toContain('reserved 6.00 + this job\'s worst case 4.000001');
    expect(d.message).toContain('0.000001 EUR over');
    expect(d.message).toContain('gpunet budget set --team team-a');
    expect(d.events).toEqual([{ type: 'BudgetRefused', data: expect.objectContaining({ jobId: 'j2', monthlyMicros: 10 * UNIT, spentMicros: 0, reservedMicros: 6 * UNIT }) }]);
  });

  it('holds rather than refuses when the team chose hold', () => {
    const d = decideAdmission(withBudget(UNIT, 'hold'), { jobId: 'j1', worst: worst(2 * UNIT), now: NOW });
    expect(d).toMatchObject({ kind: 'reserve', held: true, figures: { held: true, remainingMicros: -UNIT, onExceed: 'hold' } });
  });

  it('answers a retried submit with its reservation, recording nothing', () => {
    const first = decideAdmission(withBudget(10 * UNIT), { jobId: 'j1', worst: worst(3 * UNIT), now: NOW });
    const account = fold(withBudget(10 * UNIT), first.kind === 'reserve' ? first.events : []);
    expect(decideAdmission(account, { jobId: 'j1', worst: worst(3 * UNIT), now: NOW })).toMatchObject({ kind: 'already', figures: { reservedMicros: 0, remainingMicros: 7 * UNIT } });
  });

  it('refuses to compare amounts of two currencies', () => {
    expect(decideAdmission(withBudget(10 * UNIT), { jobId: 'j1', worst: worst(UNIT, 'USD'), now: NOW })).toMatchObject({ kind: 'currency_mismatch' });
  });

  it('counts what ended this month as spent, and starts each UTC month afresh', () => {
    let account = withBudget(10 * UNIT);
    const r = decideAdmission(account, { jobId: 'j1', worst: worst(8 * UNIT), now: NOW });
    account = fold(account, r.kind === 'reserve' ? r.events : []);
    account = fold(account, decideRelease(account, { jobId: 'j1', chargedMicros: 7 * UNIT, now: NOW }));
    expect(decideAdmission(account, { jobId: 'j2', worst: worst(3 * UNIT + 1), now: NOW }).kind).toBe('refuse');
    expect(decideAdmission(account, { jobId: 'j2', worst: worst(3 * UNIT), now: NOW }).kind).toBe('reserve');
    expect(decideAdmission(account, { jobId: 'j2', worst: worst(10 * UNIT), now: new Date('2027-01-01T00:00:00.000Z') }).kind).toBe('reserve');
  });
});

describe('soft thresholds', () => {
  it('are recorded once per month, each when committed spend reaches it', () => {
    let account = withBudget(100 * UNIT);
    const types: number[][] = [];
    for (const [i, micros] of [40, 15, 30, 15].entries()) {
      const d = decideAdmission(account, { jobId: `j${i}`, worst: worst(micros * UNIT), now: NOW });
      if (d.kind !== 'reserve') throw new Error(`unexpected ${d.kind}`);
      types.push(d.events.filter((e) => e.type === 'BudgetThresholdCrossed').map((e) => (e.data as { thresholdPercent: number }).thresholdPercent));
      account = fold(account, d.events);
    }
    expect(types).toEqual([[], [50], [80], [100]]);
  });
});

describe('decideRelease', () => {
  it('replaces the reservation by the charge, and does nothing for a job without one', () => {
    const d = decideAdmission(withBudget(10 * UNIT), { jobId: 'j1', worst: worst(UNIT), now: NOW });
    const account = fold(withBudget(10 * UNIT), d.kind === 'reserve' ? d.events : []);
    expect(decideRelease(account, { jobId: 'j1', chargedMicros: 250, now: NOW })).toEqual([
      { type: 'BudgetReleased', data: { team: 'team-a', jobId: 'j1', reservedMicros: UNIT, chargedMicros: 250, releasedAt: NOW.toISOString() } },
    ]);
    expect(decideRelease(account, { jobId: 'other', chargedMicros: 0, now: NOW })).toEqual([]);
  });
});

describe('reservationFits (placement\'s check)', () => {
  it('lets reserved jobs through in order and holds the ones beyond a lowered budget; running work is counted, never stopped', () => {
    let account = withBudget(10 * UNIT, 'hold');
    for (const [id, micros] of [['a', 4], ['b', 4], ['c', 4]] as const) {
      const d = decideAdmission(account, { jobId: id, worst: worst(micros * UNIT), now: NOW });
      account = fold(account, d.kind === 'reserve' ? d.events : []);
    }
    const none = () => false;
    expect(['a', 'b', 'c'].map((j) => reservationFits(account, j, NOW, none))).toEqual([true, true, false]);
    // The budget is lowered while b runs: a (queued, earlier) waits behind b's reservation.
    account = fold(account, [set(5 * UNIT, 'hold')]);
    expect(reservationFits(account, 'a', NOW, (j) => j === 'b')).toBe(false);
    expect(reservationFits(account, 'unreserved', NOW, none)).toBe(true);
  });
});

describe('replayBudget', () => {
  it('re-derives every recorded decision, and flags one the log does not explain', () => {
    let account = withBudget(10 * UNIT);
    const log: { type: string; data: unknown; revision: bigint }[] = [{ ...set(10 * UNIT), revision: 0n }];
    for (let i = 0; i < 5; i++) {
      const d = decideAdmission(account, { jobId: `j${i}`, worst: worst(3 * UNIT), now: NOW });
      if (d.kind !== 'reserve' && d.kind !== 'refuse') throw new Error(d.kind);
      for (const e of d.events) log.push({ ...e, revision: BigInt(log.length) });
      account = fold(account, d.events);
    }
    const replay = replayBudget('team-a', log);
    expect(replay.decisions.map((d) => d.decision)).toEqual(['reserve', 'reserve', 'reserve', 'refuse', 'refuse']);
    expect(replay.mismatches).toEqual([]);
    const tampered = log.map((e) => (e.type === 'BudgetRefused' ? { ...e, type: 'BudgetReserved', data: { ...(e.data as object), held: false, reservedAt: NOW.toISOString() } } : e));
    expect(replayBudget('team-a', tampered).mismatches.map((m) => m.recorded)).toEqual(['reserve', 'reserve']);
  });

  it('never lets the committed total pass a hard budget, whatever the order of submits and ends', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 50 * UNIT }), fc.array(fc.tuple(fc.integer({ min: 0, max: 20 * UNIT }), fc.boolean()), { maxLength: 40 }), (monthly, steps) => {
        let account = withBudget(monthly);
        steps.forEach(([micros, end], i) => {
          const d = decideAdmission(account, { jobId: `j${i}`, worst: worst(micros), now: NOW });
          if (d.kind === 'reserve' || d.kind === 'refuse') account = fold(account, d.events);
          if (end && account.reservations.has(`j${i}`)) account = fold(account, decideRelease(account, { jobId: `j${i}`, chargedMicros: Math.floor(micros / 2), now: NOW }));
          let committed = account.spent.get('2026-12') ?? 0;
          for (const r of account.reservations.values()) committed += r.worstCaseMicros;
          expect(committed).toBeLessThanOrEqual(monthly);
        });
      }),
    );
  });
});

describe('formatMicros', () => {
  it('writes exact decimal amounts', () => {
    expect([formatMicros(5_000_000_000), formatMicros(1), formatMicros(-1_500_000), formatMicros(0)]).toEqual(['5000.00', '0.000001', '-1.50', '0.00']);
  });
});
