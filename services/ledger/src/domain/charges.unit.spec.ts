import type { UsageRecorded } from '#contracts';
import fc from 'fast-check';
import { ChargesOverflowError, chargesFor, evolve, initialCharges, type ChargesEvent, type ChargesState } from './charges.js';

function line(attemptId: string, overrides: Partial<UsageRecorded> = {}): UsageRecorded {
  return {
    jobId: 'job-1',
    attemptId,
    team: 'team-a',
    nodeId: 'node-1',
    gpuModel: 'sim-gpu',
    gpus: 1,
    outcome: 'completed',
    heldFrom: '2025-06-01T10:00:00.000Z',
    finishedAt: '2025-06-01T11:00:00.000Z',
    billableMs: 3_600_000,
    rateMicrosPerGpuHour: 3_600_000,
    amountMicros: 3_600_000,
    currency: 'EUR',
    priceListVersion: 1,
    rounding: 'per-line-half-up-micros',
    recordedAt: '2025-06-01T11:00:01.000Z',
    ...overrides,
  };
}

const recorded = (data: UsageRecorded): ChargesEvent => ({ type: 'UsageRecorded', data });

function given(...lines: UsageRecorded[]): ChargesState {
  return lines.map(recorded).reduce(evolve, initialCharges());
}

const a1 = line('job-1-a1', { outcome: 'node_lost', billableMs: 0, amountMicros: 0, waivedReason: 'platform_fault' });
const a2 = line('job-1-a2', { billableMs: 1_000, amountMicros: 1_000, finishedAt: '2025-06-01T12:00:00.000Z' });
const b1 = line('job-2-a1', { jobId: 'job-2', amountMicros: 2_500_000, billableMs: 2_500_000, finishedAt: '2025-06-02T00:00:00.000Z' });
const other = line('job-3-a1', { jobId: 'job-3', team: 'team-b', amountMicros: 7 });

