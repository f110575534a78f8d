import type { EventData } from '#contracts';
import { foldJobs, type JobEvent } from './job-view.js';

const JOB = 'job_retry';
const at = (s: number) => `2025-06-01T00:00:${String(s).padStart(2, '0')}.000Z`;
const spec: EventData<'JobSubmitted'>['spec'] = {
  work: { kind: 'script', script: { inline: 'exit 75' }, args: [], env: {} },
  data: { inputs: [] },
  request: { gpus: 1, timeLimitMs: 60_000, network: false },
  outputs: { globs: ['**'] },
  retry: { exitCodes: [75], maxAttempts: 2 },
};
let position = 0n;
const ev = (type: string, data: unknown): JobEvent => ({ type, data, position: ++position, metadata: { occurredAt: at(59), jobId: JOB } });
const attempt = (n: number, exitCode: number) => {
  const attemptId = `${JOB}-a${n}`;
  return [
    ev('JobPlaced', { jobId: JOB, attemptId, attempt: n, nodeId: 'n1', gpuIndices: [0], gpuModel: 'sim', placedAt: at(2) }),
    ev('ComputeHeld', { jobId: JOB, attemptId, nodeId: 'n1', gpuIndices: [0], gpuModel: 'sim', gpus: 1, heldAt: at(3) }),
    ev('JobFinished', { jobId: JOB, attemptId, nodeId: 'n1', outcome: 'failed', exitCode, signal: null, finishedAt: at(5) }),
    ev('ComputeReleased', { jobId: JOB, attemptId, nodeId: 'n1', gpuIndices: [0], releasedAt: at(6) }),
  ];
};
const start = () => [ev('JobSubmitted', { jobId: JOB, team: 't', spec, submittedAt: at(0) }), ev('InputsStaged', { jobId: JOB, inputs: [], totalBytes: 0, stagedAt: at(1) })];

describe('job view with a retry policy', () => {
  it('does not call a job failed while its retry policy runs it again', () => {
    const view = foldJobs([...start(), ...attempt(1, 75)]).get(JOB)!.view;
    expect(view.state).not.toBe('failed');
    const requeued = foldJobs([...start(), ...attempt(1, 75), ev('JobRequeued', { jobId: JOB, previousAttemptId: `${JOB}-a1`, reason: 'retry', nextAttempt: 2, requeuedAt: at(7) })]).get(JOB)!.view;
    expect(requeued.state).toBe('staged');
  });

  it('ends failed once the attempts are used up or the exit code is not retried', () => {
    expect(foldJobs([...start(), ...attempt(1, 75), ...attempt(2, 75)]).get(JOB)!.view.state).toBe('failed');
    expect(foldJobs([...start(), ...attempt(1, 3)]).get(JOB)!.view.state).toBe('failed');
  });
});
