/**
 * Event builders for placement's specs: given(...) folds a history, each builder makes the data
 * of one event with sensible defaults. Positions are assigned in the order events are given.
 */
import type { EventData, JobSpec } from '#contracts';
import { evolve, type PlacementEvent, type PlacementEventType } from './evolve.js';
import { initialState, type PlacementState } from './state.js';

/** An event without its position yet. */
export type Unpositioned = { [T in PlacementEventType]: { type: T; data: EventData<T> } }[PlacementEventType];

export const T0 = Date.parse('2026-01-01T00:00:00.000Z');
export const at = (ms = 0): string => new Date(T0 + ms).toISOString();

function spec(gpus: number, gpuModel?: string): JobSpec {
  return {
    work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
    data: { inputs: [] },
    request: { gpus, timeLimitMs: 3_600_000, network: false, ...(gpuModel !== undefined ? { gpuModel } : {}) },
    outputs: { globs: ['**'] },
  };
}

export const ev = {
  submitted: (jobId: string, gpus: number, gpuModel?: string, team = 'team-a'): Unpositioned => ({
    type: 'JobSubmitted',
    data: { jobId, team, spec: spec(gpus, gpuModel), submittedAt: at() },
  }),
  staged: (jobId: string): Unpositioned => ({ type: 'InputsStaged', data: { jobId, inputs: [], totalBytes: 0, stagedAt: at() } }),
  stagingFailed: (jobId: string): Unpositioned => ({
    type: 'StagingFailed',
    data: { jobId, reason: 'blob_missing', message: 'missing', failedAt: at() },
  }),
  cancelRequested: (jobId: string, team = 'team-a'): Unpositioned => ({ type: 'JobCancelRequested', data: { jobId, team, requestedAt: at() } }),
  rejected: (jobId: string, team = 'team-a'): Unpositioned => ({
    type: 'JobRejected',
    data: { jobId, team, reason: 'quota_exceeded', message: 'over quota', issues: [], rejectedAt: at() },
  }),
  node: (nodeId: string, gpus: number, model = 'A100', firstIndex = 0): Unpositioned => ({
    type: 'NodeRegistered',
    data: {
      nodeId,
      gpus: Array.from({ length: gpus }, (_, i) => ({ index: firstIndex + i, model })),
      simulated: true,
      networkIsolation: false,
      heartbeatIntervalMs: 1000,
      registeredAt: at(),
    },
  }),
  mixedNode: (nodeId: string, models: readonly string[]): Unpositioned => ({
    type: 'NodeRegistered',
    data: { nodeId, gpus: models.map((model, index) => ({ index, model })), simulated: true, networkIsolation: false, heartbeatIntervalMs: 1000, registeredAt: at() },
  }),
  placed: (jobId: string, attempt: number, nodeId: string, gpuIndices: number[], gpuModel = 'A100'): Unpositioned => ({
    type: 'JobPlaced',
    data: { jobId, attemptId: `${jobId}-a${attempt}`, attempt, nodeId, gpuIndices, gpuModel, placedAt: at() },
  }),
  held: (jobId: string, attempt: number, nodeId: string, gpuIndices: number[], gpuModel = 'A100'): Unpositioned => ({
    type: 'ComputeHeld',
    data: { jobId, attemptId: `${jobId}-a${attempt}`, nodeId, gpuIndices, gpuModel, gpus: gpuIndices.length, heldAt: at(1) },
  }),
  finished: (jobId: string, attempt: number, nodeId: string, outcome: EventData<'JobFinished'>['outcome'] = 'completed'): Unpositioned => ({
    type: 'JobFinished',
    data: { jobId, attemptId: `${jobId}-a${attempt}`, nodeId, outcome, exitCode: outcome === 'completed' ? 0 : null, signal: null, finishedAt: at(2) },
  }),
  released: (jobId: string, attempt: number, nodeId: string, gpuIndices: number[]): Unpositioned => ({
    type: 'ComputeReleased',
    data: { jobId, attemptId: `${jobId}-a${attempt}`, nodeId, gpuIndices, releasedAt: at(3) },
  }),
  requeued: (jobId: string, previousAttempt: number): Unpositioned => ({
    type: 'JobRequeued',
    data: { jobId, previousAttemptId: `${jobId}-a${previousAttempt}`, reason: 'node_lost', nextAttempt: previousAttempt + 1, requeuedAt: at() },
  }),
  withdrawn: (jobId: string, team = 'team-a'): Unpositioned => ({
    type: 'JobWithdrawn',
    data: { jobId, team, outcome: 'cancelled', withdrawnAt: at() },
  }),
};

/** A history under construction: `given(...)` then `when(...)`; positions count from 1. */
export class History {
  readonly state: PlacementState = initialState();
  private position = 0n;

  /** Applies events in order, each at the next position. */
  apply(...events: Unpositioned[]): this {
    for (const e of events) {
      this.position += 1n;
      evolve(this.state, { ...e, position: this.position } as PlacementEvent);
    }
    return this;
  }
}

/** A state folded from `events`. */
export function given(...events: Unpositioned[]): History {
  return new History().apply(...events);
}
