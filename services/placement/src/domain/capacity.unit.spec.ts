import fc from 'fast-check';
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

describe('PassCapacity: whole nodes for jobs larger than a node', () => {
  it('given 8-GPU nodes, when 16 GPUs are asked, then two whole free nodes of the model are taken, never a busy one', () => {
    const h = given(ev.node('a', 8), ev.node('b', 8, 'T4'), ev.node('c', 8), ev.node('d', 8), ev.placed('x', 1, 'c', [7]));
    const c = new PassCapacity(registeredNodes(h.state));
    const all = Array.from({ length: 8 }, (_, i) => i);
    expect(c.fitWhole({ gpus: 16, gpuModel: 'A100' })).toEqual([
      { nodeId: 'a', gpuModel: 'A100', gpuIndices: all },
      { nodeId: 'd', gpuModel: 'A100', gpuIndices: all },
    ]);
    expect(c.fitWhole({ gpus: 12, gpuModel: 'A100' })?.map((g) => [g.nodeId, g.gpuIndices.length])).toEqual([
      ['a', 8],
      ['d', 4],
    ]);
    expect(c.fitWhole({ gpus: 24, gpuModel: 'A100' })).toBeUndefined();
    expect(c.fitWhole({ gpus: 16, gpuModel: 'T4' })).toBeUndefined();
  });
});

describe('PassCapacity: gang properties', () => {
  const nodesArb = fc.array(fc.record({ gpus: fc.integer({ min: 1, max: 8 }), model: fc.constantFrom('A100', 'T4'), busy: fc.oneof(fc.constant<number[]>([]), fc.constant<number[]>([]), fc.array(fc.nat(7), { maxLength: 4 })) }), { minLength: 1, maxLength: 6 });
  const requestsArb = fc.array(fc.record({ gpus: fc.integer({ min: 1, max: 20 }), model: fc.constantFrom<string | undefined>('A100', 'T4', undefined) }), { minLength: 1, maxLength: 12 });

  it('never holds part of a job, nor one GPU twice, nor a busy GPU, whatever is asked', () => {
    let whole = 0;
    fc.assert(
      fc.property(nodesArb, requestsArb, (nodes, requests) => {
        const h = given(...nodes.map((n, i) => ev.node(`n${i}`, n.gpus, n.model)));
        nodes.forEach((n, i) => {
          const busy = [...new Set(n.busy.filter((b) => b < n.gpus))];
          if (busy.length > 0) h.apply(ev.placed(`x${i}`, 1, `n${i}`, busy, n.model));
        });
        const c = new PassCapacity(registeredNodes(h.state));
        const held = new Set<string>();
        const freeBefore = c.totalFree;
        let taken = 0;
        for (const r of requests) {
          const request = { gpus: r.gpus, ...(r.model !== undefined ? { gpuModel: r.model } : {}) };
          const single = c.fit(request);
          const gangs = single ? [single] : c.fitWhole(request);
          if (!gangs) continue;
          if (gangs.length > 1) whole++;
          // All of the request, of one model, on distinct free GPUs.
          expect(gangs.reduce((n, g) => n + g.gpuIndices.length, 0)).toBe(r.gpus);
          expect(new Set(gangs.map((g) => g.gpuModel)).size).toBe(1);
          if (r.model !== undefined) expect(gangs[0]!.gpuModel).toBe(r.model);
          c.takeAll(gangs);
          taken += r.gpus;
          for (const g of gangs) {
            const node = h.state.nodes.get(g.nodeId)!;
            for (const i of g.gpuIndices) {
              const key = `${g.nodeId}/${i}`;
              expect({ key, twice: held.has(key), busy: node.busy.has(i) }).toEqual({ key, twice: false, busy: false });
              held.add(key);
            }
          }
          // Taking the same gangs again is refused whole, and leaves the capacity as it was.
          const before = c.totalFree;
          expect(() => c.takeAll(gangs)).toThrow(GangNotFreeError);
          expect(c.totalFree).toBe(before);
        }
        expect(c.totalFree).toBe(freeBefore - taken);
      }),
      { numRuns: 300 },
    );
    // Guards the generator: multi-node gangs must actually be exercised.
    expect(whole).toBeGreaterThan(30);
  });
});
