import { describe, expect, it } from '@jest/globals';
import type { JobPlaced } from '#contracts';
import { decide, evolve, needsOutputs, placedAttempt, placementOn, type AttemptCommand, type AttemptState } from './attempt.js';

const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const placed: JobPlaced = {
  jobId: 'job-1',
  attemptId: 'job-1-a1',
  attempt: 1,
  nodeId: 'a',
  gpuIndices: [0, 1],
  gpuModel: 'A100',
  placedAt: T(0),
  nodes: [
    { nodeId: 'a', gpuIndices: [0, 1] },
    { nodeId: 'b', gpuIndices: [2, 3] },
  ],
};
const run = (state: AttemptState, ...commands: AttemptCommand[]) => commands.reduce((s, c) => decide(s, c).reduce(evolve, s), state);

describe('a gang part on this node', () => {
  it('takes this node\'s GPUs and rank, and nothing for a node outside the gang', () => {
    expect(placementOn(placed, 'b')).toEqual({ jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'b', gpuIndices: [2, 3], gpuModel: 'A100', attempt: 1, rank: 1, gangNodes: ['a', 'b'] });
    expect(placementOn(placed, 'c')).toBeUndefined();
    expect(placementOn({ ...placed, nodes: undefined }, 'a')).toEqual({ jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'a', gpuIndices: [0, 1], gpuModel: 'A100', attempt: 1 });
  });

  it('records peerEnded when stopped for a peer while running, and only rank 0 hands over outputs', () => {
    const b = run(placedAttempt(placementOn(placed, 'b')!), { type: 'BeginStaging' }, { type: 'Hold', at: T(1) }, { type: 'Start', at: T(2) }, { type: 'Stop', outcome: 'cancelled', reason: 'stopped: rank 0 on a ended', at: T(3), peerEnded: 'a' });
    const [fact] = decide(b, { type: 'Finish', outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', at: T(4) });
    expect(fact).toMatchObject({ type: 'JobFinished', data: { nodeId: 'b', outcome: 'cancelled', peerEnded: 'a', message: 'stopped: rank 0 on a ended' } });
    const ended = evolve(b, fact!);
    expect(needsOutputs(ended)).toBe(false);
    const a = run(placedAttempt(placementOn(placed, 'a')!), { type: 'BeginStaging' }, { type: 'Hold', at: T(1) }, { type: 'Start', at: T(2) }, { type: 'Finish', outcome: 'completed', exitCode: 0, signal: null, at: T(3) });
    expect(needsOutputs(a)).toBe(true);
    expect(a.finished).not.toHaveProperty('peerEnded');
  });

  it('records peerEnded at once when stopped before its process ran', () => {
    const b = placedAttempt(placementOn(placed, 'b')!);
    expect(decide(b, { type: 'Stop', outcome: 'cancelled', reason: 'stopped: node a of the gang was lost', at: T(1), peerEnded: 'a' })).toEqual([
      expect.objectContaining({ type: 'JobFinished', data: expect.objectContaining({ outcome: 'cancelled', peerEnded: 'a' }) }),
    ]);
  });
});