describe('charges read model', () => {
  it('given lines of two teams, when team-a asks, then it gets its lines in order of finishedAt with exact totals', () => {
    const state = given(a1, a2, other, b1);
    expect(chargesFor(state, { team: 'team-a' })).toEqual({
      team: 'team-a',
      lines: [a1, a2, b1],
      totals: [{ currency: 'EUR', amountMicros: 2_501_000 }],
      billableMs: 2_501_000,
    });
  });

  it('given several attempts of a job, when asked per job, then both attempts are lines (the lost one at 0)', () => {
    const charges = chargesFor(given(a1, a2, b1), { team: 'team-a', jobId: 'job-1' });
    expect(charges.lines.map((l) => l.attemptId)).toEqual(['job-1-a1', 'job-1-a2']);
    expect(charges.totals).toEqual([{ currency: 'EUR', amountMicros: 1_000 }]);
  });

  it('given a later attempt recorded first (its line held back by a retry), then the lines still come in order of finishedAt, then attempt, then node', () => {
    const a2OnNode2 = { ...a2, nodeId: 'node-0' };
    const charges = chargesFor(given(b1, a2, a2OnNode2, a1), { team: 'team-a' });
    expect(charges.lines.map((l) => `${l.attemptId}@${l.nodeId}`)).toEqual(['job-1-a1@node-1', 'job-1-a2@node-0', 'job-1-a2@node-1', 'job-2-a1@node-1']);
    expect(charges.totals).toEqual([{ currency: 'EUR', amountMicros: 2_502_000 }]);
  });

  it("given another team's job, when asked with its id, then there is nothing (a team sees only its own)", () => {
    expect(chargesFor(given(other), { team: 'team-a', jobId: 'job-3' })).toEqual({ team: 'team-a', lines: [], totals: [], billableMs: 0 });
  });

  it('given nothing recorded, then the answer is empty, not an error', () => {
    expect(chargesFor(initialCharges(), { team: 'team-a' })).toEqual({ team: 'team-a', lines: [], totals: [], billableMs: 0 });
  });

  it('given the same attempt twice (a redelivery), then it is one line and the first recorded wins', () => {
    const state = given(a2, { ...a2, amountMicros: 999, recordedAt: '2025-06-03T00:00:00.000Z' });
    expect(chargesFor(state, { team: 'team-a' }).lines).toEqual([a2]);
  });

  it('given a window, then only attempts finished at or after `from` and before `to` count', () => {
    const state = given(a1, a2, b1);
    const window = chargesFor(state, { team: 'team-a', from: '2025-06-01T11:00:00.000Z', to: '2025-06-02T00:00:00Z' });
    expect(window.lines.map((l) => l.attemptId)).toEqual(['job-1-a1', 'job-1-a2']);
  });

  it('given lines in two currencies, then there is one total per currency', () => {
    const usd = line('job-4-a1', { jobId: 'job-4', currency: 'USD', amountMicros: 5, finishedAt: '2025-06-03T00:00:00.000Z' });
    expect(chargesFor(given(a2, usd, b1), { team: 'team-a' }).totals).toEqual([
      { currency: 'EUR', amountMicros: 2_501_000 },
      { currency: 'USD', amountMicros: 5 },
    ]);
  });

  it('given sums beyond the safe integer range, then it refuses instead of rounding money', () => {
    const big = Number.MAX_SAFE_INTEGER;
    const state = given(line('x-a1', { amountMicros: big }), line('x-a2', { amountMicros: 1 }));
    expect(() => chargesFor(state, { team: 'team-a' })).toThrow(ChargesOverflowError);
  });

  it('for any history with duplicates and redeliveries, the answer equals that of the de-duplicated history', () => {
    const lineArb = fc.record({
      attempt: fc.integer({ min: 0, max: 30 }),
      amountMicros: fc.integer({ min: 0, max: 10_000_000 }),
      billableMs: fc.integer({ min: 0, max: 10_000_000 }),
    });
    fc.assert(
      fc.property(fc.array(lineArb, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 30 }), (raw, redeliveries) => {
        // The job and team of an attempt are fixed by the attempt (as in the store).
        const history = raw.map((r) =>
          line(`a${r.attempt}`, { jobId: `job-${r.attempt % 7}`, team: r.attempt % 2 ? 'team-a' : 'team-b', amountMicros: r.amountMicros, billableMs: r.billableMs }),
        );
        const withDuplicates = [...history];
        for (const r of redeliveries) if (history.length) withDuplicates.splice(r % (withDuplicates.length + 1), 0, history[r % history.length]!);
        // Reference: the first occurrence of each attempt (an attempt drawn twice with other
        // amounts stands for a conflicting redelivery: the first recorded wins).
        const seen = new Set<string>();
        const dedup = withDuplicates.filter((l) => !seen.has(l.attemptId) && seen.add(l.attemptId));
        for (const team of ['team-a', 'team-b']) {
          const got = chargesFor(given(...withDuplicates), { team });
          // Every line here finished at the same instant: the order is the attempt id's.
          const lines = dedup.filter((l) => l.team === team).sort((x, y) => (x.attemptId < y.attemptId ? -1 : x.attemptId > y.attemptId ? 1 : 0));
          const total = lines.reduce((s, l) => s + l.amountMicros, 0);
          expect(got.lines).toEqual(lines);
          expect(got.totals).toEqual(lines.length ? [{ currency: 'EUR', amountMicros: total }] : []);
          expect(got.billableMs).toBe(lines.reduce((s, l) => s + l.billableMs, 0));
        }
      }),
    );
  });
});

describe('charges of a multi-node attempt', () => {
  it('keeps one line per node of the same attempt, and still one per (attempt, node) on redelivery', () => {
    const n1 = line('job-g-a1', { jobId: 'job-g', nodeId: 'node-1', amountMicros: 10 });
    const n2 = line('job-g-a1', { jobId: 'job-g', nodeId: 'node-2', amountMicros: 20 });
    const got = chargesFor(given(n1, n2, n1, n2), { team: 'team-a', jobId: 'job-g' });
    expect(got.lines).toEqual([n1, n2]);
    expect(got.totals).toEqual([{ currency: 'EUR', amountMicros: 30 }]);
  });
});
