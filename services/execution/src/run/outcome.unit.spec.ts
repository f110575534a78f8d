import { classifyOutcome } from './outcome.js';

describe('classifyOutcome', () => {
  it('exit 0 on its own is completed', () => {
    expect(classifyOutcome({ exitCode: 0, signal: null, terminatedBy: null })).toBe('completed');
  });

  it('a nonzero exit, a stray signal or no start at all is failed', () => {
    expect(classifyOutcome({ exitCode: 1, signal: null, terminatedBy: null })).toBe('failed');
    expect(classifyOutcome({ exitCode: 137, signal: null, terminatedBy: null })).toBe('failed');
    expect(classifyOutcome({ exitCode: null, signal: 'SIGSEGV', terminatedBy: null })).toBe('failed');
    expect(classifyOutcome({ exitCode: null, signal: null, terminatedBy: null })).toBe('failed');
  });

  it('stopped at the time limit is timeout, even when the job exits 0 in its SIGTERM handler', () => {
    expect(classifyOutcome({ exitCode: null, signal: 'SIGKILL', terminatedBy: 'time_limit' })).toBe('timeout');
    expect(classifyOutcome({ exitCode: 0, signal: null, terminatedBy: 'time_limit' })).toBe('timeout');
    expect(classifyOutcome({ exitCode: 143, signal: null, terminatedBy: 'time_limit' })).toBe('timeout');
  });

  it('aborted is cancelled whatever the exit status', () => {
    expect(classifyOutcome({ exitCode: null, signal: 'SIGTERM', terminatedBy: 'cancel' })).toBe('cancelled');
    expect(classifyOutcome({ exitCode: 0, signal: null, terminatedBy: 'cancel' })).toBe('cancelled');
  });
});
