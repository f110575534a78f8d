import type { EventData } from '#contracts';
import { decide } from './decide.js';
import { estimate } from './estimate.js';
import { ev, given, T0, type Unpositioned } from './fixtures.js';
import { plan } from './plan.js';
import { queueView } from './queue-view.js';
import { addHeld, GPU_HOUR_MS, heldMsInMonth, monthOf, monthStartOf, nextMonthStartOf, quotaUsage } from './quotas.js';
import { initialState } from './state.js';

const MIN = 60_000;
const HOUR = 60 * MIN;

const quota = (team: string, gpuModel: string, gpus: number | null, gpuHours: number | null = null, borrow = false, setAt = T0): Unpositioned => ({
  type: 'QuotaSet',
  data: { team, gpuModel, gpus, gpuHours, borrow, by: { keyId: 'key_billing', team: 'ops', role: 'billing' }, setAt: new Date(setAt).toISOString() },
});
/** `gpuModel` null: the job takes any model. */
const job = (jobId: string, gpus: number, team: string, gpuModel: string | null = 'H100'): Unpositioned[] => [ev.submitted(jobId, gpus, gpuModel ?? undefined, team), ev.staged(jobId)];
const placed = (jobId: string, nodeId: string, gpuIndices: number[], gpuModel = 'H100', borrowed = false): Unpositioned => {
  const e = ev.placed(jobId, 1, nodeId, gpuIndices, gpuModel) as { type: 'JobPlaced'; data: EventData<'JobPlaced'> };
  return { type: 'JobPlaced', data: { ...e.data, ...(borrowed ? { borrowed: true as const } : {}) } };
};
const heldAt = (jobId: string, nodeId: string, gpuIndices: number[], t: number, gpuModel = 'H100'): Unpositioned => ({
  type: 'ComputeHeld',
  data: { jobId, attemptId: `${jobId}-a1`, nodeId, gpuIndices, gpuModel, gpus: gpuIndices.length, heldAt: new Date(t).toISOString() },
});
const finishedAt = (jobId: string, nodeId: string, t: number): Unpositioned => ({
  type: 'JobFinished',
  data: { jobId, attemptId: `${jobId}-a1`, nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: new Date(t).toISOString() },
});
const startedIds = (state: ReturnType<typeof given>['state'], now: number) => plan(state, now).starts.map((s) => s.job.jobId);

describe('quotas: months', () => {
  it('names the UTC month and its bounds', () => {
    const t = Date.parse('2026-12-31T23:59:59.999Z');
    expect(monthOf(t)).toBe('2026-12');
    expect(monthStartOf(t)).toBe(Date.parse('2026-12-01T00:00:00.000Z'));
    expect(nextMonthStartOf(t)).toBe(Date.parse('2027-01-01T00:00:00.000Z'));
  });

  it('splits held time at month boundaries, in integer GPU-ms', () => {
    const s = initialState();
    addHeld(s, 'a', 'H100', Date.parse('2026-01-31T23:00:00Z'), Date.parse('2026-02-01T02:00:00Z'), 2);
    expect(heldMsInMonth(s, 'a', 'H100', Date.parse('2026-01-15T00:00:00Z'))).toBe(2 * HOUR);
    expect(heldMsInMonth(s, 'a', 'H100', Date.parse('2026-02-15T00:00:00Z'))).toBe(4 * HOUR);
    expect(Number.isInteger(heldMsInMonth(s, 'a', 'H100', Date.parse('2026-02-15T00:00:00Z')))).toBe(true);
  });
});

