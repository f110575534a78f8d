import type { EventData } from '#contracts';
import { decide } from './decide.js';
import { deadlinePassed } from './deadlines.js';
import { at, ev, given, T0, type Unpositioned } from './fixtures.js';

const HOUR = 3_600_000;

/** A 1-GPU submission with a deadline `deadlineMs` after T0. */
function withDeadline(jobId: string, gpus: number, deadlineMs: number): Unpositioned {
  const e = ev.submitted(jobId, gpus) as { type: 'JobSubmitted'; data: EventData<'JobSubmitted'> };
  return { type: 'JobSubmitted', data: { ...e.data, deadlineAt: at(deadlineMs) } };
}

describe('deadlines in the queue', () => {
  // n1: 2 GPUs, both held by `run`; `late` (2 GPUs) waits with a deadline at T0 + 1h.
  const history = () =>
    given(ev.node('n1', 2), ev.submitted('run', 2), ev.staged('run'), ev.placed('run', 1, 'n1', [0, 1]), withDeadline('late', 2, HOUR), ev.staged('late'));

  it('given a queued job before its deadline, when a pass runs, then it keeps waiting', () => {
    expect(decide(history().state, new Date(T0 + HOUR - 1))).toEqual([]);
  });

  it('given a queued job at its deadline, when a pass runs, then it is withdrawn with outcome deadline and never placed', () => {
    const h = history().apply(ev.released('run', 1, 'n1', [0, 1]));
    const decisions = decide(h.state, new Date(T0 + HOUR));
    expect(decisions).toEqual([
      { type: 'JobWithdrawn', data: expect.objectContaining({ jobId: 'late', team: 'team-a', outcome: 'deadline', withdrawnAt: at(HOUR) }) },
    ]);
  });

  it('withdraws a job still waiting for its inputs too, and the withdrawal ends it in the state', () => {
    const h = given(ev.node('n1', 2), withDeadline('w', 1, HOUR));
    const [d] = decide(h.state, new Date(T0 + 2 * HOUR));
    expect(d).toMatchObject({ type: 'JobWithdrawn', data: { jobId: 'w', outcome: 'deadline' } });
    h.apply({ type: 'JobWithdrawn', data: d!.data as EventData<'JobWithdrawn'> });
    expect(h.state.jobs.get('w')).toMatchObject({ phase: 'ended', end: 'withdrawn' });
    expect(decide(h.state, new Date(T0 + 3 * HOUR))).toEqual([]);
  });

  it('leaves placed jobs and jobs without a deadline alone', () => {
    const h = given(ev.node('n1', 2), withDeadline('p', 1, HOUR), ev.staged('p'), ev.placed('p', 1, 'n1', [0]), ev.submitted('free', 1), ev.staged('free'));
    expect(deadlinePassed(h.state.jobs.get('p')!, T0 + 2 * HOUR)).toBe(false);
    expect(deadlinePassed(h.state.jobs.get('free')!, T0 + 2 * HOUR)).toBe(false);
    expect(decide(h.state, new Date(T0 + 2 * HOUR)).map((d) => d.type)).toEqual(['JobPlaced']);
  });
});
