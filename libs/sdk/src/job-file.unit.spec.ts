import { JobSpecInput } from '#contracts';
import { JobFileError } from './errors.js';
import { checkJobFile, parseJobFileText, resolveInputs, unresolvedInputs } from './job-file.js';

const JOB_YAML = `
name: demo-train
work:
  kind: script
  script: { path: code/train.sh }
  interpreter: bash
data:
  inputs:
    - { name: dataset, path: dataset, kind: folder, from: ./data }
    - { name: code, path: code/train.sh, from: train.sh }
    - { name: weights, path: w.bin, sha256: ${'a'.repeat(64)}, size: 10 }
request: { gpus: 2, timeLimit: 5m }
outputs: { globs: [model.bin, metrics.json] }
`;

function issuesOf(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(JobFileError);
    return (err as JobFileError).issues;
  }
  throw new Error('expected a JobFileError');
}

describe('job files with local inputs', () => {
  it('given a job.yaml with `from:` inputs, when checked, then lists them to upload', () => {
    const spec = parseJobFileText(JOB_YAML);
    expect(checkJobFile(spec)).toEqual([
      { index: 0, name: 'dataset', from: './data', kind: 'folder' },
      { index: 1, name: 'code', from: 'train.sh' },
    ]);
    expect(unresolvedInputs(spec)).toEqual(['data.inputs[0]', 'data.inputs[1]']);
  });

  it('given the uploads, when resolved, then the spec satisfies the contract and keeps the addressed input', () => {
    const spec = parseJobFileText(JOB_YAML);
    const resolved = resolveInputs(spec, [
      { index: 0, kind: 'folder', sha256: 'b'.repeat(64), size: 120 },
      { index: 1, kind: 'file', sha256: 'c'.repeat(64), size: 33 },
    ]);
    expect(unresolvedInputs(resolved)).toEqual([]);
    const parsed = JobSpecInput.parse(resolved);
    expect(parsed.data.inputs).toEqual([
      { name: 'dataset', path: 'dataset', kind: 'folder', sha256: 'b'.repeat(64), size: 120 },
      { name: 'code', path: 'code/train.sh', kind: 'file', sha256: 'c'.repeat(64), size: 33 },
      { name: 'weights', path: 'w.bin', kind: 'file', sha256: 'a'.repeat(64), size: 10 },
    ]);
    expect(spec.data).not.toBe(resolved.data); // the original is left as written
  });

  it('given bad fields beside `from:` inputs, when checked, then every problem is named with its fix before anything uploads', () => {
    const spec = parseJobFileText(`
work: { kind: script, script: { inline: "true" } }
data:
  inputs:
    - { name: a, path: a, from: "", }
    - { name: b, path: b, from: ./b, sha256: ${'a'.repeat(64)}, size: 1 }
request: { gpu: 1, timeLimit: 5m }
`);
    const issues = issuesOf(() => checkJobFile(spec));
    const paths = issues.map((i) => i.path);
    expect(paths).toEqual(expect.arrayContaining(['data.inputs[0].from', 'data.inputs[1]', 'request.gpu']));
    expect(issues.every((i) => typeof i.fix === 'string' && i.fix.length > 0)).toBe(true);
  });

  it('given text that is not YAML or not a mapping, when parsed, then says so', () => {
    expect(issuesOf(() => parseJobFileText('work: [unclosed'))[0]!.message).toMatch(/not valid YAML/);
    expect(issuesOf(() => parseJobFileText('- a\n- b'))[0]!.message).toBe('must be a mapping of fields');
  });
});
