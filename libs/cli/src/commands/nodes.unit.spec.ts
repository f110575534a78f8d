import type { NodeStatus } from '#contracts';
import { mergeNodeViews, nodesTable } from './nodes.js';

const KEY = `U${'A'.repeat(55)}`;
const placement: NodeStatus[] = [
  { nodeId: 'gpu-1', state: 'ready', hostname: 'host-1', gpus: 4, gpusHeld: 3, gpuModels: ['H100'], runningAttempts: 2, heartbeatAgeMs: 1_200, lastHeartbeatAt: '2026-01-01T00:00:00.000Z', leaseMs: 5_000 },
  { nodeId: 'gpu-2', state: 'draining', hostname: 'host-2', gpus: 4, gpusHeld: 1, gpuModels: ['H100'], runningAttempts: 1, admin: { state: 'draining', by: 'operator ops', reason: 'kernel update', at: '2026-01-01T00:00:00.000Z' } },
];

describe('gpunet nodes list', () => {
  it('joins placement\'s view with the enrollments: an enrolled node placement never heard of is offline', () => {
    const rows = mergeNodeViews(placement, [
      { nodeId: 'gpu-1', publicKey: KEY, enrolledBy: 'gpunet up', enrolledAt: '2026-01-01T00:00:00.000Z' },
      { nodeId: 'gpu-9', publicKey: KEY, enrolledBy: 'operator ops', enrolledAt: '2026-01-01T00:00:00.000Z' },
    ]);
    expect(rows.map((r) => [r.nodeId, r.state, r.enrolled])).toEqual([
      ['gpu-1', 'ready', true],
      ['gpu-2', 'draining', false],
      ['gpu-9', 'offline', true],
    ]);
  });

  it('lists nodes by id whatever order they registered in, numbers by value', () => {
    const seen = (ids: string[]) => mergeNodeViews(ids.map((nodeId) => ({ ...placement[0]!, nodeId })), []).map((r) => r.nodeId);
    expect(seen(['gpu-10', 'gpu-2', 'gpu-1'])).toEqual(['gpu-1', 'gpu-2', 'gpu-10']);
    expect(seen(['gpu-1', 'gpu-10', 'gpu-2'])).toEqual(['gpu-1', 'gpu-2', 'gpu-10']);
  });

  it('shows state, host, GPUs held/total, attempts, heartbeat age and the reason', () => {
    const text = nodesTable(mergeNodeViews(placement, []));
    const [header, one, two] = text.split('\n');
    expect(header).toMatch(/NODE\s+STATE\s+HOST\s+GPUS HELD\/TOTAL\s+MODELS\s+ATTEMPTS\s+HEARTBEAT\s+REASON/);
    expect(one).toMatch(/gpu-1\s+ready\s+host-1\s+3\/4\s+H100\s+2\s+1s ago/);
    expect(two).toMatch(/gpu-2\s+draining\s+host-2\s+1\/4\s+H100\s+1\s+-\s+kernel update \(operator ops, 2026-01-01T00:00:00.000Z\)/);
  });
});
