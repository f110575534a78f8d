import type { AuditJobSummary } from '#contracts';
import { describe, expect, it } from '@jest/globals';
import { auditCsv, csvField, renderAuditJobs } from './audit.js';

const job = (over: Partial<AuditJobSummary> = {}): AuditJobSummary => ({
  jobId: 'job-1',
  team: 'team-a',
  name: 'train, "big"',
  submittedAt: '2026-06-01T10:00:00.000Z',
  outcome: 'completed',
  attempts: 2,
  nodes: ['node-1', 'node-2'],
  gpuModels: ['A100'],
  gpus: 2,
  durations: { stagingMs: 10, queuedMs: 20, heldMs: 30, runningMs: 25 },
  outputs: { files: 1, totalBytes: 42 },
  billableMs: 30,
  totals: [{ currency: 'EUR', amountMicros: 1_500_000 }],
  ...over,
});

describe('audit output', () => {
  it('quotes CSV fields holding commas, quotes or line breaks (RFC 4180), and leaves the rest bare', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(undefined)).toBe('');
    expect(csvField(0)).toBe('0');
  });

  it('one CSV line per job: integer ms per phase (empty when it did not happen), integer micro-units', () => {
    const [header, row] = auditCsv([job()]).trimEnd().split('\n');
    expect(header!.split(',')).toHaveLength(20);
    expect(row).toBe('job-1,team-a,"train, ""big""",2026-06-01T10:00:00.000Z,completed,2,node-1 node-2,A100,2,10,20,30,25,,,1,42,30,EUR,1500000');
  });

  it('the table says when nothing matches and when the limit cut the list', () => {
    expect(renderAuditJobs({ jobs: [], total: 0, asOfPosition: '7' })).toBe('no jobs match (store position 7)');
    const text = renderAuditJobs({ jobs: [job()], total: 3, asOfPosition: '9' });
    expect(text).toMatch(/^JOB +TEAM/);
    expect(text).toContain('1.500000 EUR');
    expect(text).toContain('(2 more: raise --limit)');
  });
});
