/**
 * The invariant placement exists for: a GPU is never held by two attempts. Random histories of
 * submissions, staging, cancels, node (re)registrations and agents holding, finishing and
 * releasing in any order across attempts, with redelivered events mixed in; after every event a
 * pass runs and its decisions are applied, as the service does.
 */
import fc from 'fast-check';
import { decide } from './decide.js';
import { evolve, type PlacementEvent } from './evolve.js';
import { gangParts } from '#contracts';
import { ev, T0, type Unpositioned } from './fixtures.js';
import { initialState, type PlacementState } from './state.js';

type Action =
  | { kind: 'submit'; gpus: number; model: number }
  | { kind: 'stage' | 'cancel' | 'failStaging' | 'hold' | 'finish' | 'release' | 'replay'; pick: number; lost: boolean }
  | { kind: 'register'; node: number; gpus: number; model: number };

const MODELS = ['A100', 'T4'] as const;

const action: fc.Arbitrary<Action> = fc.oneof(
  // Mostly any model and small gangs, so that most jobs fit somewhere and GPUs are contended.
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('submit' as const), gpus: fc.integer({ min: 1, max: 3 }), model: fc.constantFrom(0, 1, 2, 2, 2) }) },
  // Now and then a job larger than most nodes: placed over whole nodes, or rejected.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('submit' as const), gpus: fc.integer({ min: 3, max: 7 }), model: fc.constantFrom(0, 1, 2) }) },
  {
    weight: 14,
    arbitrary: fc.record({
      kind: fc.constantFrom<'stage' | 'cancel' | 'failStaging' | 'hold' | 'finish' | 'release' | 'replay'>(
        'stage', 'stage', 'stage', 'stage', 'cancel', 'failStaging', 'hold', 'finish', 'finish', 'release', 'release', 'release', 'replay', 'replay',
      ),
      pick: fc.nat(),
      lost: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('register' as const), node: fc.integer({ min: 0, max: 2 }), gpus: fc.integer({ min: 1, max: 4 }), model: fc.integer({ min: 0, max: 1 }) }) },
);

/** Nodes registered before the history starts: 1–3 nodes of 2–4 GPUs. */
const initialNodes = fc.array(fc.record({ gpus: fc.integer({ min: 2, max: 4 }), model: fc.integer({ min: 0, max: 1 }) }), { minLength: 1, maxLength: 3 });

/** The world outside placement: what agents and intake would do next. */
interface World {
  state: PlacementState;
  position: bigint;
  log: PlacementEvent[];
  jobs: string[];
  /** Placed attempts by status, as agents see them. */
  attempts: { jobId: string; attempt: number; nodeId: string; gpuIndices: number[]; gpuModel: string; held: boolean; finished: boolean; released: boolean }[];
}

function apply(w: World, e: Unpositioned): void {
  w.position += 1n;
  const event = { ...e, position: w.position } as PlacementEvent;
  w.log.push(event);
  evolve(w.state, event);
}

function pick<T>(xs: readonly T[], n: number): T | undefined {
  return xs.length === 0 ? undefined : xs[n % xs.length];
}

function step(w: World, a: Action): void {
  switch (a.kind) {
    case 'submit': {
      const jobId = `j${w.jobs.length}`;
      w.jobs.push(jobId);
      return apply(w, ev.submitted(jobId, a.gpus, MODELS[a.model]));
    }
    case 'register':
      return apply(w, ev.node(`n${a.node}`, a.gpus, MODELS[a.model]));
    case 'stage':
    case 'cancel':
    case 'failStaging': {
      const jobId = pick(w.jobs, a.pick);
      if (!jobId) return;
      return apply(w, a.kind === 'stage' ? ev.staged(jobId) : a.kind === 'cancel' ? ev.cancelRequested(jobId) : ev.stagingFailed(jobId));
    }
    case 'hold': {
      const x = pick(w.attempts.filter((t) => !t.held && !t.finished), a.pick);
      if (!x) return;
      x.held = true;
      return apply(w, ev.held(x.jobId, x.attempt, x.nodeId, x.gpuIndices, x.gpuModel));
    }
    case 'finish': {
      const x = pick(w.attempts.filter((t) => !t.finished), a.pick);
      if (!x) return;
      x.finished = true;
      return apply(w, ev.finished(x.jobId, x.attempt, x.nodeId, a.lost ? 'node_lost' : 'completed'));
    }
    case 'release': {
      // The agent always releases after JobFinished, whether or not the attempt ever held.
      const x = pick(w.attempts.filter((t) => t.finished && !t.released), a.pick);
      if (!x) return;
      x.released = true;
      return apply(w, ev.released(x.jobId, x.attempt, x.nodeId, x.gpuIndices));
    }
    case 'replay': {
      const old = pick(w.log, a.pick);
      if (old) evolve(w.state, old); // a redelivery: same event, same position
      return;
    }
  }
}

/** Passes that placed a job while another attempt held GPUs: the runs must exercise contention, not just assert. */
let contended = 0;
/** Placements over several nodes: the generator must produce them too. */
let multiNode = 0;
const stats = { placed: 0, contended: 0 };

