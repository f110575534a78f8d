import { GangNotFreeError, NodeSizes, PassCapacity } from './capacity.js';
import { ev, given } from './fixtures.js';
import { registeredNodes } from './state.js';

describe('PassCapacity', () => {
  const h = given(ev.node('n1', 4), ev.mixedNode('n2', ['T4', 'A100', 'A100']), ev.placed('x', 1, 'n1', [1]));

  it('fits the first node with enough free GPUs of one model, lowest indices first, skipping held ones', () => {
    const c = new PassCapacity(registeredNodes(h.state));
    expect(c.totalFree).toBe(6);
    expect(c.fit({ gpus: 3 })).toEqual({ nodeId: 'n1', gpuModel: 'A100', gpuIndices: [0, 2, 3] });
    expect(c.fit({ gpus: 1, gpuModel: 'T4' })).toEqual({ nodeId: 'n2', gpuModel: 'T4', gpuIndices: [0] });
    expect(c.fit({ gpus: 4 })).toBeUndefined();
  });

  it('hands out each GPU once per pass and refuses a gang that is not free', () => {
    const c = new PassCapacity(registeredNodes(h.state));
    const g = c.fit({ gpus: 3 })!;
    c.take(g);
    expect(() => c.take(g)).toThrow(GangNotFreeError);
    expect(() => c.take({ nodeId: 'n1', gpuModel: 'A100', gpuIndices: [1] })).toThrow(GangNotFreeError);
    expect(c.fit({ gpus: 2 })).toEqual({ nodeId: 'n2', gpuModel: 'A100', gpuIndices: [1, 2] });
    expect(c.totalFree).toBe(3);
    expect(c.snapshot()).toEqual([
      { nodeId: 'n2', gpuModel: 'T4', gpuIndices: [0] },
      { nodeId: 'n2', gpuModel: 'A100', gpuIndices: [1, 2] },
    ]);
  });
});

describe('NodeSizes', () => {
  it('knows the largest node per model and overall, busy GPUs included', () => {
    const sizes = new NodeSizes(registeredNodes(given(ev.node('n1', 4), ev.mixedNode('n2', ['T4', 'T4', 'A100']), ev.placed('x', 1, 'n1', [0, 1, 2, 3])).state));
    expect(sizes.largest(undefined)).toEqual({ nodeId: 'n1', gpuModel: 'A100', gpus: 4 });
    expect(sizes.largest('T4')).toEqual({ nodeId: 'n2', gpuModel: 'T4', gpus: 2 });
    expect(sizes.largest('H100')).toBeUndefined();
    expect(sizes.models).toEqual(['A100', 'T4']);
  });
});
