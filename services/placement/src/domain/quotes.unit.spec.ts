import { decide } from './decide.js';
import { ev, given, T0 } from './fixtures.js';
import { plan } from './plan.js';
import { forgetEnded } from './evolve.js';
import { QUOTE_WINDOW_MS, quoteAccuracy, quotesToRecord } from './quotes.js';

const HOUR = 3_600_000;
const MIN = 60_000;

describe('quotes', () => {
  // n1 (1 GPU) busy until T0 + 1 h; `wait` is quoted that start, and actually starts 10 min later.
  const history = () => given(ev.node('n1', 1), ev.submitted('run', 1), ev.staged('run'), ev.placed('run', 1, 'n1', [0])).apply(ev.submitted('wait', 1), ev.staged('wait'));

  it('keeps the first start quoted for a job and writes it, with the error it turned out to have, into its JobPlaced', () => {
    const h = history();
    const shown = new Set(['wait']);
    // Only a start shown is recorded.
    expect(quotesToRecord(h.state, plan(h.state, T0 + MIN, { reservationAfterMs: 0 }), new Set())).toEqual([]);
    const recorded = quotesToRecord(h.state, plan(h.state, T0 + MIN, { reservationAfterMs: 0 }), shown);
    expect(recorded).toEqual([{ type: 'JobQuoted', data: { jobId: 'wait', expectedStart: expect.any(String), quotedAt: new Date(T0 + MIN).toISOString() } }]);
    h.apply(...recorded);
    const quote = h.state.jobs.get('wait')!.quote!;
    expect(quote).toEqual({ expectedStart: Date.parse(recorded[0]!.data.expectedStart), quotedAt: T0 + MIN });
    // A later, different quote is not recorded, nor would it replace the first; a restart folds the same quote.
    expect(quotesToRecord(h.state, plan(h.state, T0 + 2 * MIN, { reservationAfterMs: 0 }), shown)).toEqual([]);
    h.apply({ type: 'JobQuoted', data: { jobId: 'wait', expectedStart: new Date(T0 + 5 * HOUR).toISOString(), quotedAt: new Date(T0 + 2 * MIN).toISOString() } });
    expect(h.state.jobs.get('wait')!.quote).toEqual(quote);
    expect(history().apply(...recorded).state.jobs.get('wait')!.quote).toEqual(quote);
    h.apply(ev.finished('run', 1, 'n1'), ev.released('run', 1, 'n1', [0]));
    const startAt = quote.expectedStart + 10 * MIN;
    const placed = decide(h.state, new Date(startAt)).find((d) => d.type === 'JobPlaced')!;
    expect(placed.data).toMatchObject({ jobId: 'wait', quote: { expectedStart: new Date(quote.expectedStart).toISOString(), quotedAt: new Date(T0 + MIN).toISOString() } });
    h.apply(placed);
    expect(quoteAccuracy(h.state, startAt)).toMatchObject({ started: 1, medianStartErrorMs: 10 * MIN, p90StartErrorMs: 10 * MIN });
    // Out of the window: not counted.
    expect(quoteAccuracy(h.state, startAt + 8 * 24 * HOUR).started).toBe(0);
  });

  it('counts accepted deadlines met and missed, and notes in JobPlaced why a deadline may be missed', () => {
    const deadline = (jobId: string, at: number) => {
      const e = ev.submitted(jobId, 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
      return { ...e, data: { ...e.data, deadlineAt: new Date(at).toISOString() } };
    };
    const h = given(ev.node('n1', 1), deadline('late', T0 + 30 * MIN), ev.staged('late'));
    const placed = decide(h.state, new Date(T0)).find((d) => d.type === 'JobPlaced')!;
    // Its hour-long limit runs past the deadline: the record says so when it starts.
    expect((placed.data as { deadlineNote?: string }).deadlineNote).toContain('after its deadline');
    h.apply(placed, ev.held('late', 1, 'n1', [0]), ev.finished('late', 1, 'n1'), ev.released('late', 1, 'n1', [0]));
    expect(quoteAccuracy(h.state, T0 + HOUR)).toMatchObject({ deadlinesAccepted: 1, deadlinesMet: 1 });
    h.apply(deadline('gone', T0 + 2 * MIN));
    h.apply(...decide(h.state, new Date(T0 + 3 * MIN)));
    expect(h.state.jobs.get('gone')!.end).toBe('withdrawn');
    expect(quoteAccuracy(h.state, T0 + HOUR)).toMatchObject({ deadlinesAccepted: 2, deadlinesMet: 1 });
  });

  it('keeps the estimate a deadline was accepted on (JobSubmitted) as the quote, across a restart, and knows its start and end errors', () => {
    const quote = { expectedStart: new Date(T0).toISOString(), expectedEnd: new Date(T0 + HOUR).toISOString(), quotedAt: new Date(T0 - MIN).toISOString() };
    const e = ev.submitted('dl', 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
    const submitted = { ...e, data: { ...e.data, deadlineAt: new Date(T0 + 2 * HOUR).toISOString(), quote } };
    // Folded from the record: a placement started after the submit has the same quote, before anything asked for a status.
    const h = given(ev.node('n1', 1), submitted, ev.staged('dl'));
    expect(h.state.jobs.get('dl')!.quote).toEqual({ expectedStart: T0, expectedEnd: T0 + HOUR, quotedAt: T0 - MIN });
    // A start shown later is not recorded as a second quote.
    expect(quotesToRecord(h.state, plan(h.state, T0 + MIN, { reservationAfterMs: 0 }), new Set(['dl']))).toEqual([]);
    const placed = decide(h.state, new Date(T0 + MIN)).find((d) => d.type === 'JobPlaced')!;
    expect(placed.data).toMatchObject({ jobId: 'dl', quote });
    h.apply(placed, ev.held('dl', 1, 'n1', [0]));
    expect(quoteAccuracy(h.state, T0 + HOUR)).toMatchObject({ started: 1, medianStartErrorMs: MIN, ended: 0 });
    h.apply(ev.finished('dl', 1, 'n1'), ev.released('dl', 1, 'n1', [0]));
    const finishedAt = Date.parse((h.state.jobs.get('dl')!.attempts[0]!.finishedAt)!);
    // Ended well before the quoted end (which runs to the time limit): a negative end error.
    expect(quoteAccuracy(h.state, T0 + HOUR)).toMatchObject({ ended: 1, medianEndErrorMs: finishedAt - (T0 + HOUR), p90EndErrorMs: T0 + HOUR - finishedAt, deadlinesAccepted: 1, deadlinesMet: 1 });
    expect(finishedAt - (T0 + HOUR)).toBeLessThan(0);
  });

  it('reads the same accuracy once the ended jobs are forgotten (decision 0043), and keeps no sample a week older than the newest', () => {
    const deadline = (jobId: string, atMs: number) => {
      const e = ev.submitted(jobId, 1) as Extract<ReturnType<typeof ev.submitted>, { type: 'JobSubmitted' }>;
      const quote = { expectedStart: new Date(T0).toISOString(), expectedEnd: new Date(T0 + HOUR).toISOString(), quotedAt: new Date(T0 - MIN).toISOString() };
      return { ...e, data: { ...e.data, deadlineAt: new Date(atMs).toISOString(), quote } };
    };
    // A deadline met (started a minute late, ended early), one withdrawn unmet, one still running: each kind of sample.
    const h = given(ev.node('n1', 2), deadline('met', T0 + 2 * HOUR), ev.staged('met'));
    h.apply(...decide(h.state, new Date(T0 + MIN)), ev.held('met', 1, 'n1', [0]), ev.finished('met', 1, 'n1'), ev.released('met', 1, 'n1', [0]));
    h.apply(deadline('gone', T0 + 2 * MIN), ev.staged('gone'), ev.submitted('plain', 1), ev.staged('plain'));
    h.apply(...decide(h.state, new Date(T0 + 3 * MIN)));
    h.apply(deadline('runs', T0 + 3 * HOUR), ev.staged('runs'));
    h.apply(...decide(h.state, new Date(T0 + 4 * MIN)));
    expect(h.state.jobs.get('gone')!.end).toBe('withdrawn');
    const before = quoteAccuracy(h.state, T0 + HOUR);
    expect(before).toMatchObject({ started: 2, ended: 1, deadlinesAccepted: 2, deadlinesMet: 1 });

    const ended = [...h.state.jobs.values()].filter((j) => j.phase === 'ended').map((j) => j.jobId);
    expect(ended.sort()).toEqual(['gone', 'met']);
    expect(forgetEnded(h.state, 'runs')).toBe(false);
    for (const id of ended) expect(forgetEnded(h.state, id)).toBe(true);
    expect([...h.state.jobs.keys()].sort()).toEqual(['plain', 'runs']);
    expect(h.state.forgottenJobs).toBe(2);
    expect(h.state.quoteSamples).toHaveLength(2);
    expect(quoteAccuracy(h.state, T0 + HOUR)).toEqual(before);
    expect(quoteAccuracy(h.state, T0 + 8 * 24 * HOUR)).toMatchObject({ started: 0, ended: 0, deadlinesAccepted: 0 });

    // A job forgotten more than the window after them: the old samples leave, its own stays.
    const late = T0 + QUOTE_WINDOW_MS + 3 * HOUR;
    const l = given(ev.node('n2', 1), deadline('later', late + HOUR), ev.staged('later'));
    l.state.quoteSamples.push(...h.state.quoteSamples);
    l.apply(...decide(l.state, new Date(late)), ev.held('later', 1, 'n2', [0]), ev.finished('later', 1, 'n2'), ev.released('later', 1, 'n2', [0]));
    expect(forgetEnded(l.state, 'later')).toBe(true);
    expect(l.state.quoteSamples).toHaveLength(1);
    expect(l.state.quoteSamples[0]!.deadline).toBeDefined();
  });
});
