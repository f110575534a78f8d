import { ID_PATTERN, JobId } from '#contracts';
import { ValidationError } from '#errors';
import { decideCancel, decideSubmit, idempotentJobId, jobIdFromUuid, parseSubmission, resolveDeadline } from './submission.js';
import { thrownBy } from '../../../../test/support/thrown.js';

const now = new Date('2025-06-01T12:00:00.000Z');
const spec = { work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1h' } };

const validationError = (fn: () => unknown): ValidationError => thrownBy(fn, ValidationError);

describe('job ids', () => {
  it('are valid contracts JobIds', () => {
    const id = jobIdFromUuid('0197a0e2-1111-7abc-8def-0123456789ab');
    expect(id).toBe('job_0197a0e211117abc8def0123456789ab');
    expect(ID_PATTERN.test(id)).toBe(true);
    expect(JobId.safeParse(idempotentJobId('team-a', 'k1')).success).toBe(true);
  });

  it('from an idempotency key: the same (team, key) gives the same job, another team or key another job', () => {
    expect(idempotentJobId('team-a', 'k1')).toBe(idempotentJobId('team-a', 'k1'));
    expect(idempotentJobId('team-a', 'k1')).not.toBe(idempotentJobId('team-b', 'k1'));
    expect(idempotentJobId('team-a', 'k1')).not.toBe(idempotentJobId('team-a', 'k2'));
    // No ambiguity from concatenation.
    expect(idempotentJobId('team-a', 'bc')).not.toBe(idempotentJobId('team-ab', 'c'));
  });
});

describe('parseSubmission', () => {
  it('accepts a bare spec and fills defaults, durations in ms', () => {
    const s = parseSubmission(spec, undefined, now);
    expect(s.spec.request).toEqual({ gpus: 1, timeLimitMs: 3_600_000, network: false });
    expect(s.idempotencyKey).toBeUndefined();
  });

  it('accepts the SubmitJob envelope with its idempotency key', () => {
    const s = parseSubmission({ spec, idempotencyKey: 'abc' }, undefined, now);
    expect(s.idempotencyKey).toBe('abc');
  });

  it('takes the estimate the envelope names, and names a malformed one', () => {
    expect(parseSubmission({ spec, estimateId: 'est_0197a0e2' }, undefined, now).estimateId).toBe('est_0197a0e2');
    expect(parseSubmission(spec, undefined, now).estimateId).toBeUndefined();
    expect(validationError(() => parseSubmission({ spec, estimateId: 'not an id' }, undefined, now)).issues).toEqual([expect.objectContaining({ path: 'estimateId' })]);
  });

  it('takes the key from the header, and refuses a body key that differs', () => {
    expect(parseSubmission(spec, 'hdr', now).idempotencyKey).toBe('hdr');
    expect(parseSubmission({ spec, idempotencyKey: 'same' }, 'same', now).idempotencyKey).toBe('same');
    const err = validationError(() => parseSubmission({ spec, idempotencyKey: 'a' }, 'b', now));
    expect(err.issues).toEqual([expect.objectContaining({ path: 'idempotencyKey', fix: expect.any(String) })]);
  });

  it('names every bad field with its fix (bare spec: paths from the spec root)', () => {
    const err = validationError(() => parseSubmission({ work: { kind: 'script', script: { inline: 'x' } }, request: { gpus: 0, timeLimit: 'soon', gpu: 1 } }, 'bad key with spaces', now));
    const paths = err.issues.map((i) => i.path).sort();
    expect(paths).toEqual(['Idempotency-Key', 'request.gpu', 'request.gpus', 'request.timeLimit']);
    for (const issue of err.issues) expect(issue.fix).toEqual(expect.any(String));
    expect(err.message).toContain('request.gpus');
  });

  it('envelope form: paths start at `spec.`', () => {
    const err = validationError(() => parseSubmission({ spec: { ...spec, request: { gpus: 'two', timeLimit: '1h' } } }, undefined, now));
    expect(err.issues.map((i) => i.path)).toEqual(['spec.request.gpus']);
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, 'job', [spec], 7]) {
      expect(validationError(() => parseSubmission(body, undefined, now)).issues[0]).toMatchObject({ path: '' });
    }
  });

  it('resolves the deadline, and refuses one that has passed', () => {
    expect(parseSubmission({ ...spec, request: { ...spec.request, deadline: '+6h' } }, undefined, now).deadlineAt).toBe('2025-06-01T18:00:00.000Z');
    expect(parseSubmission({ ...spec, request: { ...spec.request, deadline: '2025-06-02T02:00:00+02:00' } }, undefined, now).deadlineAt).toBe('2025-06-02T00:00:00.000Z');
    const err = validationError(() => parseSubmission({ spec: { ...spec, request: { ...spec.request, deadline: '2025-06-01T11:00:00Z' } } }, undefined, now));
    expect(err.issues).toEqual([expect.objectContaining({ path: 'spec.request.deadline', message: expect.stringContaining('passed') })]);
    expect(resolveDeadline('+0s', now).ok).toBe(false);
  });
});

