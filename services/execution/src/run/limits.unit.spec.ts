import { hasLimits, limitIssues, prlimitArgs } from './limits.js';

describe('resource limits', () => {
  it('turns limits into hard-and-soft prlimit options in a fixed order', () => {
    expect(prlimitArgs({ maxOpenFiles: 64, maxProcesses: 100, maxAddressSpaceBytes: 2 ** 31, maxCoreFileBytes: 0 })).toEqual([
      '--nproc=100:100',
      '--as=2147483648:2147483648',
      '--nofile=64:64',
      '--core=0:0',
    ]);
  });

  it('knows when nothing is asked for', () => {
    expect(hasLimits(undefined)).toBe(false);
    expect(hasLimits({})).toBe(false);
    expect(hasLimits({ maxOpenFiles: undefined })).toBe(false);
    expect(hasLimits({ maxCoreFileBytes: 0 })).toBe(true);
  });

  it('refuses unknown names, fractions, negatives and unusable minimums', () => {
    const issues = limitIssues({ maxOpenFiles: 2, maxProcesses: 0, maxFileSizeBytes: 1.5, maxAddressSpaceBytes: -1, bogus: 1 } as never);
    expect(issues.map((i) => i.path).sort()).toEqual(
      ['limits.bogus', 'limits.maxAddressSpaceBytes', 'limits.maxFileSizeBytes', 'limits.maxOpenFiles', 'limits.maxProcesses'].sort(),
    );
    expect(limitIssues({ maxOpenFiles: 64 })).toEqual([]);
  });
});
