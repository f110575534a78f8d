import { OutputsStored, StoreOutputs } from '#contracts';
import { at, sha } from './fixtures.js';
import { decideOutputs, outputBlobs, recordedOutputs, stagingDecided } from './outputs.js';

const NOW = new Date(at(9_000));
const request = StoreOutputs.parse({
  jobId: 'job-1',
  team: 'team-a',
  attemptId: 'job-1-a1',
  nodeId: 'node-1',
  files: [
    { path: 'model/weights.bin', sha256: sha('a1'), size: 1000 },
    { path: 'metrics.json', sha256: sha('b2'), size: 20 },
  ],
  logs: [{ stream: 'stdout', sha256: sha('c3'), size: 5 }],
});

describe('decideOutputs', () => {
  it('given every blob present, records files, logs and the total of the files', () => {
    const decision = decideOutputs(request, [{ status: 'ok' }, { status: 'ok' }, { status: 'ok' }], NOW);
    expect(decision).toEqual({
      ok: true,
      data: {
        jobId: 'job-1',
        attemptId: 'job-1-a1',
        files: request.files,
        totalBytes: 1020,
        truncated: false,
        rejected: [],
        logs: request.logs,
        storedAt: NOW.toISOString(),
      },
    });
    expect(OutputsStored.safeParse((decision as { data: unknown }).data).success).toBe(true);
  });

  it('records the files the agent refused, with their reason, in the job\'s OutputsStored', () => {
    const refused = StoreOutputs.parse({
      ...request,
      truncated: true,
      rejected: [
        { path: 'escape.txt', reason: 'symlink_outside', message: 'escape.txt is a symlink pointing outside the output directory; it was not followed' },
        { path: 'z-big.bin', reason: 'size_cap', message: 'z-big.bin (2000 bytes) was not kept: the outputs size cap of 1500 bytes was reached' },
      ],
    });
    const decision = decideOutputs(refused, [{ status: 'ok' }, { status: 'ok' }, { status: 'ok' }], NOW);
    expect(decision).toMatchObject({ ok: true, data: { truncated: true, rejected: refused.rejected } });
    expect(OutputsStored.parse((decision as { data: unknown }).data).rejected.map((r) => r.reason)).toEqual(['symlink_outside', 'size_cap']);
  });

  it('given missing and wrong blobs, refuses with one issue per blob by field, each with a fix', () => {
    const decision = decideOutputs(request, [{ status: 'missing' }, { status: 'size_mismatch', actual: 21 }, { status: 'checksum_mismatch', recorded: undefined }], NOW);
    expect(decision.ok).toBe(false);
    const issues = (decision as { issues: { path: string; message: string; fix: string }[] }).issues;
    expect(issues.map((i) => i.path)).toEqual(['files.0', 'files.1', 'logs.0']);
    expect(issues[0]!.message).toContain('output `model/weights.bin`');
    expect(issues[1]!.message).toContain('stored with 21 bytes, the request says 20');
    expect(issues[2]!.message).toContain('stdout log');
    expect(issues.every((i) => i.fix.length > 0)).toBe(true);
  });

  it('lists the blobs to check files first, then logs', () => {
    expect(outputBlobs(request).map((b) => b.path)).toEqual(['files.0', 'files.1', 'logs.0']);
  });

  it('refuses a check list that does not match the request', () => {
    expect(() => decideOutputs(request, [{ status: 'ok' }], NOW)).toThrow(RangeError);
  });
});

describe('recordedOutputs / stagingDecided', () => {
  const stored = { jobId: 'job-1', attemptId: 'job-1-a1', files: [], totalBytes: 0, truncated: false, logs: [], storedAt: NOW.toISOString() };
  const events = [
    { type: 'InputsStaged', data: {} },
    { type: 'OutputsStored', data: stored },
  ];

  it('finds the attempt\'s record and only that attempt\'s', () => {
    expect(recordedOutputs(events, 'job-1-a1')).toBe(stored);
    expect(recordedOutputs(events, 'job-1-a2')).toBeUndefined();
  });

  it('tells whether staging was decided', () => {
    expect(stagingDecided(events)).toBe(true);
    expect(stagingDecided([{ type: 'StagingFailed' }])).toBe(true);
    expect(stagingDecided([{ type: 'OutputsStored' }])).toBe(false);
  });
});
