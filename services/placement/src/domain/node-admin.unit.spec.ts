import type { EventData, NodeHeartbeat } from '#contracts';
import { decide } from './decide.js';
import { evolve, observeHeartbeat, type PlacementEvent } from './evolve.js';
import { estimate } from './estimate.js';
import { at, ev, given, T0, type History, type Unpositioned } from './fixtures.js';
import { forecast } from './forecast.js';
import { decideNodeAdmin, detectDrained, isSchedulable, nodeStatus, nodeStatuses, type NodeAdminCommand, type NodeAdminDecision } from './node-admin.js';
import { detectLostNodes } from './node-loss.js';
import { plan } from './plan.js';

const now = new Date(T0 + 10_000);
const hb = (nodeId: string, ms: number): NodeHeartbeat => ({ nodeId, freeGpuIndices: [], runningAttempts: [], sequence: ms, sentAt: at(ms) });

/** Applies the operator's command as placement does: decide it, then fold the event it records. */
function act(h: History, command: NodeAdminCommand, when = now): NodeAdminDecision | undefined {
  const out = decideNodeAdmin(h.state, command, when);
  if (!out.ok) throw new Error(out.message);
  if (out.event) h.apply(out.event as Unpositioned);
  return out.event;
}
const cordon = (nodeId: string, reason = 'bad fan'): NodeAdminCommand => ({ action: 'cordon', nodeId, by: 'operator ops', reason });
const drain = (nodeId: string, reason = 'kernel update'): NodeAdminCommand => ({ action: 'drain', nodeId, by: 'operator ops', reason });
const uncordon = (nodeId: string): NodeAdminCommand => ({ action: 'uncordon', nodeId, by: 'operator ops', reason: 'fixed' });
const placedOn = (h: History) => decide(h.state, now).filter((d) => d.type === 'JobPlaced').map((d) => [d.data.jobId, (d.data as EventData<'JobPlaced'>).nodeId]);

/** Two 2-GPU nodes, both alive at T0. */
function twoNodes(): History {
  const h = given(ev.node('a', 2), ev.node('b', 2));
  observeHeartbeat(h.state, hb('a', 0), T0);
  observeHeartbeat(h.state, hb('b', 0), T0);
  return h;
}

describe('cordon: nothing new is placed on the node', () => {
  it('given node a cordoned, places every job on b and none on a, even when a is first in order', () => {
    const h = twoNodes();
    expect(act(h, cordon('a'))).toEqual({ type: 'NodeCordoned', data: { nodeId: 'a', by: 'operator ops', reason: 'bad fan', at: now.toISOString(), runningAttempts: [] } });
    h.apply(ev.submitted('j1', 1), ev.staged('j1'), ev.submitted('j2', 1), ev.staged('j2'), ev.submitted('j3', 1), ev.staged('j3'));
    expect(placedOn(h)).toEqual([
      ['j1', 'b'],
      ['j2', 'b'],
    ]);
    expect(isSchedulable(h.state.nodes.get('a')!)).toBe(false);
  });

  it('does not reject a job only the cordoned node could hold: it waits', () => {
    const h = given(ev.node('a', 4), ev.node('b', 2));
    act(h, cordon('a'));
    h.apply(ev.submitted('big', 4), ev.staged('big'));
    expect(decide(h.state, now)).toEqual([]);
    expect(plan(h.state, now).jobs.map((j) => [j.job.jobId, j.reservation])).toEqual([['big', undefined]]);
  });

  it('reserves nothing on a cordoned node, and estimates and the forecast count its GPUs as unavailable', () => {
    const h = twoNodes();
    h.apply(ev.submitted('j1', 2), ev.staged('j1'), ev.placed('j1', 1, 'b', [0, 1]), ev.held('j1', 1, 'b', [0, 1]));
    act(h, cordon('a'));
    // a is idle but cordoned: the next 2 GPUs are b's, when j1 has run to its time limit (1 h).
    const e = estimate(h.state, { team: 'team-a', gpus: 2, timeLimitMs: 60_000 }, now);
    expect(e.runnable && e.expectedStart).toBeGreaterThanOrEqual(T0 + 3_600_000);
    h.apply(ev.submitted('j2', 2), ev.staged('j2'));
    expect(plan(h.state, now, { reservationAfterMs: 0 }).jobs.map((j) => [j.job.jobId, j.reservation?.parts.map((p) => p.nodeId)])).toEqual([['j2', ['b']]]);
    const f = forecast(h.state, now, { hours: 1 });
    expect(f.hours[0]!.free).toEqual({ A100: 0 });
  });

  it('lets running attempts run on: their end and release are folded as always', () => {
    const h = twoNodes();
    h.apply(ev.submitted('j1', 2), ev.staged('j1'), ev.placed('j1', 1, 'a', [0, 1]), ev.held('j1', 1, 'a', [0, 1]));
    const cordoned = act(h, cordon('a'));
    expect(cordoned?.data).toMatchObject({ runningAttempts: [{ jobId: 'j1', attemptId: 'j1-a1' }] });
    h.apply(ev.finished('j1', 1, 'a'), ev.released('j1', 1, 'a', [0, 1]));
    expect(h.state.jobs.get('j1')!.phase).toBe('ended');
    expect(h.state.nodes.get('a')!.holds.size).toBe(0);
    expect(nodeStatus(h.state, h.state.nodes.get('a')!, T0 + 1_000).state).toBe('cordoned');
  });

  it('records nothing when asked again, and outlives a new registration of the node', () => {
    const h = twoNodes();
    act(h, cordon('a'));
    expect(decideNodeAdmin(h.state, cordon('a', 'again'), now)).toEqual({ ok: true });
    h.apply(ev.node('a', 2));
    expect(h.state.nodes.get('a')!.admin).toMatchObject({ kind: 'cordoned', reason: 'bad fan' });
  });

  it('an echo of an older cordon after the uncordon changes nothing (events applied twice)', () => {
    const h = twoNodes(); // positions 1, 2
    const c = act(h, cordon('a'))!; // position 3
    act(h, uncordon('a')); // position 4
    // The scheduler applies its own append at once and sees it again on the bus, at the same position.
    evolve(h.state, { ...c, position: 3n } as PlacementEvent);
    expect(h.state.nodes.get('a')!.admin).toBeUndefined();
  });
});

