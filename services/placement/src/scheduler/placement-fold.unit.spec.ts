/**
 * Placement's snapshot encoding (decision 0037): a fold cut anywhere, encoded, decoded and folded
 * on equals the fold of everything — budgets, quotas, cordons, gangs of attempts, lost nodes and
 * the bookkeeping of placement's own streams included; what this process observed rather than
 * folded (heartbeats) is not in it; a snapshot of another half-life or not a snapshot is refused.
 */
import { describe, expect, it } from '@jest/globals';
import { initialState, observeHeartbeat } from '../domain/index.js';
import { at, ev, T0, type Unpositioned } from '../domain/fixtures.js';
import { PlacementFold } from './placement-fold.js';

const now = () => T0 + 1_000;
const by = { keyId: 'key_billing', team: 'ops', role: 'billing' as const };

const history: Unpositioned[] = [
  ev.node('n1', 4),
  ev.node('n2', 2, 'H100'),
  { type: 'QuotaSet', data: { team: 'team-a', gpuModel: 'A100', gpus: 3, gpuHours: 100, borrow: true, by, setAt: at() } },
  { type: 'BudgetSet', data: { team: 'team-a', monthlyMicros: 50_000_000, currency: 'EUR', onExceed: 'hold', thresholdsPercent: [50, 100], setBy: { keyId: 'billing', team: 'ops' }, setAt: at() } },
  { type: 'BudgetReserved', data: { team: 'team-a', jobId: 'j1', worstCaseMicros: 1_000, currency: 'EUR', gpus: 1, timeLimitMs: 3_600_000, rateMicrosPerGpuHour: 1_000, priceListVersion: 1, held: false, reservedAt: at() } },
  ev.submitted('j1', 2),
  ev.staged('j1'),
  ev.placed('j1', 1, 'n1', [0, 1]),
  ev.held('j1', 1, 'n1', [0, 1]),
  ev.submitted('j2', 1, 'H100', 'team-b'),
  ev.staged('j2'),
  ev.placed('j2', 1, 'n2', [0], 'H100'),
  ev.held('j2', 1, 'n2', [0], 'H100'),
  { type: 'NodeLost', data: { nodeId: 'n2', reason: 'heartbeat_timeout', lastSeenAt: at(5), detectedAt: at(10), affectedAttempts: [{ jobId: 'j2', attemptId: 'j2-a1' }] } },
  ev.requeued('j2', 1),
  ev.finished('j1', 1, 'n1'),
  ev.released('j1', 1, 'n1', [0, 1]),
  { type: 'BudgetReleased', data: { team: 'team-a', jobId: 'j1', reservedMicros: 1_000, chargedMicros: 400, releasedAt: at(20) } },
  ev.submitted('j3', 1),
  ev.cancelRequested('j3'),
  ev.withdrawn('j3'),
  ev.submitted('j4', 4),
  ev.staged('j4'),
  { type: 'NodeCordoned', data: { nodeId: 'n1', by: 'operator ops', reason: 'fan', at: at(30), runningAttempts: [] } },
];

/** As recorded: placement's own decisions on its streams (revisions are kept for them), the rest on others', positions from 1. */
const recorded = (() => {
  const revisions = new Map<string, bigint>();
  return history.map((e, i) => {
    const jobId = (e.data as { jobId?: string }).jobId;
    const own = jobId !== undefined && ['JobPlaced', 'JobRequeued', 'JobWithdrawn'].includes(e.type);
    const streamId = own ? `placement-job-${jobId}` : `other-${e.type}-${jobId ?? ''}`;
    const revision = (revisions.get(streamId) ?? -1n) + 1n;
    revisions.set(streamId, revision);
    return { ...e, position: BigInt(i + 1), streamId, revision, metadata: { correlationId: `c-${jobId ?? 'none'}`, causationId: 'x', producer: 'test', occurredAt: at(), ...(jobId ? { jobId } : {}) } };
  });
})();

const foldOf = (from: number, to: number, into = new PlacementFold(initialState(), now)) => {
  for (const e of recorded.slice(from, to)) into.apply(e);
  return into;
};
const comparable = (f: PlacementFold) => ({ state: { ...f.state, registeredCache: undefined }, revisions: f.revisions, correlations: f.correlations, traces: f.traces });

describe('placement snapshot encoding', () => {
  const all = foldOf(0, recorded.length);

  it.each(Array.from({ length: recorded.length + 1 }, (_, k) => k))('cut after %i events: decode(encode) with the rest folded on equals the whole fold', (k) => {
    const head = foldOf(0, k);
    // Heartbeats are this process's observations: not in the snapshot.
    for (const nodeId of head.state.nodes.keys()) observeHeartbeat(head.state, { nodeId, sequence: 3, sentAt: at(1), cachedData: [{ team: 'team-a', sha256: 'a'.repeat(64) }] } as never, T0 + 500);
    const loaded = PlacementFold.decode(head.encode(), {}, now);
    for (const n of loaded.state.nodes.values()) {
      expect(n.lastHeartbeatAt).toBeUndefined();
      expect(n.cachedData).toBeUndefined();
    }
    foldOf(k, recorded.length, loaded);
    expect(comparable(loaded)).toEqual(comparable(all));
    expect(loaded.encode()).toBe(all.encode());
  });

  it('keeps budgets (Maps, bigint revisions), quotas, held time, usage, cordons, the lost node and the queue', () => {
    const loaded = PlacementFold.decode(all.encode(), {}, now);
    expect(loaded.state.budgets.get('team-a')?.spent).toBeInstanceOf(Map);
    expect(loaded.state.budgets).toEqual(all.state.budgets);
    expect(loaded.state.quotas).toEqual(all.state.quotas);
    expect(loaded.state.heldMs).toEqual(all.state.heldMs);
    expect(loaded.state.usage).toEqual(all.state.usage);
    expect(loaded.state.nodes.get('n1')?.admin?.kind).toBe('cordoned');
    expect(loaded.state.nodes.get('n2')?.registered).toBe(false);
    expect(loaded.state.queue.map((j) => j.jobId)).toEqual(['j2', 'j4']);
    expect(loaded.state.queue[0]).toBe(loaded.state.jobs.get('j2'));
    expect(loaded.revisions.get('j2')).toBe(1n);
    expect(loaded.state.position).toBe(BigInt(history.length));
  });

  it('refuses a snapshot of another fair-share half-life, and text that is not a snapshot', () => {
    expect(() => PlacementFold.decode(all.encode(), { usageHalfLifeMs: 1_000 }, now)).toThrow(/fair-share half-life of 604800000 ms, this placement uses 1000 ms \(GPUNET_FAIRSHARE_HALF_LIFE_MS\)/);
    expect(() => PlacementFold.decode('{"state":{}}', {}, now)).toThrow(/not a placement snapshot/);
  });
});
