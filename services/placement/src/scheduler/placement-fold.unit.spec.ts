/**
 * Placement's snapshot encoding (decision 0037): a fold cut anywhere, encoded, decoded and folded
 * on equals the fold of everything — budgets, quotas, cordons, gangs of attempts, lost nodes and
 * the bookkeeping of placement's own streams included; what this process observed rather than
 * folded (heartbeats) is not in it; a snapshot of another half-life or not a snapshot is refused.
 */
import { describe, expect, it } from '@jest/globals';
import { initialState, observeHeartbeat, type PlacementEvent } from '../domain/index.js';
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

  it('forgets each job once it has ended, with its bookkeeping, and counts it (decision 0043)', () => {
    expect([...all.state.jobs.keys()].sort()).toEqual(['j2', 'j4']);
    expect(all.state.forgottenJobs).toBe(2);
    for (const gone of ['j1', 'j3']) {
      expect(all.revisions.has(gone)).toBe(false);
      expect(all.correlations.has(gone)).toBe(false);
    }
    // j1's GPUs were released before it was forgotten; nothing of it is held.
    expect(all.state.nodes.get('n1')?.holds.size).toBe(0);
  });
});

describe('forgetting a job placement ended itself (decision 0043)', () => {
  let position = 0n;
  const recordedEvent = (e: Unpositioned, stream: string, revision: bigint) => ({
    ...e,
    position: ++position,
    streamId: stream,
    revision,
    metadata: { correlationId: 'c-j5', causationId: 'x', producer: 'test', occurredAt: at(), jobId: 'j5' },
  });
  const others = new Map<string, bigint>();
  const other = (e: Unpositioned) => {
    const stream = `other-${e.type}`;
    const revision = (others.get(stream) ?? -1n) + 1n;
    others.set(stream, revision);
    return recordedEvent(e, stream, revision);
  };
  const lost = { type: 'NodeLost', data: { nodeId: 'n1', reason: 'heartbeat_timeout', lastSeenAt: at(5), detectedAt: at(10), affectedAttempts: [{ jobId: 'j5', attemptId: 'j5-a1' }] } } as Unpositioned;

  it('keeps it until the bus brings back its own decisions: the echo of its JobPlaced finds the job and holds nothing', () => {
    const fold = new PlacementFold(initialState(), now);
    for (const e of [ev.node('n1', 1), ev.submitted('j5', 1), ev.staged('j5')]) fold.apply(other(e));
    // Placed by this process (applied as written), then cancelled, its node lost, and withdrawn by this process.
    const placed = recordedEvent(ev.placed('j5', 1, 'n1', [0]), 'placement-job-j5', 0n);
    fold.recorded(placed as PlacementEvent, 'j5', 0n);
    expect(fold.state.nodes.get('n1')?.holds.has('j5-a1')).toBe(true);
    fold.apply(other(ev.cancelRequested('j5')), 'bus');
    fold.apply(other(lost), 'bus');
    expect(fold.state.nodes.get('n1')?.holds.size).toBe(0);
    const withdrawn = recordedEvent(ev.withdrawn('j5'), 'placement-job-j5', 1n);
    fold.recorded(withdrawn as PlacementEvent, 'j5', 1n);
    expect(fold.state.jobs.get('j5')?.phase).toBe('ended');
    expect(fold.awaitingEcho).toBe(1);

    // The echoes arrive. Forgotten at the end, the JobPlaced echo would have held n1's GPU for good.
    expect(fold.apply(placed, 'bus')).toBe(false);
    expect(fold.state.jobs.has('j5')).toBe(true);
    expect(fold.state.nodes.get('n1')?.holds.size).toBe(0);
    expect(fold.state.holders.size).toBe(0);
    expect(fold.apply(withdrawn, 'bus')).toBe(false);
    expect(fold.state.jobs.has('j5')).toBe(false);
    expect(fold.awaitingEcho).toBe(0);
    expect(fold.state.forgottenJobs).toBe(1);
    expect(fold.revisions.has('j5')).toBe(false);
    expect(fold.correlations.has('j5')).toBe(false);
    // A late fact about it changes nothing and leaves nothing behind.
    fold.apply(other(ev.released('j5', 1, 'n1', [0])), 'bus');
    expect(fold.state.jobs.has('j5')).toBe(false);
    expect(fold.revisions.has('j5')).toBe(false);
    expect(fold.state.live.size).toBe(0);
  });

  it('keeps it too for what it read of its stream while running (a catch-up): the bus brings that again', () => {
    const fold = new PlacementFold(initialState(), now);
    for (const e of [ev.node('n1', 1), ev.submitted('j5', 1), ev.staged('j5'), ev.cancelRequested('j5')]) fold.apply(other(e));
    const withdrawn = recordedEvent(ev.withdrawn('j5'), 'placement-job-j5', 0n);
    fold.apply(withdrawn, 'read');
    expect(fold.state.jobs.get('j5')?.phase).toBe('ended');
    expect(fold.awaitingEcho).toBe(1);
    fold.apply(withdrawn, 'bus');
    expect(fold.state.jobs.has('j5')).toBe(false);
    expect(fold.awaitingEcho).toBe(0);
  });
});
