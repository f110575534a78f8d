import { EstimateGiven, EstimateId, EstimateUsed, JobSubmitted } from '#contracts';
import { ValidationError } from '#errors';
import { decideEstimateUse, estimateGiven, estimateIdFromUuid, estimateStreamId, type UseInput } from './estimates.js';
import { thrownBy } from '../../../../test/support/thrown.js';

const now = new Date('2026-12-01T10:00:00.000Z');
const request = { gpus: 2, timeLimitMs: 3_600_000 };
const reply = {
  runnable: true,
  reason: 'Resources',
  expectedStart: '2026-12-01T11:00:00.000Z',
  expectedEnd: '2026-12-01T12:00:00.000Z',
  gpuModel: 'A100',
  at: '2026-12-01T10:00:00.000Z',
  charge: { amountMicros: 7_200_000, currency: 'EUR', rateMicrosPerGpuHour: 3_600_000, priceListVersion: 3 },
};
const id = estimateIdFromUuid('0197a0e2-1111-7abc-8def-0123456789ab');
const given = estimateGiven({ estimateId: id, team: 'team-a', requestedBy: 'ci-a', request, reply, quotedAt: now })!;
const use = (over: Partial<UseInput> = {}) =>
  decideEstimateUse({ estimateId: id, events: [{ type: 'EstimateGiven', data: given }], team: 'team-a', request, jobId: 'job_1', now: new Date('2026-12-01T10:05:00.000Z'), ...over });

const refusal = (fn: () => unknown): ValidationError => thrownBy(fn, ValidationError);

describe('estimate records', () => {
  it('ids are contract ids in their own intake stream', () => {
    expect(id).toBe('est_0197a0e211117abc8def0123456789ab');
    expect(EstimateId.safeParse(id).success).toBe(true);
    expect(estimateStreamId(id)).toBe(`intake-estimate-${id}`);
  });

  it('records the request, the expected start and end, when, and the charge quoted', () => {
    expect(EstimateGiven.parse(given)).toEqual({
      estimateId: id,
      team: 'team-a',
      requestedBy: 'ci-a',
      request: { gpus: 2, timeLimitMs: 3_600_000 },
      gpuModel: 'A100',
      expectedStart: reply.expectedStart,
      expectedEnd: reply.expectedEnd,
      quotedAt: now.toISOString(),
      charge: reply.charge,
    });
  });

  it('records nothing for an answer without an expected start', () => {
    expect(estimateGiven({ estimateId: id, team: 'team-a', request, reply: { runnable: false, reason: 'NoNodeFits', at: reply.at }, quotedAt: now })).toBeUndefined();
  });
});

describe('decideEstimateUse', () => {
  it('holds a job of the same team and request to the estimate, and records the job it is used by', () => {
    const d = use();
    expect(JobSubmitted.shape.quote.parse(d.quote)).toEqual({ expectedStart: reply.expectedStart, expectedEnd: reply.expectedEnd, quotedAt: now.toISOString(), estimateId: id });
    expect(EstimateUsed.parse(d.used)).toEqual({ estimateId: id, team: 'team-a', usedBy: 'job_1', usedAt: '2026-12-01T10:05:00.000Z' });
  });

  it('refuses an unknown id and another team\'s alike, on `estimateId` with its fix', () => {
    const unknown = refusal(() => use({ events: [] }));
    const other = refusal(() => use({ team: 'team-b' }));
    expect(unknown.issues).toEqual([expect.objectContaining({ path: 'estimateId', fix: expect.stringContaining('gpunet estimate') })]);
    expect(other.message).toBe(unknown.message);
    expect(other.issues).toEqual(unknown.issues);
  });

  it('refuses another request: GPUs, GPU model or time limit', () => {
    for (const r of [{ ...request, gpus: 4 }, { ...request, gpuModel: 'A100' }, { ...request, timeLimitMs: 60_000 }]) {
      expect(refusal(() => use({ request: r })).issues).toEqual([expect.objectContaining({ path: 'estimateId', fix: expect.stringContaining('estimate again with this spec\'s request') })]);
    }
  });

  it('is one job\'s promise: used by another job is refused; the same job (a retried submit) passes without a second use', () => {
    const events = [
      { type: 'EstimateGiven', data: given },
      { type: 'EstimateUsed', data: { estimateId: id, team: 'team-a', usedBy: 'job_1', usedAt: now.toISOString() } },
    ];
    expect(refusal(() => use({ events, jobId: 'job_2' })).issues[0]!.message).toContain('already used by job job_1');
    const again = use({ events });
    expect(again.used).toBeUndefined();
    expect(again.quote.estimateId).toBe(id);
  });
});
