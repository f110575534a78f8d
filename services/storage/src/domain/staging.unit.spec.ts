import { StagingFailed } from '#contracts';
import { at, sha, submitted } from './fixtures.js';
import { decideStaging, type InputCheck } from './staging.js';

const NOW = new Date(at(5_000));

describe('decideStaging', () => {
  const job = submitted('job-1', [
    { name: 'dataset', sha256: sha('a1'), size: 100, kind: 'folder' },
    { name: 'code', sha256: sha('b2'), size: 7 },
  ]);

  it('given every input present and intact, stages the job with every input and the total', () => {
    const decision = decideStaging(job, [{ input: 'code', status: 'ok' }, { input: 'dataset', status: 'ok' }], NOW);
    expect(decision).toEqual({
      type: 'InputsStaged',
      data: {
        jobId: 'job-1',
        inputs: [
          { name: 'dataset', sha256: sha('a1'), size: 100 },
          { name: 'code', sha256: sha('b2'), size: 7 },
        ],
        totalBytes: 107,
        stagedAt: NOW.toISOString(),
      },
    });
  });

  it('given a job without inputs, stages it at once', () => {
    expect(decideStaging(submitted('job-2', []), [], NOW)).toMatchObject({ type: 'InputsStaged', data: { inputs: [], totalBytes: 0 } });
  });

  it('given a missing blob, fails with blob_missing naming the input and saying to upload it', () => {
    const decision = decideStaging(job, [{ input: 'dataset', status: 'ok' }, { input: 'code', status: 'missing', sha256: sha('b2'), size: 7 }], NOW);
    expect(decision.type).toBe('StagingFailed');
    const data = decision.data as StagingFailed;
    expect(data).toMatchObject({ jobId: 'job-1', inputName: 'code', reason: 'blob_missing', failedAt: NOW.toISOString() });
    expect(data.message).toContain(`input \`code\` (sha256 ${sha('b2')}, 7 bytes) is not in the object store`);
    expect(data.message).toMatch(/Upload the inputs .* submit the job again/);
  });

  it('given several problems, reports the first in spec order as the reason and lists them all', () => {
    const checks: InputCheck[] = [
      { input: 'code', status: 'size_mismatch', sha256: sha('b2'), expected: 7, actual: 9 },
      { input: 'dataset', status: 'missing', sha256: sha('c3'), size: 50, file: 'train/part-0' },
    ];
    const data = decideStaging(job, checks, NOW).data as StagingFailed;
    expect(data.reason).toBe('blob_missing');
    expect(data.inputName).toBe('dataset');
    expect(data.message).toContain('file `train/part-0` of input `dataset`');
    expect(data.message).toContain('is stored with 9 bytes, the spec says 7');
  });

  it.each([
    [{ input: 'code', status: 'checksum_mismatch', sha256: sha('b2'), recorded: sha('ff') }, 'checksum_mismatch', /Upload the original file again/],
    [{ input: 'dataset', status: 'manifest_invalid', sha256: sha('a1'), detail: 'not JSON' }, 'manifest_invalid', /not a valid folder manifest: not JSON/],
  ] as const)('maps %p to its reason with a fix', (check, reason, text) => {
    const data = decideStaging(job, [check], NOW).data as StagingFailed;
    expect(data.reason).toBe(reason);
    expect(data.message).toMatch(text);
  });

  it('keeps the message within the contract for thousands of problems', () => {
    const many = Array.from({ length: 3000 }, (_, i) => ({ input: 'dataset', status: 'missing', sha256: sha('c3'), size: 1, file: `f${i}` }) as const);
    const data = decideStaging(job, many, NOW).data as StagingFailed;
    expect(data.message).toContain('and 2995 more');
    expect(StagingFailed.safeParse(data).success).toBe(true);
  });
});