describe('decideSubmit', () => {
  const submission = parseSubmission(spec, 'k1', now);

  it('given no earlier submit: appends JobSubmitted with the team, spec, key and submitter', () => {
    const d = decideSubmit({ jobId: 'job_1', team: 'team-a', submission, submittedBy: 'key-1', now });
    expect(d).toEqual({
      kind: 'append',
      event: { jobId: 'job_1', team: 'team-a', spec: submission.spec, submittedAt: now.toISOString(), idempotencyKey: 'k1', submittedBy: 'key-1' },
    });
  });

  it('given an earlier submit of the same spec: duplicate, the original returned', () => {
    const original = { jobId: 'job_1', team: 'team-a', spec: submission.spec, submittedAt: '2025-06-01T11:00:00.000Z' };
    // Key order does not matter.
    const reordered = { ...submission, spec: { outputs: submission.spec.outputs, request: submission.spec.request, data: submission.spec.data, work: submission.spec.work } };
    expect(decideSubmit({ jobId: 'job_1', team: 'team-a', submission: reordered, now, existing: original })).toEqual({ kind: 'duplicate', original });
  });

  it('given an earlier submit of another spec under the key: conflict', () => {
    const original = { jobId: 'job_1', team: 'team-a', spec: { ...submission.spec, request: { ...submission.spec.request, gpus: 2 } }, submittedAt: now.toISOString() };
    expect(decideSubmit({ jobId: 'job_1', team: 'team-a', submission, now, existing: original }).kind).toBe('conflict');
  });
});

describe('decideCancel', () => {
  const submitted = { jobId: 'job_1', team: 'team-a', spec: parseSubmission(spec, undefined, now).spec, submittedAt: now.toISOString() };

  it('given a live job: appends JobCancelRequested with reason and requester', () => {
    expect(decideCancel({ submitted, alreadyRequested: false, state: 'running', reason: 'oops', requestedBy: 'key-1', now })).toEqual({
      kind: 'append',
      event: { jobId: 'job_1', team: 'team-a', reason: 'oops', requestedBy: 'key-1', requestedAt: now.toISOString() },
    });
    // A job the read model has not seen yet is live.
    expect(decideCancel({ submitted, alreadyRequested: false, state: undefined, now }).kind).toBe('append');
  });

  it('given a cancel already requested: nothing new, still cancelRequested', () => {
    expect(decideCancel({ submitted, alreadyRequested: true, state: 'running', now })).toEqual({ kind: 'noop', cancelRequested: true });
  });

  it.each(['completed', 'failed', 'cancelled', 'rejected'] as const)('given a job already %s: nothing changes, cancelRequested false', (state) => {
    expect(decideCancel({ submitted, alreadyRequested: false, state, now })).toEqual({ kind: 'noop', cancelRequested: false });
  });
});

describe('parseSubmission deadline phrases', () => {
  const now = new Date('2026-10-24T20:00:00Z'); // Saturday 22:00 in Berlin, the night summer time ends
  const base = { work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1h' } };
  it('resolves a phrase in the team zone and echoes it as an instant', () => {
    expect(parseSubmission({ ...base, request: { ...base.request, deadline: 'tomorrow 09:00' } }, undefined, now, 'Europe/Berlin').deadlineAt).toBe('2026-10-25T08:00:00.000Z');
    expect(parseSubmission({ ...base, request: { ...base.request, deadline: 'tomorrow 09:00' } }, undefined, now).deadlineAt).toBe('2026-10-25T09:00:00.000Z');
    expect(parseSubmission({ spec: { ...base, request: { ...base.request, deadline: 'in 90m' } } }, undefined, now).deadlineAt).toBe('2026-10-24T21:30:00.000Z');
  });
  it('names spec.request.deadline for a passed phrase and request.deadline for an unknown one', () => {
    const passed = validationError(() => parseSubmission({ spec: { ...base, request: { ...base.request, deadline: 'today 08:00' } } }, undefined, now));
    expect(passed.issues).toEqual([expect.objectContaining({ path: 'spec.request.deadline', message: expect.stringContaining('has already passed') })]);
    const unknown = validationError(() => parseSubmission({ ...base, request: { ...base.request, deadline: 'whenever' } }, undefined, now));
    expect(unknown.issues).toEqual([expect.objectContaining({ path: 'request.deadline', fix: expect.stringContaining('tomorrow 09:00') })]);
  });
});
