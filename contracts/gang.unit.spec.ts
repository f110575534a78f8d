import { describe, expect, it } from '@jest/globals';
import { JobPlaced } from './events/job.js';
import { gangGpus, gangOutcome, gangPartOf, gangParts, stopsGang } from './gang.js';

const base = { jobId: 'job-1', attemptId: 'att-1', attempt: 1, gpuModel: 'sim', placedAt: '2026-11-30T10:00:00.000Z' };
const gang = { ...base, nodeId: 'a', gpuIndices: [0, 1], nodes: [{ nodeId: 'a', gpuIndices: [0, 1] }, { nodeId: 'b', gpuIndices: [0, 1] }, { nodeId: 'c', gpuIndices: [0] }] };

describe('JobPlaced with nodes', () => {
  it('accepts a gang whose first node is the top-level node', () => {
    expect(JobPlaced.safeParse(gang).success).toBe(true);
  });

  it('refuses nodes[0] that is not nodeId/gpuIndices, naming the path', () => {
    const r = JobPlaced.safeParse({ ...gang, nodeId: 'b' });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.path).toEqual(['nodes', 0]);
  });

  it('refuses a node listed twice', () => {
    const r = JobPlaced.safeParse({ ...gang, nodes: [...gang.nodes, { nodeId: 'b', gpuIndices: [2] }] });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.message).join()).toMatch(/twice/);
  });

  it('refuses a one-node list (a gang has at least two nodes)', () => {
    expect(JobPlaced.safeParse({ ...gang, nodes: [gang.nodes[0]] }).success).toBe(false);
  });
});

describe('gang parts', () => {
  it('ranks the nodes in order and counts every GPU', () => {
    expect(gangParts(gang).map((p) => [p.nodeId, p.rank])).toEqual([['a', 0], ['b', 1], ['c', 2]]);
    expect(gangGpus(gang)).toBe(5);
    expect(gangPartOf(gang, 'c')).toEqual({ nodeId: 'c', gpuIndices: [0], rank: 2 });
    expect(gangPartOf(gang, 'd')).toBeUndefined();
  });

  it('treats a one-node placement as a gang of one', () => {
    const one = { ...base, nodeId: 'a', gpuIndices: [3] };
    expect(gangParts(one)).toEqual([{ nodeId: 'a', gpuIndices: [3], rank: 0 }]);
    expect(gangGpus(one)).toBe(1);
  });
});

describe('stopsGang', () => {
  it('stops the others when rank 0 ends, whatever its outcome', () => {
    expect(stopsGang({ nodeId: 'a', outcome: 'completed' }, 0)).toBe(true);
  });
  it('stops the others when any part fails, not when a later rank completes', () => {
    expect(stopsGang({ nodeId: 'b', outcome: 'failed' }, 1)).toBe(true);
    expect(stopsGang({ nodeId: 'b', outcome: 'completed' }, 1)).toBe(false);
  });
  it('never chains on a part that was itself stopped for a peer', () => {
    expect(stopsGang({ nodeId: 'b', outcome: 'cancelled', peerEnded: 'a' }, 1)).toBe(false);
  });
});

describe('gangOutcome', () => {
  const parts = gangParts(gang);
  it('is undefined until every part ended', () => {
    expect(gangOutcome(parts, [{ nodeId: 'a', outcome: 'completed' }])).toBeUndefined();
  });
  it('is completed when rank 0 completed and the rest were stopped for it', () => {
    expect(
      gangOutcome(parts, [
        { nodeId: 'b', outcome: 'cancelled', peerEnded: 'a' },
        { nodeId: 'a', outcome: 'completed' },
        { nodeId: 'c', outcome: 'completed' },
      ]),
    ).toEqual({ outcome: 'completed', decidedBy: 'a' });
  });
  it('takes the failing part, not the parts stopped because of it', () => {
    expect(
      gangOutcome(parts, [
        { nodeId: 'a', outcome: 'cancelled', peerEnded: 'c' },
        { nodeId: 'b', outcome: 'cancelled', peerEnded: 'c' },
        { nodeId: 'c', outcome: 'failed' },
      ]),
    ).toEqual({ outcome: 'failed', decidedBy: 'c' });
  });
  it('is node_lost when a node was lost, so the job is requeued', () => {
    expect(
      gangOutcome(parts, [
        { nodeId: 'a', outcome: 'cancelled', peerEnded: 'b' },
        { nodeId: 'b', outcome: 'node_lost' },
        { nodeId: 'c', outcome: 'cancelled', peerEnded: 'b' },
      ])?.outcome,
    ).toBe('node_lost');
  });
  it('is cancelled when every part was cancelled on request', () => {
    expect(gangOutcome(parts, parts.map((p) => ({ nodeId: p.nodeId, outcome: 'cancelled' as const })))?.outcome).toBe('cancelled');
  });
});