describe('quotas: concurrent GPUs', () => {
  it('given team a at its 4-GPU quota, when it asks for more, then it waits with QuotaExceeded and the figures while team b starts', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 4), ...job('a1', 4, 'team-a'), placed('a1', 'n1', [0, 1, 2, 3]), heldAt('a1', 'n1', [0, 1, 2, 3], T0))
      .apply(...job('a2', 2, 'team-a'), ...job('b1', 2, 'team-b'));
    const p = plan(h.state, T0 + MIN);
    expect(p.starts.map((s) => s.job.jobId)).toEqual(['b1']);
    const a2 = p.jobs.find((j) => j.job.jobId === 'a2')!;
    expect(a2.reason).toBe('QuotaExceeded');
    expect(a2.reasonDetail).toBe('team team-a holds 4 of its 4 H100 GPUs and the job asks for 2; borrowing is off');
    expect(a2.reservation).toBeUndefined();
    const view = queueView(h.state, p).pending.find((v) => v.job.jobId === 'a2')!;
    expect(view).toMatchObject({ reason: 'QuotaExceeded', reasonDetail: a2.reasonDetail });
  });

  it('counts the starts of one pass: of three 2-GPU jobs under a 4-GPU quota, two start', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 4), ...job('a1', 2, 'team-a'), ...job('a2', 2, 'team-a'), ...job('a3', 2, 'team-a'));
    const decisions = decide(h.state, new Date(T0 + MIN));
    expect(decisions.filter((d) => d.type === 'JobPlaced').map((d) => d.data.jobId).sort()).toEqual(['a1', 'a2']);
  });

  it('limits only the model of the quota', () => {
    const h = given(ev.node('n1', 4, 'H100'), ev.node('n2', 4, 'A100'), quota('team-a', 'H100', 0), ...job('a1', 2, 'team-a', 'A100'), ...job('a2', 2, 'team-a', 'H100'));
    expect(startedIds(h.state, T0 + MIN)).toEqual(['a1']);
  });

  it('puts a job that asks for no model on a model its team has room on', () => {
    const h = given(ev.node('n1', 4, 'H100'), ev.node('n2', 4, 'A100'), quota('team-a', 'H100', 0), ...job('a1', 2, 'team-a', null));
    const p = plan(h.state, T0 + MIN);
    expect(p.starts.map((s) => s.gangs[0]!.gpuModel)).toEqual(['A100']);
  });

  it('keeps the latest setting: raising the quota lets the waiting job start', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 0), ...job('a1', 2, 'team-a'));
    expect(startedIds(h.state, T0 + MIN)).toEqual([]);
    h.apply(quota('team-a', 'H100', 2, null, false, T0 + 1), quota('team-a', 'H100', 0, null, false, T0 - 1));
    expect(startedIds(h.state, T0 + MIN)).toEqual(['a1']);
  });
});

describe('quotas: borrowing', () => {
  it('given borrowing on and nobody else waiting, then the team takes idle GPUs past its quota, marked borrowed', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 2, null, true), ...job('a1', 2, 'team-a'), ...job('a2', 4, 'team-a'));
    const decisions = decide(h.state, new Date(T0 + MIN));
    const placedJobs = decisions.filter((d) => d.type === 'JobPlaced').map((d) => d.data as EventData<'JobPlaced'>);
    expect(placedJobs.map((d) => [d.jobId, d.borrowed ?? false]).sort()).toEqual([
      ['a1', false],
      ['a2', true],
    ]);
  });

  it('does not borrow while another team with quota room waits for the model', () => {
    // n1 is full but for 2 GPUs; team b (room in its quota) waits for 4, so team a may not borrow the 2.
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 2, null, true), quota('team-b', 'H100', 8))
      .apply(...job('a0', 2, 'team-a'), placed('a0', 'n1', [0, 1]), ...job('c0', 4, 'team-c'), placed('c0', 'n1', [2, 3, 4, 5]))
      .apply(...job('b1', 4, 'team-b'), ...job('a1', 2, 'team-a'));
    const p = plan(h.state, T0 + MIN);
    expect(p.starts).toEqual([]);
    expect(p.jobs.find((j) => j.job.jobId === 'a1')).toMatchObject({ reason: 'QuotaExceeded', reasonDetail: expect.stringContaining('team team-b waits for H100 within its quota') });
  });

  it('never borrows past the GPU-hours of the month', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 0, 1, true), ...job('a0', 1, 'team-a'), placed('a0', 'n1', [0]), heldAt('a0', 'n1', [0], T0), finishedAt('a0', 'n1', T0 + HOUR))
      .apply(...job('a1', 1, 'team-a'));
    const p = plan(h.state, T0 + 2 * HOUR);
    expect(p.jobs[0]).toMatchObject({ reason: 'QuotaExceeded', reasonDetail: 'team team-a used 1 of its 1 H100 GPU-hours in 2026-01; they renew on 2026-02-01' });
  });
});