/** One pass: check its proposals against the state, then apply them as the service would. */
function pass(w: World, now: Date): void {
  const decisions = decide(w.state, now);
  const proposed = new Set<string>();
  for (const d of decisions) {
    if (d.type !== 'JobPlaced') continue;
    const p = d.data;
    const job = w.state.jobs.get(p.jobId)!;
    expect(job.phase === 'queued' || job.phase === 'lost').toBe(true);
    expect(job.cancelRequested).toBe(false);
    // All of the job at once: one node, or whole nodes of one model for a job larger than a node.
    const parts = gangParts(p);
    expect(parts.reduce((n, part) => n + part.gpuIndices.length, 0)).toBe(job.request.gpus);
    if (parts.length > 1) multiNode++;
    if (job.request.gpuModel) expect(p.gpuModel).toBe(job.request.gpuModel);
    for (const part of parts) {
      const node = w.state.nodes.get(part.nodeId);
      expect(node?.registered).toBe(true);
      for (const i of part.gpuIndices) {
        const key = `${part.nodeId}/${i}`;
        expect({ gpu: key, busy: node!.busy.has(i) }).toEqual({ gpu: key, busy: false });
        expect({ gpu: key, proposedTwice: proposed.has(key) }).toEqual({ gpu: key, proposedTwice: false });
        expect(node!.gpus.find((g) => g.index === i)?.model).toBe(p.gpuModel);
        proposed.add(key);
      }
    }
  }
  if (decisions.some((d) => d.type === 'JobPlaced') && w.state.holders.size > 0) contended++;
  for (const d of decisions) {
    apply(w, d);
    // Each part of a gang is driven by its own node's agent.
    if (d.type === 'JobPlaced') {
      for (const part of gangParts(d.data)) w.attempts.push({ ...d.data, nodeId: part.nodeId, gpuIndices: [...part.gpuIndices], held: false, finished: false, released: false });
    }
  }
  // The fold agrees: no GPU is held by two attempts, and a second pass has nothing left to do.
  for (const node of w.state.nodes.values()) for (const [i, n] of node.busy) expect({ gpu: `${node.nodeId}/${i}`, holders: n }).toEqual({ gpu: `${node.nodeId}/${i}`, holders: 1 });
  expect(decide(w.state, now)).toEqual([]);
}

describe('placement invariant (property)', () => {
  it('never proposes a busy GPU, nor one GPU twice in a pass, over random histories', () => {
    fc.assert(
      fc.property(initialNodes, fc.array(action, { minLength: 20, maxLength: 120, size: 'max' }), (nodes, actions) => {
        const w: World = { state: initialState(), position: 0n, log: [], jobs: [], attempts: [] };
        nodes.forEach((n, i) => apply(w, ev.node(`n${i}`, n.gpus, MODELS[n.model])));
        contended = 0;
        actions.forEach((a, i) => {
          step(w, a);
          pass(w, new Date(T0 + i * 1000));
        });
        // Everything eventually released: every GPU is free again.
        for (const x of w.attempts.filter((t) => !t.released)) {
          if (!x.finished) apply(w, ev.finished(x.jobId, x.attempt, x.nodeId, 'completed'));
          apply(w, ev.released(x.jobId, x.attempt, x.nodeId, x.gpuIndices));
        }
        for (const node of w.state.nodes.values()) expect(node.busy.size).toBe(0);
        expect(w.state.holders.size).toBe(0);
        stats.placed += w.attempts.length;
        stats.contended += contended;
      }),
      { numRuns: 150 },
    );
    // Guards the generator: a history that never contends for GPUs would prove nothing.
    expect(stats.placed).toBeGreaterThan(400);
    expect(stats.contended).toBeGreaterThan(200);
    expect(multiNode).toBeGreaterThan(10);
  });

  it('lets every placeable job run eventually when agents finish and release', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ gpus: fc.integer({ min: 1, max: 4 }), stagedLate: fc.boolean() }), { minLength: 1, maxLength: 30 }), (jobs) => {
        const w: World = { state: initialState(), position: 0n, log: [], jobs: [], attempts: [] };
        apply(w, ev.node('n0', 4));
        apply(w, ev.node('n1', 2));
        jobs.forEach((j, i) => {
          apply(w, ev.submitted(`j${i}`, j.gpus));
          if (!j.stagedLate) apply(w, ev.staged(`j${i}`));
        });
        jobs.forEach((j, i) => j.stagedLate && apply(w, ev.staged(`j${i}`)));
        for (let round = 0; round < 1000 && w.state.queue.length > 0; round++) {
          pass(w, new Date(T0 + round));
          for (const x of w.attempts.filter((t) => !t.released)) {
            x.finished = x.released = true;
            apply(w, ev.finished(x.jobId, x.attempt, x.nodeId));
            apply(w, ev.released(x.jobId, x.attempt, x.nodeId, x.gpuIndices));
          }
        }
        expect(w.state.queue).toEqual([]);
        expect(new Set(w.attempts.map((a) => a.jobId)).size).toBe(jobs.length);
      }),
      { numRuns: 100 },
    );
  });
});
