import { describe, expect, it } from '@jest/globals';
import { heartbeat, nodeGpus, placementConflicts, registration } from './node.js';

describe('node GPUs', () => {
  it('declares slots 0..n-1 of the given model when nvidia-smi found nothing', () => {
    expect(nodeGpus([], 3, 'sim-A100')).toEqual({
      simulated: true,
      gpus: [
        { index: 0, model: 'sim-A100' },
        { index: 1, model: 'sim-A100' },
        { index: 2, model: 'sim-A100' },
      ],
    });
  });

  it('offers the GPUs nvidia-smi found instead of the declared ones', () => {
    const found = [
      { index: 1, uuid: 'GPU-1f0c9e3b-2b0e-2d0e-9f5c-8b2a7c1e4d22', name: 'NVIDIA H100', memoryMiB: 81559 },
      { index: 0, name: 'NVIDIA H100', memoryMiB: null },
    ];
    expect(nodeGpus(found, 8, 'sim')).toEqual({
      simulated: false,
      gpus: [
        { index: 0, model: 'NVIDIA H100' },
        { index: 1, uuid: 'GPU-1f0c9e3b-2b0e-2d0e-9f5c-8b2a7c1e4d22', model: 'NVIDIA H100', memoryMiB: 81559 },
      ],
    });
  });
});

describe('placement conflicts (defensive: placement should never cause them)', () => {
  const node = nodeGpus([], 2, 'A100');
  const holders = new Map([[1, { jobId: 'job-a', attemptId: 'job-a-1' }]]);

  it('accepts free GPUs of the right model', () => {
    expect(placementConflicts(node, holders, { attemptId: 'job-b-1', gpuIndices: [0], gpuModel: 'A100' })).toEqual([]);
  });

  it('refuses a GPU another attempt holds, naming the holder', () => {
    expect(placementConflicts(node, holders, { attemptId: 'job-b-1', gpuIndices: [0, 1], gpuModel: 'A100' })).toEqual([
      'GPU 1 is held by attempt job-a-1 of job job-a',
    ]);
  });

  it('does not count the same attempt as a conflict (a redelivered placement)', () => {
    expect(placementConflicts(node, holders, { attemptId: 'job-a-1', gpuIndices: [1], gpuModel: 'A100' })).toEqual([]);
  });

  it('refuses GPUs this node does not have, or of another model', () => {
    expect(placementConflicts(node, new Map(), { attemptId: 'x', gpuIndices: [5], gpuModel: 'A100' })).toEqual(['GPU 5 does not exist on this node (it has 0, 1)']);
    expect(placementConflicts(node, new Map(), { attemptId: 'x', gpuIndices: [0], gpuModel: 'H100' })).toEqual(['GPU 0 is a A100, not a H100']);
  });
});

describe('registration and heartbeats', () => {
  const node = nodeGpus([], 3, 'A100');

  it('registers every GPU with the heartbeat promise', () => {
    const reg = registration({ nodeId: 'n1', node, networkIsolation: false, heartbeatIntervalMs: 2000, at: '2026-01-01T00:00:00.000Z' });
    expect(reg).toMatchObject({ nodeId: 'n1', simulated: true, heartbeatIntervalMs: 2000, networkIsolation: false });
    expect(reg.gpus).toHaveLength(3);
  });

  it('reports free GPUs and each running attempt once, in a stable order', () => {
    const holders = new Map([
      [2, { jobId: 'job-b', attemptId: 'b-1' }],
      [0, { jobId: 'job-a', attemptId: 'a-1' }],
      [1, { jobId: 'job-b', attemptId: 'b-1' }],
    ]);
    const hb = heartbeat({ nodeId: 'n1', node, holders, sequence: 7, at: '2026-01-01T00:00:00.000Z' });
    expect(hb).toEqual({
      nodeId: 'n1',
      freeGpuIndices: [],
      runningAttempts: [
        { jobId: 'job-a', attemptId: 'a-1' },
        { jobId: 'job-b', attemptId: 'b-1' },
      ],
      sequence: 7,
      sentAt: '2026-01-01T00:00:00.000Z',
    });
    expect(heartbeat({ nodeId: 'n1', node, holders: new Map(), sequence: 0, at: 'x' }).freeGpuIndices).toEqual([0, 1, 2]);
  });
});
