import { describe, expect, it } from '@jest/globals';
import { IllegalStateError } from '#errors';
import { decide, evolve, expectedRevision, foldAttempt, placedAttempt, type AttemptCommand, type Placement, type RecordedAttemptEvent } from './attempt.js';

const placement: Placement = { jobId: 'job-1', attemptId: 'job-1-a2', nodeId: 'node-1', gpuIndices: [0], gpuModel: 'A100' };
const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const SHA = 'd'.repeat(64);
const apply = (...commands: AttemptCommand[]) => commands.reduce((s, c) => decide(s, c).reduce(evolve, s), placedAttempt(placement));
const running = [{ type: 'BeginStaging' }, { type: 'Hold', at: T(1) }, { type: 'Start', at: T(2) }] as AttemptCommand[];

describe('attempt: what ran, checkpoints and resuming', () => {
  it('records the work digest and the checkpoint the attempt resumed from in JobStarted', () => {
    const work = { kind: 'script' as const, digest: `sha256:${SHA}` };
    const state = apply({ type: 'BeginStaging' }, { type: 'Hold', at: T(1) });
    expect(decide(state, { type: 'Start', at: T(2), work, resumedFromCheckpoint: 3 })).toEqual([
      { type: 'JobStarted', data: { jobId: 'job-1', attemptId: 'job-1-a2', nodeId: 'node-1', startedAt: T(2), work, resumedFromCheckpoint: 3 } },
    ]);
  });

  it('records checkpoints in increasing sequence while running, counted in the stream revision', () => {
    const state = apply(...running, { type: 'Checkpoint', sequence: 4, sha256: SHA, size: 10, at: T(3) });
    expect(state.lastCheckpoint).toBe(4);
    expect(expectedRevision(state)).toBe(2n); // ComputeHeld, JobStarted, JobCheckpointed
    expect(() => decide(state, { type: 'Checkpoint', sequence: 4, sha256: SHA, size: 10, at: T(4) })).toThrow(IllegalStateError);
    const [event] = decide(state, { type: 'Checkpoint', sequence: 5, sha256: SHA, size: 12, at: T(4) });
    expect(event).toEqual({ type: 'JobCheckpointed', data: { jobId: 'job-1', attemptId: 'job-1-a2', nodeId: 'node-1', sequence: 5, sha256: SHA, size: 12, checkpointedAt: T(4) } });
  });

  it('refuses a checkpoint when the process is not running, and folds one read back from the store', () => {
    expect(() => decide(apply({ type: 'BeginStaging' }, { type: 'Hold', at: T(1) }), { type: 'Checkpoint', sequence: 1, sha256: SHA, size: 1, at: T(2) })).toThrow(IllegalStateError);
    const events: RecordedAttemptEvent[] = [
      { type: 'ComputeHeld', data: { ...placement, gpus: 1, heldAt: T(1) } },
      { type: 'JobStarted', data: { jobId: 'job-1', attemptId: 'job-1-a2', nodeId: 'node-1', startedAt: T(2) } },
      { type: 'JobCheckpointed', data: { jobId: 'job-1', attemptId: 'job-1-a2', nodeId: 'node-1', sequence: 2, sha256: SHA, size: 5, checkpointedAt: T(3) } },
    ];
    const folded = foldAttempt(placement, events);
    expect(folded.phase).toBe('running');
    expect(folded.recorded).toBe(3);
    expect(folded.lastCheckpoint).toBe(2);
  });
});
