import { UsageError } from '../errors.js';
import { renderReport, simulateOptions, type SimulationReportDoc } from './simulate.js';

describe('simulate flags', () => {
  it('maps flags to the simulator options, leaving out what was not given', () => {
    expect(simulateOptions({})).toEqual({});
    expect(simulateOptions({ procsPerGpu: '4', nodes: '16', gpusPerNode: '8', policy: 'sjf', backfill: 'off' })).toEqual({ procsPerGpu: 4, nodes: 16, gpusPerNode: 8, policy: 'sjf', backfill: false });
    expect(simulateOptions({ backfill: 'on' })).toEqual({ backfill: true });
    expect(simulateOptions({ reservationDepth: '0', predictions: 'off', weights: 'runTime=1000, age=0' })).toEqual({ reservationDepth: 0, predictions: false, weights: { runTime: 1000, age: 0 } });
  });

  it('refuses an unknown or negative weight, naming it', () => {
    expect(() => simulateOptions({ weights: 'speed=1' })).toThrow('--weights: unknown weight `speed`');
    expect(() => simulateOptions({ weights: 'age=-1' })).toThrow('--weights: age must be a number ≥ 0, got `-1`');
  });

  it.each([['0'], ['-2'], ['1.5'], ['eight']])('refuses --nodes %s, naming the flag', (value) => {
    expect(() => simulateOptions({ nodes: value })).toThrow(UsageError);
    expect(() => simulateOptions({ nodes: value })).toThrow(`--nodes must be a positive integer, got \`${value}\``);
  });
});

describe('renderReport', () => {
  it('prints the cluster, the policy and every metric, times as durations', () => {
    const report: SimulationReportDoc = {
      policy: 'fcfs',
      backfill: 'off',
      reservationDepth: 1,
      predictions: 'off',
      longWorkSharePercent: 100,
      passes: 12,
      elapsedMs: 250,
      cluster: { nodes: 2, gpusPerNode: 4, totalGpus: 8 },
      procsPerGpu: 2,
      skipped: 1,
      metrics: { jobs: 3, rejected: 1, averageWaitMs: 56_667, averageBoundedSlowdown: 4.1, utilization: 0.85, utilizationToLastStart: 0.9, p95WaitSmallHalfMs: 90_000, maxWaitLargest10PctMs: 0, spanMs: 3_750_000 },
      notes: [],
    };
    expect(renderReport('t.swf', report).split('\n')).toEqual([
      'trace    t.swf',
      'cluster  2 nodes × 4 GPUs = 8 GPUs (2 processors per GPU)',
      'policy   fcfs, backfill off, reservations 1, predictions off, long work unlimited',
      '',
      'METRIC                                         VALUE',
      'jobs run                                           3',
      'jobs rejected (larger than any node)               1',
      'trace lines skipped (size unknown)                 1',
      'average wait                                56.667 s',
      'average bounded slowdown (τ = 10 s)           4.1000',
      'utilization to the last start                90.00 %',
      'utilization to the last end                  85.00 %',
      'p95 wait, smaller half of jobs              90.000 s',
      'max wait, largest 10 % of jobs               0.000 s',
      'span (first submit to last end)       1h 02m 30.000s',
      'core passes (wall time)                  12 (0.25 s)',
    ]);
  });
});
