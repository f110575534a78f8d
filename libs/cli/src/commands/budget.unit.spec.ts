import { describe, expect, it } from '@jest/globals';
import { budgetRequest, parseAmountMicros, renderBudget, renderBudgetFigures } from './budget.js';
import { renderEstimate } from './estimate.js';

describe('parseAmountMicros', () => {
  it('reads decimal amounts exactly, without floats', () => {
    expect(parseAmountMicros('5000.00')).toBe(5_000_000_000);
    expect(parseAmountMicros('5000')).toBe(5_000_000_000);
    expect(parseAmountMicros('0.000001')).toBe(1);
    expect(parseAmountMicros('0.1')).toBe(100_000);
    expect(parseAmountMicros('1234567.891011')).toBe(1_234_567_891_011);
  });

  it('refuses what is not an amount, naming the flag and the fix', () => {
    for (const bad of ['-1', '1.2345678', 'abc', '1e3', '', '9999999999.00']) {
      expect(() => parseAmountMicros(bad)).toThrow(/--monthly/);
    }
  });
});

describe('budgetRequest', () => {
  it('turns the flags into the request', () => {
    expect(budgetRequest({ team: 'team-ml', monthly: '5000.00', onExceed: 'hold', thresholds: '50,90' })).toEqual({ team: 'team-ml', body: { monthlyMicros: 5_000_000_000, onExceed: 'hold', thresholdsPercent: [50, 90] } });
  });

  it('names the flag at fault', () => {
    expect(() => budgetRequest({ monthly: '1' })).toThrow('--team is required');
    expect(() => budgetRequest({ team: 't' })).toThrow('--monthly is required');
    expect(() => budgetRequest({ team: 't', monthly: '1', onExceed: 'kill' })).toThrow(/--on-exceed: .*refuse.*hold/);
    expect(() => budgetRequest({ team: 't', monthly: '1', thresholds: '50,x' })).toThrow(/--thresholds/);
  });
});

describe('renderBudget and the budget lines of submit and estimate', () => {
  const view = {
    team: 'team-ml',
    month: '2026-12',
    spentMicros: 1_000_000,
    reservedMicros: 3_600_000,
    remainingMicros: 400_000,
    heldJobs: ['job_x'],
    thresholdsCrossed: [50, 80],
    revision: '7',
    budget: { monthlyMicros: 5_000_000, currency: 'EUR', onExceed: 'hold' as const, thresholdsPercent: [50, 80, 100], setBy: { keyId: 'billing', team: 'ops' }, setAt: '2026-12-01T00:00:00.000Z' },
  };

  it('shows the budget, this month\'s figures, the thresholds crossed and the held jobs', () => {
    const text = renderBudget(view);
    expect(text).toContain('team team-ml: 5.000000 EUR per month, holds jobs beyond it; thresholds 50, 80, 100 %');
    expect(text).toContain('2026-12: spent 1.000000 + reserved 3.600000 = 4.600000 EUR; remaining 0.400000 EUR');
    expect(text).toContain('held (BudgetExceeded): job_x');
    expect(renderBudget({ ...view, budget: undefined })).toContain('has no budget');
  });

  it('says the worst case and what remains, in estimate and submit', () => {
    const figures = { worstCaseMicros: 3_600_000, currency: 'EUR', monthlyMicros: 5_000_000, spentMicros: 0, reservedMicros: 0, remainingMicros: 1_400_000, onExceed: 'refuse' as const, held: false };
    expect(renderBudgetFigures(figures)).toBe('worst case: 3.600000 EUR (request × time limit × rate)\nbudget:     1.400000 EUR of 5.000000 EUR remain this month after it (spent 0.000000, reserved 0.000000)');
    const e = renderEstimate({ runnable: true, reason: 'StartsNow', expectedStart: '2026-12-01T00:00:00.000Z', expectedEnd: '2026-12-01T01:00:00.000Z', gpuModel: 'A100', at: '2026-12-01T00:00:00.000Z', budget: figures });
    expect(e).toContain('worst case: 3.600000 EUR');
    expect(renderBudgetFigures({ ...figures, held: true, remainingMicros: -1 })).toContain('BudgetExceeded');
  });
});