describe('drain', () => {
  it('given a running attempt, records the drain with it; the node is drained when the attempt has released its GPUs', () => {
    const h = twoNodes();
    h.apply(ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'b', [0]), ev.held('j1', 1, 'b', [0]));
    expect(act(h, drain('b'))).toEqual({
      type: 'NodeDrainRequested',
      data: { nodeId: 'b', by: 'operator ops', reason: 'kernel update', at: now.toISOString(), runningAttempts: [{ jobId: 'j1', attemptId: 'j1-a1' }] },
    });
    h.apply(ev.submitted('j2', 1), ev.staged('j2'));
    expect(placedOn(h)).toEqual([['j2', 'a']]);
    expect(detectDrained(h.state, now)).toEqual([]);
    expect(nodeStatus(h.state, h.state.nodes.get('b')!, T0 + 1_000)).toMatchObject({ state: 'draining', runningAttempts: 1, gpusHeld: 1 });
    h.apply(ev.finished('j1', 1, 'b'));
    expect(detectDrained(h.state, now)).toEqual([]); // finished, but its GPUs are still held (outputs, release)
    h.apply(ev.released('j1', 1, 'b', [0]));
    const later = new Date(T0 + 20_000);
    const drained = detectDrained(h.state, later);
    expect(drained).toEqual([{ type: 'NodeDrained', data: { nodeId: 'b', requestedAt: now.toISOString(), at: later.toISOString(), afterLoss: false } }]);
    h.apply(...(drained as Unpositioned[]));
    expect(detectDrained(h.state, later)).toEqual([]);
    expect(nodeStatus(h.state, h.state.nodes.get('b')!, T0 + 1_000)).toMatchObject({ state: 'drained', runningAttempts: 0, admin: { state: 'drained', drainedAt: later.toISOString(), reason: 'kernel update' } });
  });

  it('an idle node drains at once; a cordon turns into a drain, a cordon of a draining node changes nothing', () => {
    const h = twoNodes();
    act(h, cordon('a'));
    expect(act(h, drain('a'))?.type).toBe('NodeDrainRequested');
    expect(decideNodeAdmin(h.state, cordon('a'), now)).toEqual({ ok: true });
    expect(decideNodeAdmin(h.state, drain('a'), now)).toEqual({ ok: true });
    expect(detectDrained(h.state, now).map((d) => d.data.nodeId)).toEqual(['a']);
  });

  it('the node-loss rule is unchanged: a draining node that goes silent is lost, its attempt ends node_lost and is requeued elsewhere; the drain completes after the loss', () => {
    const h = twoNodes();
    h.apply(ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'b', [0]), ev.held('j1', 1, 'b', [0]));
    act(h, drain('b'));
    observeHeartbeat(h.state, hb('a', 9_000), T0 + 9_000);
    const lost = detectLostNodes(h.state, now);
    expect(lost.map((d) => [d.data.nodeId, d.data.affectedAttempts])).toEqual([['b', [{ jobId: 'j1', attemptId: 'j1-a1' }]]]);
    h.apply(...lost.map((d) => ({ type: d.type, data: d.data }) as Unpositioned));
    expect(decide(h.state, now).map((d) => [d.type, d.type === 'JobPlaced' ? d.data.nodeId : d.data.jobId])).toEqual([
      ['JobRequeued', 'j1'],
      ['JobPlaced', 'a'],
    ]);
    const drained = detectDrained(h.state, now);
    expect(drained.map((d) => d.data)).toEqual([{ nodeId: 'b', requestedAt: now.toISOString(), at: now.toISOString(), afterLoss: true }]);
    h.apply(...(drained as Unpositioned[]));
    expect(nodeStatus(h.state, h.state.nodes.get('b')!, now.getTime()).state).toBe('lost');
  });

  it('a drained node that then stops is offline, not lost', () => {
    const h = twoNodes();
    act(h, drain('b'));
    h.apply(...(detectDrained(h.state, now) as Unpositioned[]));
    h.apply(...detectLostNodes(h.state, new Date(T0 + 60_000)).filter((d) => d.data.nodeId === 'b').map((d) => ({ type: d.type, data: d.data }) as Unpositioned));
    expect(nodeStatus(h.state, h.state.nodes.get('b')!, T0 + 60_000).state).toBe('offline');
  });
});

