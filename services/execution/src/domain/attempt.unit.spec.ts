import { describe, expect, it } from '@jest/globals';
import { IllegalStateError } from '#errors';
import {
  decide,
  evolve,
  expectedRevision,
  foldAttempt,
  isRecorded,
  MAX_FINISH_MESSAGE_CHARS,
  needsOutputs,
  placedAttempt,
  recoveryStep,
  type AttemptCommand,
  type AttemptFact,
  type AttemptState,
  type Placement,
} from './attempt.js';

const placement: Placement = { jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1', gpuIndices: [0, 2], gpuModel: 'A100' };
const ids = { jobId: 'job-1', attemptId: 'job-1-a1', nodeId: 'node-1' };
const T = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();

/** Given the commands already applied, when one more is decided, then these facts follow. */
function given(...commands: AttemptCommand[]) {
  const state = commands.reduce((s, c) => decide(s, c).reduce(evolve, s), placedAttempt(placement));
  return {
    state,
    when: (command: AttemptCommand) => {
      const facts = decide(state, command);
      return { facts, state: facts.reduce(evolve, state) };
    },
  };
}

const hold: AttemptCommand = { type: 'Hold', at: T(1) };
const start: AttemptCommand = { type: 'Start', at: T(2) };
const staged: AttemptCommand[] = [{ type: 'BeginStaging' }, hold];
const running: AttemptCommand[] = [...staged, start];
const completed: AttemptCommand = { type: 'Finish', outcome: 'completed', exitCode: 0, signal: null, at: T(9) };

describe('attempt: the happy path', () => {
  it('walks placed → staging → held → running → finished → outputs → released, recording four events', () => {
    const steps: AttemptCommand[] = [...running, completed, { type: 'SettleOutputs', stored: true }, { type: 'Release', at: T(10) }];
    const phases: string[] = [];
    const facts: AttemptFact[] = [];
    steps.reduce((s, c) => {
      const out = decide(s, c);
      facts.push(...out);
      const next = out.reduce(evolve, s);
      phases.push(next.phase);
      return next;
    }, placedAttempt(placement));
    expect(phases).toEqual(['staging', 'held', 'running', 'finished', 'outputs', 'released']);
    expect(facts.filter(isRecorded).map((f) => f.type)).toEqual(['ComputeHeld', 'JobStarted', 'JobFinished', 'ComputeReleased']);
  });

  it('holds exactly the placed GPUs, with the count the ledger bills, at the agent time given', () => {
    const { facts } = given({ type: 'BeginStaging' }).when(hold);
    expect(facts).toEqual([{ type: 'ComputeHeld', data: { ...ids, gpuIndices: [0, 2], gpuModel: 'A100', gpus: 2, heldAt: T(1) } }]);
  });

  it('records how the process ended and when', () => {
    const { facts, state } = given(...running).when({ type: 'Finish', outcome: 'failed', exitCode: 3, signal: null, at: T(7) });
    expect(facts).toEqual([{ type: 'JobFinished', data: { ...ids, outcome: 'failed', exitCode: 3, signal: null, finishedAt: T(7) } }]);
    expect(state.finished).toEqual({ outcome: 'failed', exitCode: 3, signal: null, finishedAt: T(7) });
  });

  it('releases the same GPUs it held', () => {
    const { facts } = given(...running, completed, { type: 'SettleOutputs', stored: true }).when({ type: 'Release', at: T(10) });
    expect(facts).toEqual([{ type: 'ComputeReleased', data: { ...ids, gpuIndices: [0, 2], releasedAt: T(10) } }]);
  });

  it('counts recorded events for the stream revision, not local facts', () => {
    expect(expectedRevision(placedAttempt(placement))).toBe('no_stream');
    expect(expectedRevision(given({ type: 'BeginStaging' }).state)).toBe('no_stream');
    expect(expectedRevision(given(...staged).state)).toBe(0n);
    expect(expectedRevision(given(...running, completed).state)).toBe(2n);
  });
});

describe('attempt: outputs', () => {
  it('may be given up, so that a missing storage service does not keep the GPUs', () => {
    const { state } = given(...running, completed).when({ type: 'SettleOutputs', stored: false });
    expect(state).toMatchObject({ phase: 'outputs', outputsStored: false });
    expect(decide(state, { type: 'Release', at: T(11) })[0]).toMatchObject({ type: 'ComputeReleased' });
  });

  it('are handed over when the process ran, whatever its outcome except node_lost', () => {
    expect(needsOutputs(given(...running, completed).state)).toBe(true);
    expect(needsOutputs(given(...running, { type: 'Finish', outcome: 'timeout', exitCode: null, signal: 'SIGTERM', at: T(5) }).state)).toBe(true);
    expect(needsOutputs(given(...running, { type: 'Abandon', reason: 'agent restarted', at: T(5) }).state)).toBe(false);
  });

  it('must be settled before a run that produced them is released', () => {
    expect(() => given(...running, completed).when({ type: 'Release', at: T(10) })).toThrow(IllegalStateError);
  });

  it('are not asked of an attempt that never started its process', () => {
    const refused = given({ type: 'Finish', outcome: 'failed', exitCode: null, signal: null, message: 'GPU 0 busy', at: T(1) });
    expect(() => refused.when({ type: 'SettleOutputs', stored: true })).toThrow(IllegalStateError);
    expect(refused.when({ type: 'Release', at: T(2) }).state.phase).toBe('released');
  });
});

describe('attempt: refusal before compute is held (never billed)', () => {
  it('cuts a long message to what the contract takes, so the end is always recordable', () => {
    const { facts } = given().when({ type: 'Finish', outcome: 'failed', exitCode: null, signal: null, message: 'x'.repeat(5000), at: T(1) });
    const message = (facts[0] as { data: { message: string } }).data.message;
    expect(message).toHaveLength(MAX_FINISH_MESSAGE_CHARS);
    expect(message.endsWith('…')).toBe(true);
  });

  it('finishes from placed or staging without a ComputeHeld and without an exit status', () => {
    for (const before of [[], [{ type: 'BeginStaging' } as AttemptCommand]]) {
      const { facts } = given(...before).when({ type: 'Finish', outcome: 'failed', exitCode: 1, signal: 'SIGKILL', message: 'input missing', at: T(1) });
      expect(facts).toEqual([{ type: 'JobFinished', data: { ...ids, outcome: 'failed', exitCode: null, signal: null, message: 'input missing', finishedAt: T(1) } }]);
    }
  });
});

describe('attempt: stop (cancel or agent stopping) at every step', () => {
  const cancel: AttemptCommand = { type: 'Stop', outcome: 'cancelled', reason: 'user asked', at: T(4) };

  it.each([
    ['placed', []],
    ['staging', [{ type: 'BeginStaging' }]],
    ['held', staged],
  ] as [string, AttemptCommand[]][])('while %s: finishes at once with that outcome', (_phase, before) => {
    const { facts, state } = given(...before).when(cancel);
    expect(facts).toEqual([{ type: 'JobFinished', data: { ...ids, outcome: 'cancelled', exitCode: null, signal: null, message: 'user asked', finishedAt: T(4) } }]);
    expect(state.phase).toBe('finished');
    expect(needsOutputs(state)).toBe(false);
  });

  it('while staging or placed: no ComputeHeld is ever recorded, so the ledger bills nothing', () => {
    const { state } = given({ type: 'BeginStaging' }, cancel).when({ type: 'Release', at: T(5) });
    expect(state.heldAt).toBeUndefined();
    expect(state.phase).toBe('released');
  });

  it('while running: only remembers the stop; the process is stopped by the caller', () => {
    const { facts, state } = given(...running).when(cancel);
    expect(facts).toEqual([{ type: 'StopRequested', outcome: 'cancelled', reason: 'user asked' }]);
    expect(state.phase).toBe('running');
  });

  it('while running: the aborted run is recorded with the stop outcome and reason', () => {
    const stopped = given(...running, { type: 'Stop', outcome: 'node_lost', reason: 'agent stopped', at: T(4) });
    const { facts } = stopped.when({ type: 'Finish', outcome: 'cancelled', exitCode: null, signal: 'SIGTERM', at: T(5) });
    expect(facts).toEqual([{ type: 'JobFinished', data: { ...ids, outcome: 'node_lost', exitCode: null, signal: 'SIGTERM', message: 'agent stopped', finishedAt: T(5) } }]);
  });

  it('while running: a process that ended on its own keeps its own outcome', () => {
    const stopped = given(...running, cancel);
    expect(stopped.when(completed).facts[0]).toMatchObject({ data: { outcome: 'completed', exitCode: 0 } });
  });

  it('the first stop wins: a cancel followed by the agent stopping stays a cancel', () => {
    const cancelled = given(...running, cancel);
    expect(cancelled.when({ type: 'Stop', outcome: 'node_lost', reason: 'agent stopped', at: T(5) }).facts).toEqual([]);
  });

  it.each([
    ['finished', [...running, completed]],
    ['outputs', [...running, completed, { type: 'SettleOutputs', stored: true }]],
    ['released', [...running, completed, { type: 'SettleOutputs', stored: true }, { type: 'Release', at: T(10) }]],
  ] as [string, AttemptCommand[]][])('once %s: changes nothing', (_phase, before) => {
    expect(given(...before).when(cancel).facts).toEqual([]);
  });

  it('makes the steps that would follow illegal, so the caller cannot hold or start a stopped attempt', () => {
    expect(() => given({ type: 'BeginStaging' }, cancel).when(hold)).toThrow(IllegalStateError);
    expect(() => given(...staged, cancel).when(start)).toThrow(IllegalStateError);
  });
});

describe('attempt: abandon (the agent lost the process)', () => {
  const abandon: AttemptCommand = { type: 'Abandon', reason: 'agent restarted', at: T(30) };

  it.each([
    ['placed', []],
    ['held', staged],
    ['running', running],
  ] as [string, AttemptCommand[]][])('while %s: ends node_lost now', (_phase, before) => {
    const { facts } = given(...before).when(abandon);
    expect(facts).toEqual([{ type: 'JobFinished', data: { ...ids, outcome: 'node_lost', exitCode: null, signal: null, message: 'agent restarted', finishedAt: T(30) } }]);
  });

  it('once finished: changes nothing (the attempt resumes with its outputs or release)', () => {
    expect(given(...running, completed).when(abandon).facts).toEqual([]);
  });
});

describe('attempt: illegal steps', () => {
  it.each([
    ['hold before staging', [], hold],
    ['start before holding', [{ type: 'BeginStaging' }], start],
    ['stage twice', [{ type: 'BeginStaging' }], { type: 'BeginStaging' }],
    ['finish twice', [...running, completed], completed],
    ['release while running', running, { type: 'Release', at: T(3) }],
  ] as [string, AttemptCommand[], AttemptCommand][])('%s', (_name, before, command) => {
    expect(() => given(...before).when(command)).toThrow(IllegalStateError);
  });
});

describe('attempt: folding the recorded events (what a restarted agent sees)', () => {
  const recorded = (commands: AttemptCommand[]): AttemptState => {
    const facts: AttemptFact[] = [];
    commands.reduce((s, c) => {
      const out = decide(s, c);
      facts.push(...out);
      return out.reduce(evolve, s);
    }, placedAttempt(placement));
    return foldAttempt(placement, facts.filter(isRecorded));
  };

  it.each([
    ['nothing recorded', [], 'abandon'],
    ['held, never started', staged, 'abandon'],
    ['running', running, 'abandon'],
    ['finished after running', [...running, completed], 'outputs'],
    ['finished, never ran', [{ type: 'Finish', outcome: 'failed', exitCode: null, signal: null, at: T(1) }], 'release'],
    ['finished node_lost', [...running, { type: 'Abandon', reason: 'x', at: T(3) }], 'release'],
    ['released', [...running, completed, { type: 'SettleOutputs', stored: true }, { type: 'Release', at: T(10) }], 'none'],
  ] as [string, AttemptCommand[], string][])('%s → %s', (_name, commands, step) => {
    expect(recoveryStep(recorded(commands))).toBe(step);
  });

  it('a folded finished attempt whose outputs were settled but not released resumes with outputs again (storage records them idempotently)', () => {
    const state = recorded([...running, completed, { type: 'SettleOutputs', stored: true }]);
    expect(state.phase).toBe('finished');
    expect(recoveryStep(state)).toBe('outputs');
  });
});
