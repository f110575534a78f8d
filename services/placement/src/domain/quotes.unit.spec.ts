import { decide } from './decide.js';
import { ev, given, T0 } from './fixtures.js';
import { plan } from './plan.js';
import { noteQuotes, quoteAccuracy } from './quotes.js';

const HOUR = 3_600_000;
const MIN = 60_000;

describe('quotes', () => {
  // n1 (1 GPU) busy until T0 + 1 h; `wait` is quoted that start, and actually starts 10 min later.
  const history = () => given(ev.node('n1', 1), ev.submitted('run', 1), ev.staged('run'), ev.placed('run', 1, 'n1', [0])).apply(ev.submitted('wait', 1), ev.staged('wait'));

  it('keeps the first start quoted for a job and writes it, with the error it turned out to have, into its JobPlaced', () => {
    const h = history();
    noteQuotes(h.state, plan(h.state, T0 + MIN, { reservationAfterMs: 0 }));
    const quote = h.state.jobs.get('wait')!.quote!;
    expect(quote.quotedAt).toBe(T0 + MIN);
    // A later, different quote does not replace the first.
    noteQuotes(h.state, plan(h.state, T0 + 2 * MIN, { reservationAfterMs: 0 }));
    expect(h.state.jobs.get('wait')!.quote).toEqual(quote);
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
});
