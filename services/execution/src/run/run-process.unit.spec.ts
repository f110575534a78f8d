import type { RunDirs } from './dirs.js';
import { ResourceLimitsUnavailableError } from './errors.js';
import { launchArgv, runSpecIssues, type RunSpec } from './run-process.js';

const dirs: RunDirs = {
  root: '/r/runs/j1/a1',
  inputs: '/r/runs/j1/a1/inputs',
  work: '/r/runs/j1/a1/work',
  outputs: '/r/runs/j1/a1/outputs',
  checkpoints: '/r/runs/j1/a1/checkpoints',
  logs: '/r/runs/j1/a1/logs',
};
const base: RunSpec = { jobId: 'j1', attemptId: 'a1', dirs, command: 'python3', args: ['train.py'], timeLimitMs: 60_000 };
const paths = (s: Partial<RunSpec>) => runSpecIssues({ ...base, ...s }).map((i) => i.path);

describe('runSpecIssues', () => {
  it('accepts a plain spec and scripts inside the run', () => {
    expect(paths({})).toEqual([]);
    expect(paths({ command: './train.sh' })).toEqual([]);
    expect(paths({ command: '../inputs/code/train.sh' })).toEqual([]);
    expect(paths({ command: `${dirs.work}/run.sh`, gpus: [0, 3], graceMs: 0, warnSignal: 'SIGUSR1', warnBeforeMs: 59_999 })).toEqual([]);
  });

  it('refuses commands outside the run, or naming the run directory itself', () => {
    expect(paths({ command: '/usr/bin/python3' })).toEqual(['command']);
    expect(paths({ command: '../../../../etc/x' })).toEqual(['command']);
    expect(paths({ command: '..' + '/' })).toEqual(['command']);
    expect(paths({ command: '' })).toEqual(['command']);
  });

  it('refuses bad time settings', () => {
    expect(paths({ timeLimitMs: 0 })).toEqual(['timeLimitMs']);
    expect(paths({ timeLimitMs: 1.5 })).toEqual(['timeLimitMs']);
    expect(paths({ graceMs: -1 })).toEqual(['graceMs']);
    expect(paths({ graceMs: 2 ** 31 })).toEqual(['graceMs']);
    expect(paths({ warnSignal: 'SIGUSR1' })).toEqual(['warnBeforeMs']);
    expect(paths({ warnSignal: 'SIGUSR1', warnBeforeMs: 60_000 })).toEqual(['warnBeforeMs']);
    expect(paths({ warnSignal: 'SIGKILL', warnBeforeMs: 1000 })).toEqual(['warnSignal']);
    expect(paths({ warnSignal: 'SIGNOPE' as NodeJS.Signals, warnBeforeMs: 1000 })).toEqual(['warnSignal']);
  });

  it('refuses duplicate or negative GPU indices, NUL in args, platform env names and bad limits', () => {
    expect(paths({ gpus: [1, 1] })).toEqual(['gpus']);
    expect(paths({ gpus: [-1] })).toEqual(['gpus']);
    expect(paths({ args: ['a\0b'] })).toEqual(['args.0']);
    expect(paths({ env: { GPUNET_WORK_DIR: '/' } })).toEqual(['env.GPUNET_WORK_DIR']);
    expect(paths({ limits: { maxOpenFiles: -1 } })).toEqual(['limits.maxOpenFiles']);
  });
});

describe('launchArgv', () => {
  it('is the command itself without limits', () => {
    expect(launchArgv(base, {})).toEqual(['python3', 'train.py']);
    expect(launchArgv({ ...base, limits: {} }, {})).toEqual(['python3', 'train.py']);
  });

  it('wraps the command with prlimit, which execs it', () => {
    expect(launchArgv({ ...base, limits: { maxOpenFiles: 64 } }, { prlimitPath: '/usr/bin/prlimit' })).toEqual([
      '/usr/bin/prlimit',
      '--nofile=64:64',
      '--',
      'python3',
      'train.py',
    ]);
    expect(() => launchArgv({ ...base, limits: { maxOpenFiles: 64 } }, {})).toThrow(ResourceLimitsUnavailableError);
  });
});