describe('uncordon', () => {
  it('brings a drained node back: jobs land on it again', () => {
    const h = twoNodes();
    act(h, drain('a'));
    act(h, cordon('b'));
    h.apply(ev.submitted('j1', 1), ev.staged('j1'));
    expect(placedOn(h)).toEqual([]);
    expect(act(h, uncordon('a'))).toEqual({ type: 'NodeUncordoned', data: { nodeId: 'a', by: 'operator ops', reason: 'fixed', at: now.toISOString(), previous: 'draining' } });
    expect(placedOn(h)).toEqual([['j1', 'a']]);
    expect(decideNodeAdmin(h.state, uncordon('a'), now)).toEqual({ ok: true });
  });
});

describe('refusals and the operator view', () => {
  it('refuses an unknown node id, naming the field and the fix', () => {
    const h = twoNodes();
    expect(decideNodeAdmin(h.state, cordon('nope'), now)).toEqual({
      ok: false,
      reason: 'unknown_node',
      message: 'no node nope is known to placement (known: a, b)',
      issue: { path: 'nodeId', message: 'node nope has never registered with placement', fix: 'check the id with `gpunet nodes list`' },
    });
    // A node placement knows only from a heartbeat never registered: still unknown.
    observeHeartbeat(h.state, hb('ghost', 0), T0);
    expect(decideNodeAdmin(h.state, drain('ghost'), now).ok).toBe(false);
  });

  it('lists every registered node with state, GPUs held, running attempts, heartbeat age, host', () => {
    const h = given({ ...ev.node('a', 2), data: { ...(ev.node('a', 2).data as EventData<'NodeRegistered'>), hostname: 'gpu-host-1' } } as Unpositioned, ev.node('b', 2));
    observeHeartbeat(h.state, hb('a', 0), T0);
    h.apply(ev.submitted('j1', 1), ev.staged('j1'), ev.placed('j1', 1, 'a', [1]));
    act(h, cordon('b'));
    expect(nodeStatuses(h.state, T0 + 2_500)).toEqual([
      { nodeId: 'a', state: 'ready', hostname: 'gpu-host-1', gpus: 2, gpusHeld: 1, gpuModels: ['A100'], runningAttempts: 1, lastHeartbeatAt: at(0), heartbeatAgeMs: 2_500, leaseMs: 5_000, registeredAt: at() },
      { nodeId: 'b', state: 'cordoned', gpus: 2, gpusHeld: 0, gpuModels: ['A100'], runningAttempts: 0, leaseMs: 5_000, registeredAt: at(), admin: { state: 'cordoned', by: 'operator ops', reason: 'bad fan', at: now.toISOString() } },
    ]);
    // Silent past its lease but not yet declared lost: offline.
    expect(nodeStatus(h.state, h.state.nodes.get('a')!, T0 + 6_000).state).toBe('offline');
  });
});
