import type { GetChargesReply } from '#contracts';
import { quoteLine, renderInvoice, renderTimeline, stateText } from './render.js';

const line = (attempt: number, amountMicros: number, billableMs: number) => ({
  jobId: 'job_1',
  attemptId: `job_1-a${attempt}`,
  team: 'local',
  nodeId: 'node-1',
  gpuModel: 'sim-gpu',
  gpus: 2,
  outcome: 'completed' as const,
  heldFrom: '2025-06-01T12:00:00.000Z',
  finishedAt: '2025-06-01T12:00:03.692Z',
  billableMs,
  rateMicrosPerGpuHour: 3_600_000,
  amountMicros,
  currency: 'EUR',
  priceListVersion: 1,
  rounding: 'per-line-half-up-micros',
  recordedAt: '2025-06-01T12:00:04.000Z',
});

describe('invoice text', () => {
  it('lists each attempt with held-from, finished-at, ms, rate and amount, then the exact total', () => {
    const charges: GetChargesReply = { team: 'local', lines: [line(1, 7_384, 3_692), line(2, 999_999, 1)], totals: [{ currency: 'EUR', amountMicros: 1_007_383 }], billableMs: 3_693 };
    const text = renderInvoice(charges);
    expect(text).toContain('job_1-a1  node-1  sim-gpu × 2  2025-06-01T12:00:00.000Z  2025-06-01T12:00:03.692Z  3692    3.600000  0.007384 EUR');
    expect(text).toContain('total 1.007383 EUR');
    expect(text).toContain('billable time 3.693 s (3693 ms) over 2 attempt(s)');
  });

  it('says so when there is nothing to bill', () => {
    expect(renderInvoice({ team: 'local', lines: [], totals: [], billableMs: 0 })).toBe('team local: no charges');
  });
});

describe('timeline text', () => {
  it('shows every event with its time, offset and producer', () => {
    const base = { streamId: 's', revision: '0', eventId: '00000000-0000-4000-8000-000000000000', occurredAt: '2025-06-01T12:00:00.000Z', recordedAt: '2025-06-01T12:00:00.000Z', correlationId: 'c', causationId: 'c' };
    const text = renderTimeline([
      { ...base, position: '1', type: 'JobSubmitted', at: '2025-06-01T12:00:00.000Z', producer: 'intake', data: {} },
      { ...base, position: '2', type: 'JobPlaced', at: '2025-06-01T12:00:00.250Z', producer: 'placement', data: { nodeId: 'node-1', gpuIndices: [0, 1] } },
    ]).split('\n');
    expect(text[1]).toMatch(/^2025-06-01 12:00:00\.000 +\+0\.000 s +JobSubmitted +intake$/);
    expect(text[2]).toMatch(/^2025-06-01 12:00:00\.250 +\+0\.250 s +JobPlaced +placement +node-1 GPUs 0,1$/);
  });

  it('states the exit of a finished job, or the signal that killed it', () => {
    expect(stateText({ state: 'completed', exitCode: 0, cancelRequested: false })).toBe('completed (exit 0)');
    expect(stateText({ state: 'timeout', exitCode: null, cancelRequested: false })).toBe('timeout (killed by a signal)');
    expect(stateText({ state: 'running', cancelRequested: true })).toBe('running, cancel requested');
    expect(stateText({ state: 'failed', exitCode: null, cancelRequested: false, limit: 'disk_limit' })).toBe('failed (killed by a signal, stopped at its disk limit)');
  });
});

describe('quote line', () => {
  const attempt = { placedAt: '2025-06-01T12:00:04.000Z', finishedAt: '2025-06-01T12:30:00.000Z' } as never;
  it('says how far the first quote was from the actual start and, for a completed job with a quoted end, the end', () => {
    const quote = { expectedStart: '2025-06-01T12:00:00.000Z', expectedEnd: '2025-06-01T13:00:00.000Z', quotedAt: '2025-06-01T11:59:00.000Z' };
    expect(quoteLine({ state: 'completed', quote, attempts: [attempt] })).toBe('start 12:00:00.000 (quoted 11:59:00.000), started 4.000 s later; end 13:00:00.000, ended 1800.000 s earlier');
    expect(quoteLine({ state: 'staged', quote: { expectedStart: quote.expectedStart, quotedAt: quote.quotedAt }, attempts: [] })).toBe('start 12:00:00.000 (quoted 11:59:00.000)');
    expect(quoteLine({ state: 'staged', attempts: [] })).toBeUndefined();
  });
});
