import { parseSwf, SwfParseError } from './swf.js';
import { swfLine } from './swf-fixtures.js';
import { toWorkload } from './workload.js';

describe('parseSwf', () => {
  it('reads header comments and 18 numeric fields per job, -1 kept as unknown', () => {
    const trace = parseSwf(['; Version: 2.2', '; MaxProcs: 64', '', '1 0 5 100 4 -1 -1 4 120 -1 1 7 3 -1 -1 -1 -1 -1', '  2\t30 0 12.5 1 -1 -1 -1 -1 -1 1 8 -1 -1 -1 -1 -1 -1  '].join('\n'));
    expect(trace.header).toEqual({ Version: '2.2', MaxProcs: '64' });
    expect(trace.jobs).toHaveLength(2);
    expect(trace.jobs[0]).toMatchObject({ line: 4, jobNumber: 1, submitTime: 0, runTime: 100, allocatedProcessors: 4, requestedProcessors: 4, requestedTime: 120, userId: 7, groupId: 3 });
    expect(trace.jobs[1]).toMatchObject({ line: 5, jobNumber: 2, submitTime: 30, runTime: 12.5, requestedProcessors: -1, requestedTime: -1, groupId: -1 });
  });

  it('names the line when a job line has the wrong number of fields', () => {
    const err = captured(() => parseSwf('; c\n1 0 5 100 4'));
    expect(err).toBeInstanceOf(SwfParseError);
    expect(err.message).toBe('SWF line 2: expected 18 whitespace-separated fields, found 5');
    expect(err.line).toBe(2);
  });

  it('names the line and the field when a value is not a number', () => {
    const err = captured(() => parseSwf('1 0 5 1e2 4 -1 -1 four 120 -1 1 7 3 -1 -1 -1 -1 -1'));
    expect(err.message).toBe('SWF line 1, field 8 (requestedProcessors): `four` is not a number');
    expect(err.field).toBe('requestedProcessors');
    expect(err.issues).toEqual([{ path: 'line 1: requestedProcessors', message: '`four` is not a number' }]);
  });
});

describe('toWorkload', () => {
  const jobsOf = (lines: string[], procsPerGpu?: number) => toWorkload(parseSwf(lines.join('\n')).jobs, procsPerGpu === undefined ? {} : { procsPerGpu });

  it('maps processors to GPUs rounding up, at least 1; the larger of requested and allocated', () => {
    const { jobs } = jobsOf([swfLine({ job: 1, submit: 0, run: 1, procs: 9 }), swfLine({ job: 2, submit: 0, run: 1, procs: 1 }), swfLine({ job: 3, submit: 0, run: 1, procs: -1, alloc: 4 }), swfLine({ job: 4, submit: 0, run: 1, procs: 8, alloc: 16 })], 4);
    expect(jobs.map((j) => j.gpus)).toEqual([3, 1, 1, 4]);
  });

  it('takes the time limit from the requested time, else the run time; a longer run raises it (the machine let it run)', () => {
    const { jobs } = jobsOf([swfLine({ job: 1, submit: 0, run: 100, procs: 1, req: 300 }), swfLine({ job: 2, submit: 0, run: 100, procs: 1 }), swfLine({ job: 3, submit: 0, run: 200, procs: 1, req: 150 })]);
    expect(jobs.map((j) => [j.timeLimitMs, j.runMs, j.timedOut])).toEqual([
      [300_000, 100_000, false],
      [100_000, 100_000, false],
      [200_000, 200_000, false],
    ]);
  });

  it('takes the team from the group id, else the user id; sorts by submit time, file order among equals', () => {
    const { jobs } = jobsOf([swfLine({ job: 5, submit: 20, run: 1, procs: 1, group: 2 }), swfLine({ job: 6, submit: 10, run: 1, procs: 1, user: 9 }), swfLine({ job: 7, submit: 10, run: 1, procs: 1, user: 3, group: 4 })]);
    expect(jobs.map((j) => [j.jobId, j.team, j.submitMs])).toEqual([
      ['swf-6', 'u9', 10_000],
      ['swf-7', 'g4', 10_000],
      ['swf-5', 'g2', 20_000],
    ]);
  });

  it('replays an unknown run time as 10 s, skips an unknown processor count and says which line', () => {
    const w = jobsOf([swfLine({ job: 1, submit: 0, run: -1, procs: 1 }), swfLine({ job: 2, submit: 0, run: 5, procs: -1, alloc: -1 }), swfLine({ job: 3, submit: 0, run: 5, procs: 1 })]);
    expect(w.jobs.map((j) => [j.jobId, j.runMs])).toEqual([
      ['swf-1', 10_000],
      ['swf-3', 5_000],
    ]);
    expect(w.unknownRunTime).toBe(1);
    expect(w.skipped).toEqual([{ line: 2, reason: 'processors unknown' }]);
  });

  it('refuses a job number used twice, naming both the line and the field', () => {
    const err = captured(() => jobsOf([swfLine({ job: 1, submit: 0, run: 5, procs: 1 }), swfLine({ job: 1, submit: 3, run: 5, procs: 1 })]));
    expect(err.message).toBe('SWF line 2, field 1 (jobNumber): job number 1 appears twice');
  });
});

function captured(fn: () => unknown): SwfParseError {
  try {
    fn();
  } catch (err) {
    if (err instanceof SwfParseError) return err;
    throw err;
  }
  throw new Error('expected a SwfParseError');
}
