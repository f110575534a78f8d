import { decide } from './decide.js';
import { evolve, type PlacementEvent } from './evolve.js';
import { initialState } from './state.js';
import { missingRuntime } from './work-kinds.js';

const at = '2026-01-01T00:00:00.000Z';
let position = 0n;
const ev = (type: string, data: unknown) => ({ type, data, position: ++position }) as PlacementEvent;
const node = (nodeId: string, containerRuntimes?: string[]) =>
  ev('NodeRegistered', { nodeId, gpus: [{ index: 0, model: 'sim' }], simulated: true, networkIsolation: true, heartbeatIntervalMs: 1000, registeredAt: at, ...(containerRuntimes && { containerRuntimes }) });
const submitted = (jobId: string, work: unknown, retry?: unknown) =>
  ev('JobSubmitted', {
    jobId,
    team: 't',
    submittedAt: at,
    spec: { work, data: { inputs: [] }, request: { gpus: 1, timeLimitMs: 60_000, network: false }, outputs: { globs: ['**'] }, ...(retry !== undefined && { retry }) },
  });
const container = { kind: 'container', image: 'ghcr.io/acme/train:1', args: [], env: {} };
const script = { kind: 'script', script: { inline: 'true' }, args: [], env: {} };

describe('work kinds at placement', () => {
  it('refuses container work when no node has a runtime, naming it, before anything is placed', () => {
    const state = [node('n1'), submitted('c1', container), ev('InputsStaged', { jobId: 'c1', team: 't', stagedAt: at, inputs: [] })].reduce(evolve, initialState());
    const out = decide(state, new Date(at));
    expect(out).toEqual([
      expect.objectContaining({
        type: 'JobRejected',
        data: expect.objectContaining({ jobId: 'c1', reason: 'unsatisfiable', issues: [expect.objectContaining({ path: 'work.kind', message: expect.stringContaining('docker or podman') })] }),
      }),
    ]);
    expect(out.some((d) => d.type === 'JobPlaced')).toBe(false);
  });

  it('places container work where a node registered a runtime, and scripts anywhere', () => {
    expect(missingRuntime({ needsContainer: true }, [{ containerRuntimes: [] }, { containerRuntimes: ['docker'] }])).toBeUndefined();
    expect(missingRuntime({}, [{}])).toBeUndefined();
    const state = [node('n1', ['docker']), submitted('c1', container), ev('InputsStaged', { jobId: 'c1', team: 't', stagedAt: at, inputs: [] })].reduce(evolve, initialState());
    expect(decide(state, new Date(at)).map((d) => d.type)).toEqual(['JobPlaced']);
  });
});

describe('work kinds in a mixed network', () => {
  it('places container work only on a node with a runtime, even when the first node is free, and waits for it when it is busy', () => {
    const staged = (jobId: string) => ev('InputsStaged', { jobId, team: 't', stagedAt: at, inputs: [] });
    const state = [node('plain'), node('docker-node', ['docker']), submitted('c1', container), staged('c1')].reduce(evolve, initialState());
    const [placed] = decide(state, new Date(at));
    expect(placed).toEqual(expect.objectContaining({ type: 'JobPlaced', data: expect.objectContaining({ jobId: 'c1', nodeId: 'docker-node' }) }));
    const busy = [ev(placed!.type, placed!.data), submitted('c2', container), staged('c2'), submitted('s1', script), staged('s1')].reduce(evolve, state);
    // c2 waits for the one container node; the script job takes the plain node.
    expect(decide(busy, new Date(at)).map((d) => [d.type, d.data.jobId, (d.data as { nodeId?: string }).nodeId])).toEqual([['JobPlaced', 's1', 'plain']]);
  });
});

describe('retry by exit code', () => {
  const finished = (attempt: number, exitCode: number) =>
    ev('JobFinished', { jobId: 'r1', attemptId: `r1-a${attempt}`, nodeId: 'n1', outcome: 'failed', exitCode, signal: null, finishedAt: at });
  const released = (attempt: number) => ev('ComputeReleased', { jobId: 'r1', attemptId: `r1-a${attempt}`, nodeId: 'n1', gpuIndices: [0], releasedAt: at });

  /** Places, fails with `exitCode` and releases each attempt in turn; returns the next pass's decisions. */
  function run(exitCodes: number[]) {
    let state = [node('n1'), submitted('r1', script, { exitCodes: [75], maxAttempts: 3 }), ev('InputsStaged', { jobId: 'r1', team: 't', stagedAt: at, inputs: [] })].reduce(
      evolve,
      initialState(),
    );
    exitCodes.forEach((code, i) => {
      for (const d of decide(state, new Date(at))) state = evolve(state, ev(d.type, d.data));
      state = [finished(i + 1, code), released(i + 1)].reduce(evolve, state);
    });
    return decide(state, new Date(at));
  }

  it('requeues a failure with a listed exit code (reason retry) and places the next attempt', () => {
    const out = run([75]);
    expect(out[0]).toEqual({ type: 'JobRequeued', data: { jobId: 'r1', previousAttemptId: 'r1-a1', reason: 'retry', nextAttempt: 2, requeuedAt: at } });
    expect(out[1]).toEqual(expect.objectContaining({ type: 'JobPlaced', data: expect.objectContaining({ attemptId: 'r1-a2', attempt: 2 }) }));
  });

  it('ends the job after maxAttempts, or at once on an exit code not listed', () => {
    expect(run([75, 75]).map((d) => d.type)).toEqual(['JobRequeued', 'JobPlaced']);
    expect(run([75, 75, 75])).toEqual([]);
    expect(run([1])).toEqual([]);
  });
});
