import type { EstimateReply } from '#contracts';
import { deadlineIssue, parseDeadlinePolicy } from './deadline-check.js';

const at = '2026-01-01T00:00:00.000Z';
const runnable = (start: string, end: string): EstimateReply => ({ runnable: true, reason: 'Resources', expectedStart: start, expectedEnd: end, gpuModel: 'A100', at });

describe('deadline check at submit', () => {
  it('given an expected end at or before the deadline, then there is no issue', () => {
    expect(deadlineIssue('2026-01-01T02:00:00.000Z', runnable(at, '2026-01-01T02:00:00.000Z'))).toBeUndefined();
    expect(deadlineIssue('2026-01-01T03:00:00.000Z', runnable(at, '2026-01-01T02:00:00.000Z'))).toBeUndefined();
  });

  it('given an expected end after the deadline, then the issue names request.deadline and the earliest finish', () => {
    const issue = deadlineIssue('2026-01-01T01:00:00.000Z', runnable('2026-01-01T00:30:00.000Z', '2026-01-01T01:30:00.000Z'));
    expect(issue).toMatchObject({ path: 'request.deadline' });
    expect(issue!.message).toContain('earliest possible finish is 2026-01-01T01:30:00.000Z');
    expect(issue!.fix).toContain('Gpunet-Deadline-Policy: warn');
  });

  it('does not call a job late when no node can run it or its start is unknown', () => {
    expect(deadlineIssue(at, { runnable: false, reason: 'NoNodeFits', at })).toBeUndefined();
    expect(deadlineIssue(at, { runnable: false, reason: 'Unpredictable', at })).toBeUndefined();
  });

  it('reads the policy header: absent is reject, warn and reject in any case, anything else is invalid', () => {
    expect(parseDeadlinePolicy(undefined)).toBe('reject');
    expect(parseDeadlinePolicy('WARN')).toBe('warn');
    expect(parseDeadlinePolicy('reject')).toBe('reject');
    expect(parseDeadlinePolicy('maybe')).toBeUndefined();
  });
});
