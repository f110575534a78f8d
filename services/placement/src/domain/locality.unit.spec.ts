import { decide } from './decide.js';
import { observeHeartbeat } from './evolve.js';
import { at, ev, given, T0 } from './fixtures.js';
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

describe('decide: placement prefers the node holding the job\'s data', () => {
  const withInputs = (jobId: string, team = 'team-a') => {
    const e = ev.submitted(jobId, 1, undefined, team) as { type: 'JobSubmitted'; data: { spec: { data: { inputs: unknown[] } } } };
    e.data.spec.data.inputs = [{ ...dataset, path: 'data', kind: 'file' }];
    return e as unknown as ReturnType<typeof ev.submitted>;
  };
  const heartbeat = (nodeId: string, cachedData: { team: string; sha256: string }[]) => ({ nodeId, freeGpuIndices: [0, 1], runningAttempts: [], cachedData, sequence: 1, sentAt: at() });

  it('places on the node whose cache holds the inputs, and says so in JobPlaced.reason', () => {
    const h = given(ev.node('n1', 2), ev.node('n2', 2), withInputs('j1'), ev.staged('j1'));
    observeHeartbeat(h.state, heartbeat('n2', [{ team: 'team-a', sha256: dataset.sha256 }]), T0);
    const [placed] = decide(h.state, new Date(T0 + 1000));
    expect(placed).toMatchObject({ type: 'JobPlaced', data: { nodeId: 'n2', reason: 'n2 already holds input dataset (1000000 bytes) in its cache: preferred so staging moves no data' } });
  });

  it('ignores another team\'s cached copy: first fit, no reason', () => {
    const h = given(ev.node('n1', 2), ev.node('n2', 2), withInputs('j1'), ev.staged('j1'));
    observeHeartbeat(h.state, heartbeat('n2', [{ team: 'team-b', sha256: dataset.sha256 }]), T0);
    const [placed] = decide(h.state, new Date(T0 + 1000));
    expect(placed).toMatchObject({ type: 'JobPlaced', data: { nodeId: 'n1' } });
    expect((placed!.data as { reason?: string }).reason).toBeUndefined();
  });
});
