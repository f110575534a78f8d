import { decide, type PlacementDecision } from './decide.js';
import { at, ev, given, T0, type Unpositioned } from './fixtures.js';
import { plan } from './plan.js';
import { queueView } from './queue-view.js';

const now = new Date(T0 + 10_000);
const placed = (ds: PlacementDecision[]) => ds.filter((d) => d.type === 'JobPlaced').map((d) => d.data.jobId);
const actor = { keyId: 'billing', team: 'ops' };

const budget = (monthlyMicros: number, onExceed: 'refuse' | 'hold' = 'hold'): Unpositioned => ({
  type: 'BudgetSet',
  data: { team: 'team-a', monthlyMicros, currency: 'EUR', onExceed, thresholdsPercent: [50, 80, 100], setBy: actor, setAt: at() },
});
const reserved = (jobId: string, worstCaseMicros: number, held = false): Unpositioned => ({
  type: 'BudgetReserved',
  data: { team: 'team-a', jobId, worstCaseMicros, currency: 'EUR', gpus: 1, timeLimitMs: 3_600_000, rateMicrosPerGpuHour: worstCaseMicros, priceListVersion: 1, held, reservedAt: at() },
});
const released = (jobId: string, reservedMicros: number, chargedMicros: number): Unpositioned => ({
  type: 'BudgetReleased',
  data: { team: 'team-a', jobId, reservedMicros, chargedMicros, releasedAt: at() },
});

describe('placement checks the budget again before placing', () => {
  it('places reserved jobs that fit and holds the rest with reason BudgetExceeded until a release makes room', () => {
    const h = given(ev.node('n1', 4), budget(10), reserved('a', 6), ev.submitted('a', 1), ev.staged('a'), reserved('b', 6, true), ev.submitted('b', 1), ev.staged('b'));
    const first = decide(h.state, now);
    expect(placed(first)).toEqual(['a']);
    const view = queueView(h.state, plan(h.state, now));
    expect(view.pending.find((p) => p.job.jobId === 'b')?.reason).toBe('BudgetExceeded');
    for (const d of first) h.apply(d as Unpositioned);
    expect(placed(decide(h.state, now))).toEqual([]);
    // a ends having cost 3: b's 6 now fits (3 spent + 6 ≤ 10).
    h.apply(released('a', 6, 3));
    expect(placed(decide(h.state, now))).toEqual(['b']);
  });

  it('holds a reserved job when the budget is lowered after it was accepted, and never stops running work', () => {
    const h = given(ev.node('n1', 4), budget(10, 'refuse'), reserved('run', 5), ev.submitted('run', 1), ev.staged('run'), reserved('next', 5), ev.submitted('next', 1), ev.staged('next'));
    h.apply(ev.placed('run', 1, 'n1', [0]), budget(6, 'refuse'));
    const ds = decide(h.state, now);
    expect(placed(ds)).toEqual([]);
    expect(ds.filter((d) => d.type !== 'JobPlaced')).toEqual([]);
    h.apply(budget(10, 'refuse'));
    expect(placed(decide(h.state, now))).toEqual(['next']);
  });

  it('does not hold jobs of a team without budget, nor jobs submitted before it had one', () => {
    const h = given(ev.node('n1', 4), ev.submitted('old', 1), ev.staged('old'), budget(0));
    expect(placed(decide(h.state, now))).toEqual(['old']);
  });
});
