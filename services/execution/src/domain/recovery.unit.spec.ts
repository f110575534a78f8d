import { describe, expect, it } from '@jest/globals';
import type { Placement, RecordedAttemptEvent } from './attempt.js';
import { attemptsToRecover } from './recovery.js';
import { attemptIdOfStream, attemptStreamId, nodeStreamId } from './streams.js';

const p = (n: number): Placement => ({ jobId: `job-${n}`, attemptId: `job-${n}-a1`, nodeId: 'n1', gpuIndices: [n], gpuModel: 'A100' });
const at = '2026-01-01T00:00:00.000Z';
const held = (x: Placement): RecordedAttemptEvent => ({ type: 'ComputeHeld', data: { ...x, gpus: x.gpuIndices.length, heldAt: at } });
const started = (x: Placement): RecordedAttemptEvent => ({ type: 'JobStarted', data: { jobId: x.jobId, attemptId: x.attemptId, nodeId: x.nodeId, startedAt: at } });
const finished = (x: Placement): RecordedAttemptEvent => ({
  type: 'JobFinished',
  data: { jobId: x.jobId, attemptId: x.attemptId, nodeId: x.nodeId, outcome: 'completed', exitCode: 0, signal: null, finishedAt: at },
});
const released = (x: Placement): RecordedAttemptEvent => ({
  type: 'ComputeReleased',
  data: { jobId: x.jobId, attemptId: x.attemptId, nodeId: x.nodeId, gpuIndices: x.gpuIndices, releasedAt: at },
});

describe('recovery: what a starting agent finds', () => {
  it('lists placed-never-held, held, running and finished-not-released attempts; skips released ones', () => {
    const [a, b, c, d, e] = [1, 2, 3, 4, 5].map(p);
    const found = attemptsToRecover({
      placements: [e, d, c, b, a, a],
      attempts: new Map([
        [b.attemptId, [held(b)]],
        [c.attemptId, [held(c), started(c)]],
        [d.attemptId, [held(d), started(d), finished(d)]],
        [e.attemptId, [held(e), started(e), finished(e), released(e)]],
      ]),
    });
    expect(found.map((s) => [s.placement.attemptId, s.phase])).toEqual([
      ['job-1-a1', 'placed'],
      ['job-2-a1', 'held'],
      ['job-3-a1', 'running'],
      ['job-4-a1', 'finished'],
    ]);
  });

  it('rebuilds the placement from ComputeHeld when the JobPlaced is not visible', () => {
    const x = p(7);
    const [state] = attemptsToRecover({ placements: [], attempts: new Map([[x.attemptId, [held(x), started(x)]]]) });
    expect(state.placement).toEqual(x);
    expect(state.phase).toBe('running');
  });
});

describe('stream names', () => {
  it('puts every stream of a node under its prefix and reads attempt ids back', () => {
    expect(attemptStreamId('n1', 'job-1-a1')).toBe('execution-n1-attempt-job-1-a1');
    expect(nodeStreamId('n1')).toBe('execution-n1-node');
    expect(attemptIdOfStream('n1', 'execution-n1-attempt-job-1-a1')).toBe('job-1-a1');
    expect(attemptIdOfStream('n1', 'execution-n1-node')).toBeUndefined();
    expect(attemptIdOfStream('n1', 'execution-n2-attempt-x')).toBeUndefined();
  });
});
