import { describe, expect, it } from '@jest/globals';
import { replayJobEnd } from './job-replay.js';

const T = '2025-06-01T10:00:00.000Z';
const submitted = { eventId: 'e1', type: 'JobSubmitted', data: { jobId: 'j', team: 't', spec: { request: { gpus: 1, timeLimitMs: 1 } }, submittedAt: T } };
const withdrawn = { eventId: 'e2', type: 'JobWithdrawn', data: { jobId: 'j', team: 't', outcome: 'deadline', message: 'late', withdrawnAt: T } };
const ended = (outcome: string) => ({ eventId: 'e3', type: 'JobEnded', data: { jobId: 'j', team: 't', outcome, reason: 'late', attempts: 0, billed: { billableMs: 0, totals: [] }, outputs: null, endedAt: T } });

describe('replayJobEnd', () => {
  it('finds a recorded JobEnded the same as the facts give it, whatever its endedAt', () => {
    expect(replayJobEnd([submitted, withdrawn, ended('deadline')], [])).toEqual({ status: 'same', changes: [], eventId: 'e3', outcome: 'deadline' });
  });
  it('names the fields of a JobEnded the facts do not give', () => {
    expect(replayJobEnd([submitted, withdrawn, ended('cancelled')], [])).toMatchObject({ status: 'changed', changes: [{ field: 'outcome', recorded: 'cancelled', derived: 'deadline' }] });
  });
  it('tells a job still open, one over without its JobEnded yet, and a JobEnded the facts do not support', () => {
    expect(replayJobEnd([submitted], [])).toEqual({ status: 'open', changes: [] });
    expect(replayJobEnd([submitted, withdrawn], [])).toMatchObject({ status: 'not_recorded', outcome: 'deadline' });
    expect(replayJobEnd([submitted, ended('deadline')], [])).toMatchObject({ status: 'not_derivable' });
  });
});
