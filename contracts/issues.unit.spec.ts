import { z } from 'zod';
import { FIX_MARKER, fieldError, formatIssues, formatPath, splitFix, strictObject, withFix } from './index.js';

describe('field issues', () => {
  it('renders paths as people read them', () => {
    expect(formatPath([])).toBe('');
    expect(formatPath(['request', 'gpus'])).toBe('request.gpus');
    expect(formatPath(['data', 'inputs', 0, 'sha256'])).toBe('data.inputs[0].sha256');
    expect(formatPath(['work', 'env', 'odd.key'])).toBe('work.env["odd.key"]');
  });

  it('keeps the fix apart from the problem', () => {
    const text = withFix('gpus must be ≥ 1', 'write e.g. `gpus: 2`');
    expect(text).toBe(`gpus must be ≥ 1${FIX_MARKER}write e.g. \`gpus: 2\``);
    expect(splitFix(text)).toEqual({ message: 'gpus must be ≥ 1', fix: 'write e.g. `gpus: 2`' });
    expect(splitFix('Invalid input')).toEqual({ message: 'Invalid input' });
  });

  it('reports a bad record key at the key, with the key schema\'s own message', () => {
    const schema = z.record(z.string().regex(/^[A-Z]+$/, { error: fieldError('env name', 'must be upper case', 'write `LR`') }), z.string());
    const result = schema.safeParse({ lr: 'x' });
    expect(result.success).toBe(false);
    expect(formatIssues(result.error!)).toEqual([{ path: 'lr', message: 'env name must be upper case', fix: 'write `LR`' }]);
  });

  it('gives one issue per unknown field, and suggests the nearest known one', () => {
    const schema = strictObject({ gpus: z.int(), timeLimit: z.string() }, 'request');
    const result = schema.safeParse({ gpus: 1, timeLimit: '1h', timelimit: '2h', colour: 'red' });
    expect(formatIssues(result.error!)).toEqual([
      {
        path: 'timelimit',
        message: 'request has unknown fields `timelimit`, `colour`',
        fix: 'rename `timelimit` → `timeLimit` and remove the rest; known fields: `gpus`, `timeLimit`',
      },
      {
        path: 'colour',
        message: 'request has unknown fields `timelimit`, `colour`',
        fix: 'rename `timelimit` → `timeLimit` and remove the rest; known fields: `gpus`, `timeLimit`',
      },
    ]);
  });

  it('offers a fallback fix when a schema without authored messages misses a field', () => {
    const result = z.object({ a: z.object({ b: z.string() }) }).safeParse({ a: {} });
    expect(formatIssues(result.error!)).toEqual([{ path: 'a.b', message: 'Invalid input: expected string, received undefined', fix: 'add `a.b`' }]);
  });
});
