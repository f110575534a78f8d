import { cacheKey, localityOf, localityReason, preferLocal } from './locality.js';

const dataset = { name: 'dataset', sha256: 'a'.repeat(64), size: 1_000_000 };
const code = { name: 'code', sha256: 'b'.repeat(64), size: 2_000 };
const nodes = [{ nodeId: 'node-1' }, { nodeId: 'node-2' }, { nodeId: 'node-3' }];

describe('data locality', () => {
  it('prefers the node holding more of the job\'s inputs, then more bytes, else keeps the order', () => {
    const caches = new Map([
      ['node-2', new Set([cacheKey('team-a', code.sha256)])],
      ['node-3', new Set([cacheKey('team-a', dataset.sha256)])],
    ]);
    expect(preferLocal(nodes, 'team-a', [dataset, code], (id) => caches.get(id)).map((n) => n.nodeId)).toEqual(['node-3', 'node-2', 'node-1']);
    caches.set('node-1', new Set([cacheKey('team-a', dataset.sha256), cacheKey('team-a', code.sha256)]));
    expect(preferLocal(nodes, 'team-a', [dataset, code], (id) => caches.get(id))[0]!.nodeId).toBe('node-1');
    expect(preferLocal(nodes, 'team-a', [], (id) => caches.get(id))).toEqual(nodes);
    expect(preferLocal(nodes, 'team-a', [dataset], () => undefined)).toEqual(nodes);
  });

  it('is drawn only by the job\'s own team\'s copies: another team\'s identical bytes change nothing', () => {
    const caches = new Map([['node-3', new Set([cacheKey('team-b', dataset.sha256)])]]);
    expect(preferLocal(nodes, 'team-a', [dataset], (id) => caches.get(id))).toEqual(nodes);
    expect(localityOf('team-a', [dataset], caches.get('node-3'))).toEqual({ held: [], bytes: 0 });
    expect(localityReason('node-3', 'team-a', [dataset], caches.get('node-3'))).toBeUndefined();
  });

  it('names the inputs a node holds in the placement reason', () => {
    const cached = new Set([cacheKey('team-a', dataset.sha256), cacheKey('team-a', code.sha256)]);
    expect(localityReason('node-2', 'team-a', [dataset, code], cached)).toBe(
      'node-2 already holds inputs dataset, code (1002000 bytes) in its cache: preferred so staging moves no data',
    );
  });
});
