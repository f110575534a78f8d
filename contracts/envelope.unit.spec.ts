import {
  RecordedEventEnvelope,
  eventEnvelopeSchema,
  fail,
  fromBusEvent,
  ok,
  replyEnvelope,
  toBusEvent,
  Queries,
  type StoredEventLike,
} from './index.js';

const stored: StoredEventLike = {
  streamId: 'job-job_1',
  revision: 3n,
  // Beyond 2^53: must survive the trip through JSON as text.
  position: 9_007_199_254_740_993n,
  eventId: '0190a5f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e',
  type: 'JobStarted',
  data: { jobId: 'job_1', attemptId: 'job_1-a1', nodeId: 'node-1', startedAt: '2025-06-01T12:00:01.000Z' },
  metadata: {
    correlationId: 'c-1',
    causationId: 'e-0',
    jobId: 'job_1',
    team: 'team-ml',
    producer: 'execution',
    occurredAt: '2025-06-01T12:00:01.000Z',
  },
  recordedAt: '2025-06-01T12:00:01.005Z',
  hash: 'f'.repeat(64),
};

describe('bus envelope of a recorded event', () => {
  it('carries 64-bit revision and position as decimal text and back without loss', () => {
    const wire = JSON.parse(JSON.stringify(toBusEvent(stored))) as unknown;
    expect(wire).toMatchObject({ revision: '3', position: '9007199254740993' });
    expect(RecordedEventEnvelope.safeParse(wire).success).toBe(true);
    expect(fromBusEvent(wire)).toEqual(stored);
  });

  it('checks data against the schema of the type the envelope names', () => {
    const schema = eventEnvelopeSchema('JobStarted');
    const wire = toBusEvent(stored);
    expect(schema.safeParse(wire).success).toBe(true);
    expect(schema.safeParse({ ...wire, type: 'JobFinished' }).success).toBe(false);
    expect(schema.safeParse({ ...wire, data: { ...stored.data as object, startedAt: 'yesterday' } }).success).toBe(false);
  });

  it('refuses a revision that is not decimal text', () => {
    expect(RecordedEventEnvelope.safeParse({ ...toBusEvent(stored), revision: 3 }).success).toBe(false);
    expect(RecordedEventEnvelope.safeParse({ ...toBusEvent(stored), revision: '03' }).success).toBe(false);
  });
});

describe('reply envelope', () => {
  const reply = replyEnvelope(Queries.ListJobs.replySchema);

  it('is either ok with data or failed with an error', () => {
    expect(reply.safeParse(ok({ jobs: [], nextCursor: null })).success).toBe(true);
    expect(
      reply.safeParse(
        fail({ code: 'validation_failed', message: 'bad request', issues: [{ path: 'limit', message: 'limit must be ≤ 500', fix: 'write e.g. `limit: 50`' }] }),
      ).success,
    ).toBe(true);
    expect(reply.safeParse({ ok: true, error: { code: 'x', message: 'y' } }).success).toBe(false);
    expect(reply.safeParse({ ok: true, data: { jobs: 'none' } }).success).toBe(false);
  });
});
