import { ev, given, T0 } from './fixtures.js';
import { byPriority, DEFAULT_PRIORITY_WEIGHTS, PriorityContext, priorityOf } from './priority.js';
import { initialState, teamUsageAt } from './state.js';
import { evolve } from './evolve.js';

const HOUR = 3_600_000;
const onlyAge = { ...DEFAULT_PRIORITY_WEIGHTS, fairShare: 0, size: 0, runTime: 0 };

describe('priorityOf', () => {
  it('given two equal jobs, when one is older, then it ranks higher, and age stops counting at the cap', () => {
    const h = given(ev.submitted('old', 1), ev.submitted('new', 1));
    h.state.jobs.get('new')!.submittedAt = new Date(T0 + HOUR).toISOString();
    const w = { ...onlyAge, ageCapMs: 2 * HOUR };
    expect(priorityOf(h.state.jobs.get('old')!, h.state, T0 + HOUR, w)).toBeCloseTo(500);
    expect(priorityOf(h.state.jobs.get('new')!, h.state, T0 + HOUR, w)).toBe(0);
    expect(priorityOf(h.state.jobs.get('old')!, h.state, T0 + 10 * HOUR, w)).toBe(1000);
  });

  it('given a team that used GPUs, when another team has used none, then the other team ranks higher', () => {
    const h = given(ev.node('n1', 2), ev.submitted('used', 2, undefined, 'heavy'), ev.placed('used', 1, 'n1', [0, 1]), ev.held('used', 1, 'n1', [0, 1]), ev.finished('used', 1, 'n1'));
    h.apply(ev.submitted('a', 1, undefined, 'heavy'), ev.submitted('b', 1, undefined, 'light'));
    const ctx = new PriorityContext(h.state, T0, DEFAULT_PRIORITY_WEIGHTS, ['heavy', 'light']);
    // heavy used everything of two equal shares: 2^(-1 * 2) = 0.25; light used nothing: 1.
    expect(ctx.fairShare('heavy')).toBeCloseTo(0.25);
    expect(ctx.fairShare('light')).toBe(1);
    expect(byPriority([h.state.jobs.get('a')!, h.state.jobs.get('b')!], h.state, T0).map((r) => r.job.jobId)).toEqual(['b', 'a']);
  });

  it('given usage folded by evolve, when a half-life passes, then it counts half', () => {
    const state = initialState({ usageHalfLifeMs: HOUR });
    const h = given();
    Object.assign(h.state, { usageHalfLifeMs: HOUR });
    h.apply(ev.node('n1', 1), ev.submitted('j', 1), ev.placed('j', 1, 'n1', [0]), ev.held('j', 1, 'n1', [0]), ev.finished('j', 1, 'n1'));
    // held at T0+1, finished at T0+2: 1 GPU-ms, as of T0+2.
    expect(h.state.usage.get('team-a')).toEqual({ gpuMs: 1, asOf: T0 + 2 });
    expect(state.usageHalfLifeMs).toBe(HOUR);
    const u = h.state.usage.get('team-a')!;
    expect(teamUsageAt(h.state, 'team-a', T0 + 2 + HOUR)).toBeCloseTo(u.gpuMs / 2);
  });

  it('counts an ended attempt once, even when its JobFinished is redelivered', () => {
    const h = given(ev.node('n1', 1), ev.submitted('j', 1), ev.placed('j', 1, 'n1', [0]), ev.held('j', 1, 'n1', [0]), ev.finished('j', 1, 'n1'));
    evolve(h.state, { ...ev.finished('j', 1, 'n1'), position: 99n } as never);
    expect(h.state.usage.get('team-a')!.gpuMs).toBe(1);
  });

  it('counts the GPU-ms a running attempt has held so far, and nothing once released', () => {
    const h = given(ev.node('n1', 4), ev.submitted('run', 4, undefined, 'busy'), ev.placed('run', 1, 'n1', [0, 1, 2, 3]), ev.held('run', 1, 'n1', [0, 1, 2, 3]), ev.submitted('x', 1, undefined, 'idle'));
    const ctx = new PriorityContext(h.state, T0 + HOUR, DEFAULT_PRIORITY_WEIGHTS, ['idle']);
    expect(ctx.fairShare('busy')).toBeCloseTo(0.25);
    expect(h.state.live.size).toBe(1);
    h.apply(ev.finished('run', 1, 'n1'), ev.released('run', 1, 'n1', [0, 1, 2, 3]));
    expect(h.state.live.size).toBe(0);
  });

  it('given equal age and share, when one job is larger, then it ranks higher (size factor, capped)', () => {
    const h = given(ev.submitted('small', 1), ev.submitted('big', 8), ev.submitted('huge', 16));
    // The default gives size no weight (decision 0020); the factor still works when weighted.
    const [small, big, huge] = ['small', 'big', 'huge'].map((id) => priorityOf(h.state.jobs.get(id)!, h.state, T0, { ...DEFAULT_PRIORITY_WEIGHTS, size: 500 }));
    expect(big! - small!).toBeCloseTo(500 * (7 / 8));
    expect(huge).toBe(big);
  });

  it('breaks ties by submission order', () => {
    const h = given(ev.submitted('a', 1), ev.submitted('b', 1), ev.submitted('c', 1));
    const jobs = ['c', 'a', 'b'].map((id) => h.state.jobs.get(id)!);
    expect(byPriority(jobs, h.state, T0).map((r) => r.job.jobId)).toEqual(['a', 'b', 'c']);
  });
});
