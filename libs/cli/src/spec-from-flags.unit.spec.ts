import { JobSpecInput, MAX_INLINE_SCRIPT_CHARS } from '#contracts';
import { checkJobFile, resolveInputs } from '#sdk';
import { UsageError } from './errors.js';
import { applyOverrides, flagForField, specFromFlags } from './spec-from-flags.js';

function usageIssues(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as UsageError).issues;
  }
  throw new Error('expected a UsageError');
}

describe('submit flags → job spec', () => {
  it('given only a script, when mapped, then it travels inline with 1 GPU and a 10m limit', () => {
    const spec = specFromFlags({}, { path: '/w/train.sh', text: 'echo hi\n' });
    expect(spec).toEqual({ work: { kind: 'script', script: { inline: 'echo hi\n' } }, request: { gpus: 1, timeLimit: '10m' } });
    expect(JobSpecInput.safeParse(spec).success).toBe(true);
  });

  it('given every flag, when mapped, then inputs are local `from:` paths placed at their names', () => {
    const spec = specFromFlags(
      {
        name: 'exp-7',
        interpreter: 'python3',
        gpus: '2',
        gpuModel: 'A100-80GB',
        timeLimit: '90m',
        deadline: '+6h',
        network: true,
        input: ['dataset=./data', 'weights=/abs/w.bin'],
        output: ['model/**', 'metrics.json'],
        env: ['LR=0.1', 'NOTE=a=b'],
      },
      { path: '/w/train.py', text: 'print(1)' },
    );
    expect(spec).toEqual({
      name: 'exp-7',
      work: { kind: 'script', script: { inline: 'print(1)' }, interpreter: 'python3', env: { LR: '0.1', NOTE: 'a=b' } },
      data: { inputs: [{ name: 'dataset', path: 'dataset', from: './data' }, { name: 'weights', path: 'weights', from: '/abs/w.bin' }] },
      request: { gpus: 2, gpuModel: 'A100-80GB', timeLimit: '90m', deadline: '+6h', network: true },
      outputs: { globs: ['model/**', 'metrics.json'] },
    });
    // What the SDK makes of it once uploaded satisfies the contract.
    expect(checkJobFile(spec).map((p) => p.name)).toEqual(['dataset', 'weights']);
    const uploaded = resolveInputs(spec, [0, 1].map((index) => ({ index, kind: 'file' as const, sha256: 'a'.repeat(64), size: 1 })));
    expect(JobSpecInput.safeParse(uploaded).success).toBe(true);
  });

  it('given a script over the inline limit, when mapped, then it becomes an input run by path', () => {
    const spec = specFromFlags({}, { path: '/w/big.sh', text: 'x'.repeat(MAX_INLINE_SCRIPT_CHARS + 1) });
    expect(spec.work).toEqual({ kind: 'script', script: { path: 'big.sh' } });
    expect(spec.data).toEqual({ inputs: [{ name: 'script', path: 'big.sh', kind: 'file', from: '/w/big.sh' }] });
  });

  it('given malformed flags, when mapped, then each is named with its fix', () => {
    const issues = usageIssues(() => specFromFlags({ gpus: 'two', input: ['dataset'], env: ['=x'] }, { path: 's', text: 'true' }));
    expect(issues.map((i) => i.path)).toEqual(['--input', '--gpus', '--env']);
    expect(issues.every((i) => i.fix)).toBe(true);
  });

  it('maps spec fields back to the flags that set them', () => {
    expect(flagForField('request.timeLimit')).toBe('--time-limit');
    expect(flagForField('data.inputs[1].name')).toBe('--input');
    expect(flagForField('work.env.LR')).toBe('--env');
    expect(flagForField('whatever')).toBeUndefined();
  });
});

describe('flags over a job file', () => {
  const file = {
    name: 'from-file',
    work: { kind: 'script', script: { path: 'train.sh' }, env: { A: '1' } },
    data: { inputs: [{ name: 'code', path: 'train.sh', from: './train.sh' }] },
    request: { gpus: 1, timeLimit: '5m' },
  };

  it('given flags, when applied, then they win field by field and the file is left as written', () => {
    const spec = applyOverrides(file, { name: 'override', gpus: '4', timeLimit: '1h', env: ['B=2'], input: ['extra=./x'], output: ['out/**'] });
    expect(spec).toEqual({
      name: 'override',
      work: { kind: 'script', script: { path: 'train.sh' }, env: { A: '1', B: '2' } },
      data: { inputs: [{ name: 'code', path: 'train.sh', from: './train.sh' }, { name: 'extra', path: 'extra', from: './x' }] },
      request: { gpus: 4, timeLimit: '1h' },
      outputs: { globs: ['out/**'] },
    });
    expect(file.request).toEqual({ gpus: 1, timeLimit: '5m' });
  });

  it('given no flags, when applied, then the spec is unchanged', () => {
    expect(applyOverrides(file, {})).toEqual(file);
  });

  it('refuses --script and --interpreter beside a job file', () => {
    expect(usageIssues(() => applyOverrides(file, { script: 'x.sh', interpreter: 'bash' })).map((i) => i.path)).toEqual(['--script', '--interpreter']);
  });
});