describe('quotas: GPU-hours per month', () => {
  const history = () =>
    given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', null, 10))
      // 4 GPUs held 2 h (8 GPU-h) and ended; 1 GPU running since T0.
      .apply(...job('a0', 4, 'team-a'), placed('a0', 'n1', [0, 1, 2, 3]), heldAt('a0', 'n1', [0, 1, 2, 3], T0), finishedAt('a0', 'n1', T0 + 2 * HOUR))
      .apply(...job('r', 1, 'team-a'), placed('r', 'n1', [4]), heldAt('r', 'n1', [4], T0))
      .apply(...job('a1', 1, 'team-a'));

  it('counts ended attempts and running ones up to now, and lets the team run below the limit', () => {
    const h = history();
    expect(heldMsInMonth(h.state, 'team-a', 'H100', T0 + HOUR + 59 * MIN)).toBe(8 * GPU_HOUR_MS + (HOUR + 59 * MIN));
    expect(startedIds(h.state, T0 + HOUR + 59 * MIN)).toEqual(['a1']);
  });

  it('at the limit, the team\'s new jobs of the model wait; the running one is not touched', () => {
    const h = history();
    const p = plan(h.state, T0 + 2 * HOUR);
    expect(p.starts).toEqual([]);
    expect(p.jobs[0]).toMatchObject({ reason: 'QuotaExceeded', reasonDetail: 'team team-a used 10 of its 10 H100 GPU-hours in 2026-01; they renew on 2026-02-01' });
    expect(decide(h.state, new Date(T0 + 2 * HOUR))).toEqual([]);
  });

  it('renews with the month', () => {
    const h = history();
    const feb = Date.parse('2026-02-01T00:00:00Z');
    expect(heldMsInMonth(h.state, 'team-a', 'H100', feb + HOUR)).toBe(HOUR);
    expect(startedIds(h.state, feb + HOUR)).toEqual(['a1']);
  });
});

describe('quotas: what capacity shows', () => {
  it('per team and model: quota, in use, borrowed, GPU-ms this month and the jobs held back', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 2, 100, true), quota('team-b', 'H100', 4))
      .apply(...job('a0', 2, 'team-a'), placed('a0', 'n1', [0, 1]), heldAt('a0', 'n1', [0, 1], T0))
      .apply(...job('a1', 2, 'team-a'), placed('a1', 'n1', [2, 3], 'H100', true), heldAt('a1', 'n1', [2, 3], T0))
      .apply(...job('b0', 1, 'team-b'), placed('b0', 'n1', [4]))
      .apply(...job('b1', 4, 'team-b'));
    const placeable = h.state.queue.filter((j) => j.phase === 'queued');
    const rows = quotaUsage(h.state, T0 + HOUR, placeable);
    expect(rows).toEqual([
      { team: 'team-a', gpuModel: 'H100', gpus: 2, gpuHours: 100, borrow: true, inUse: 4, borrowed: 2, heldMs: 4 * HOUR, waiting: 0, setAt: new Date(T0).toISOString() },
      { team: 'team-b', gpuModel: 'H100', gpus: 4, gpuHours: null, borrow: false, inUse: 1, borrowed: 0, heldMs: 0, waiting: 1, setAt: new Date(T0).toISOString() },
    ]);
    expect(quotaUsage(h.state, T0 + HOUR, placeable, 'team-b').map((r) => r.team)).toEqual(['team-b']);
    // A job of team b that takes any model is held back by its H100 quota too.
    h.apply(...job('b2', 4, 'team-b', null));
    expect(quotaUsage(h.state, T0 + HOUR, h.state.queue.filter((j) => j.phase === 'queued'), 'team-b')[0]!.waiting).toBe(2);
  });
});

describe('quotas: estimates', () => {
  it('says QuotaExceeded for a team at its quota, and estimates another team as before', () => {
    const h = given(ev.node('n1', 8, 'H100'), quota('team-a', 'H100', 0));
    expect(estimate(h.state, { team: 'team-a', gpus: 1, gpuModel: 'H100', timeLimitMs: HOUR }, T0)).toEqual({ runnable: false, reason: 'QuotaExceeded' });
    expect(estimate(h.state, { team: 'team-b', gpus: 1, gpuModel: 'H100', timeLimitMs: HOUR }, T0)).toMatchObject({ runnable: true, expectedStart: T0 });
  });

  it('a job that asks for no model waits with QuotaExceeded only when every model is closed to its team', () => {
    const h = given(ev.node('n1', 4, 'H100'), ev.node('n2', 4, 'A100'), quota('team-a', 'H100', 0), quota('team-a', 'A100', 0, null, true), ...job('b1', 8, 'team-b', null), ...job('a1', 1, 'team-a', null));
    // team-b's job (any model, within its quota) waits for 8 GPUs of one model: nobody may borrow.
    const p = plan(h.state, T0 + MIN);
    expect(p.jobs.find((j) => j.job.jobId === 'a1')).toMatchObject({ reason: 'QuotaExceeded' });
  });
});
