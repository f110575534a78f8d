import { parse as parseYaml } from 'yaml';
import { JobSpec, JobSpecInput, jobEnvIssues, MAX_TIME_LIMIT_MS, parseJobSpec, parseSize, toJobSpec, type FieldIssue } from './index.js';

const SHA = 'a'.repeat(64);

const jobYaml = `
name: resnet50-finetune
work:
  kind: script
  script: { path: code/train.sh }
  interpreter: bash
  args: ["--epochs", "3"]
  env: { LEARNING_RATE: "0.1" }
data:
  inputs:
    - { name: dataset, kind: folder, path: data/train, sha256: ${SHA}, size: 2048, keep: 7d }
    - { name: code, path: code/train.sh, sha256: ${'b'.repeat(64)}, size: 311 }
request:
  gpus: 2
  gpuModel: A100-80GB
  timeLimit: 1h30m
  deadline: +6h
outputs:
  globs: ["model/**", "metrics.json"]
  maxBytes: 10000000000
`;

function issuesOf(raw: unknown): FieldIssue[] {
  const result = parseJobSpec(raw);
  if (result.ok) throw new Error('expected the spec to be refused');
  return result.issues;
}

function byPath(issues: FieldIssue[]): Map<string, FieldIssue> {
  return new Map(issues.map((i) => [i.path, i]));
}

describe('job spec as people write it', () => {
  it('parses a job.yaml and normalizes durations to integer ms with defaults filled', () => {
    const result = parseJobSpec(parseYaml(jobYaml));
    expect(result).toEqual({
      ok: true,
      spec: {
        name: 'resnet50-finetune',
        work: {
          kind: 'script',
          script: { path: 'code/train.sh' },
          interpreter: 'bash',
          args: ['--epochs', '3'],
          env: { LEARNING_RATE: '0.1' },
        },
        data: {
          inputs: [
            { name: 'dataset', kind: 'folder', path: 'data/train', sha256: SHA, size: 2048, keepMs: 7 * 86_400_000 },
            { name: 'code', kind: 'file', path: 'code/train.sh', sha256: 'b'.repeat(64), size: 311 },
          ],
        },
        request: { gpus: 2, gpuModel: 'A100-80GB', timeLimitMs: 5_400_000, deadline: '+6h', network: false },
        outputs: { globs: ['model/**', 'metrics.json'], maxBytes: 10_000_000_000 },
      },
    });
  });

  it('fills every default of a minimal container spec, and the result satisfies the message form', () => {
    const result = parseJobSpec({
      work: { kind: 'container', image: 'ghcr.io/acme/train:1.4', command: ['python', 'train.py'] },
      request: { gpus: 1, timeLimit: '45s', deadline: '2025-07-01T18:00:00+02:00', network: true },
    });
    expect(result.ok && result.spec).toEqual({
      work: { kind: 'container', image: 'ghcr.io/acme/train:1.4', command: ['python', 'train.py'], args: [], env: {} },
      data: { inputs: [] },
      request: { gpus: 1, timeLimitMs: 45_000, deadline: '2025-07-01T18:00:00+02:00', network: true },
      outputs: { globs: ['**'] },
    });
    expect(JobSpec.safeParse(result.ok && result.spec).success).toBe(true);
  });

  it('keeps a deadline phrase as written (intake resolves it in the team zone) and refuses prose', () => {
    for (const deadline of ['tonight', 'by end of day', 'Tomorrow 09:00', 'today 18:00', 'by end of week', 'in 6h', 'in 1h 30m', '2026-07-01 18:00', '+90m']) {
      const result = parseJobSpec({ work: { kind: 'script', script: { inline: 'x' } }, request: { gpus: 1, timeLimit: '1m', deadline } });
      expect(result.ok && result.spec.request.deadline).toBe(deadline);
    }
    for (const deadline of ['next tuesday', 'in a while', 'tomorrow at 9']) {
      const result = parseJobSpec({ work: { kind: 'script', script: { inline: 'x' } }, request: { gpus: 1, timeLimit: '1m', deadline } });
      expect(!result.ok && result.issues.map((i) => i.path)).toEqual(['request.deadline']);
    }
  });

  it('accepts an inline script', () => {
    const result = parseJobSpec({ work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1m' } });
    expect(result.ok && result.spec.work).toEqual({ kind: 'script', script: { inline: 'echo hi' }, args: [], env: {} });
  });

  it('names every bad field with what is wrong and how to fix it', () => {
    const issues = issuesOf({
      work: { kind: 'script', script: { path: 'a.sh', inline: 'echo' }, args: ['--n', 3], env: { LR: 0.1, GPUNET_INPUT_DIR: '/x' } },
      data: {
        inputs: [
          { name: 'd', path: '../etc', sha256: 'ABC', size: -1 },
          { name: 'd', path: 'y', sha256: SHA, size: 1, keep: 'forever' },
        ],
      },
      request: { gpus: 0, gpu: 'A100', timeLimit: '2 hours', deadline: 'next week sometime', network: 'yes' },
      outputs: { globs: ['/abs/**'], maxBytes: 0 },
      color: 'blue',
    });
    const paths = byPath(issues);
    expect([...paths.keys()].sort()).toEqual(
      [
        'work.script',
        'work.args[1]',
        'work.env.LR',
        'work.env.GPUNET_INPUT_DIR',
        'data.inputs[0].path',
        'data.inputs[0].sha256',
        'data.inputs[0].size',
        'data.inputs[1].keep',
        'data.inputs[1].name',
        'request.gpus',
        'request.gpu',
        'request.timeLimit',
        'request.deadline',
        'request.network',
        'outputs.globs[0]',
        'outputs.maxBytes',
        'color',
      ].sort(),
    );
    for (const issue of issues) {
      expect(issue.message.length).toBeGreaterThan(10);
      expect(issue.fix).toEqual(expect.any(String));
    }
    expect(paths.get('request.gpus')).toEqual({ path: 'request.gpus', message: 'gpus must be a whole number ≥ 1', fix: 'write e.g. `gpus: 2`' });
    expect(paths.get('request.gpu')?.fix).toMatch(/did you mean `gpus`\?/);
    expect(paths.get('work.env.LR')?.fix).toMatch(/quote numbers/);
    expect(paths.get('data.inputs[1].name')?.message).toMatch(/already used by input 0/);
    expect(paths.get('request.timeLimit')?.fix).toBe('write e.g. `timeLimit: 2h`');
    // One message per field even when a value breaks two rules (pattern and range).
    expect(issues.filter((i) => i.path === 'request.timeLimit')).toHaveLength(1);
  });

  it('says a required field is missing rather than complaining about its type', () => {
    const paths = byPath(issuesOf({ work: { kind: 'script', script: { path: 'a.sh' } }, request: { gpus: 1 } }));
    expect(paths.get('request.timeLimit')?.message).toMatch(/^timeLimit is missing; it must be a duration/);
    expect([...paths.keys()]).toEqual(['request.timeLimit']);
  });

  it('explains an unknown work kind and a spec that is not a mapping', () => {
    expect(byPath(issuesOf({ work: { kind: 'docker' }, request: { gpus: 1, timeLimit: '1h' } })).get('work.kind')).toEqual({
      path: 'work.kind',
      message: 'work must have `kind: script` or `kind: container`',
      fix: 'write e.g. `work: { kind: script, script: { path: train.sh } }`',
    });
    expect(issuesOf('run my job')).toEqual([
      {
        path: '',
        message: 'the job spec must be a mapping of fields',
        fix: 'write it as a mapping with fields `name`, `work`, `data`, `request`, `outputs`, `retry`, `checkpoint`, `resources`',
      },
    ]);
  });

  it('bounds the time limit: more than zero, at most 30 days', () => {
    const spec = (timeLimit: string) => ({ work: { kind: 'container', image: 'x' }, request: { gpus: 1, timeLimit } });
    expect(parseJobSpec(spec('30d')).ok).toBe(true);
    expect(parseJobSpec(spec('0s')).ok).toBe(false);
    expect(parseJobSpec(spec('30d1ms')).ok).toBe(false);
    expect(toJobSpec(JobSpecInput.parse(spec('30d'))).request.timeLimitMs).toBe(MAX_TIME_LIMIT_MS);
  });
});

describe('job spec as messages carry it', () => {
  it('tolerates fields it does not know yet, so an additive change keeps the version', () => {
    const parsed = parseJobSpec(parseYaml(jobYaml));
    if (!parsed.ok) throw new Error('fixture must parse');
    const newer = { ...parsed.spec, priority: 'high', request: { ...parsed.spec.request, gpuMemoryMiB: 40_000 } };
    expect(JobSpec.safeParse(newer).success).toBe(true);
  });

  it('carries the time limit only as integer ms', () => {
    const parsed = parseJobSpec(parseYaml(jobYaml));
    if (!parsed.ok) throw new Error('fixture must parse');
    const { timeLimitMs: _ms, ...withoutMs } = parsed.spec.request;
    expect(JobSpec.safeParse({ ...parsed.spec, request: { ...withoutMs, timeLimit: '2h' } }).success).toBe(false);
    expect(JobSpec.safeParse({ ...parsed.spec, request: { ...parsed.spec.request, timeLimitMs: 1.5 } }).success).toBe(false);
  });
});

describe('job spec: unattended runs (warning, retry, checkpoint)', () => {
  const base = { work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '2h' } };

  it('normalizes the warning, the retry policy and the checkpoint interval', () => {
    const result = parseJobSpec({
      ...base,
      request: { ...base.request, warning: { before: '60s' } },
      retry: { exitCodes: [75], maxAttempts: 3 },
      checkpoint: { interval: '10m' },
    });
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.spec.request.warning).toEqual({ signal: 'SIGUSR1', beforeMs: 60_000 });
    expect(result.spec.retry).toEqual({ exitCodes: [75], maxAttempts: 3 });
    expect(result.spec.checkpoint).toEqual({ intervalMs: 600_000 });
    expect(JobSpec.parse(result.spec)).toEqual(result.spec);
  });

  it('leaves them out when not asked for', () => {
    const result = parseJobSpec(base);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.spec.request.warning).toBeUndefined();
    expect(result.spec.retry).toBeUndefined();
    expect(result.spec).not.toHaveProperty('checkpoint');
  });

  it('says what to fix in each bad field', () => {
    const issues = byPath(
      issuesOf({
        ...base,
        request: { ...base.request, warning: { signal: 'SIGKILL', before: '60s' } },
        retry: { exitCodes: [0], maxAttempts: 1 },
        checkpoint: { interval: '1s' },
      }),
    );
    expect(issues.get('request.warning.signal')?.message).toMatch(/SIGUSR1/);
    expect(issues.get('retry.exitCodes[0]')?.message).toMatch(/1 to 255/);
    expect(issues.get('retry.maxAttempts')?.message).toMatch(/from 2 to 10/);
    expect(issues.get('checkpoint.interval')?.message).toMatch(/at least 10s/);
    const late = issuesOf({ ...base, request: { ...base.request, timeLimit: '1m', warning: { before: '2m' } } });
    expect(late).toEqual([expect.objectContaining({ path: 'request.warning.before', message: 'must be shorter than the time limit' })]);
  });
});

describe('job spec: named datasets', () => {
  const base = { work: { kind: 'script', script: { inline: 'true' } }, request: { gpus: 1, timeLimit: '1m' } };
  it('carries an input\'s dataset name into the spec messages carry', () => {
    const r = parseJobSpec({ ...base, data: { inputs: [{ name: 'train', path: 'data', sha256: SHA, size: 1, dataset: 'imagenet-2012' }] } });
    expect(r.ok && r.spec.data.inputs[0]).toMatchObject({ name: 'train', dataset: 'imagenet-2012' });
    expect(JobSpec.parse(r.ok ? r.spec : undefined).data.inputs[0]!.dataset).toBe('imagenet-2012');
  });

  it('refuses a dataset name that is not a name, saying how to write one', () => {
    const r = parseJobSpec({ ...base, data: { inputs: [{ name: 'train', path: 'data', sha256: SHA, size: 1, dataset: '../other' }] } });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.issues.find((i) => i.path === 'data.inputs[0].dataset')).toMatchObject({ fix: 'write e.g. `dataset: imagenet-2012`' });
  });
});

describe('job spec: what the agent would refuse is refused at submit', () => {
  const base = (over: { env?: Record<string, string>; path?: string }) => ({
    work: { kind: 'script', script: { inline: 'true' }, ...(over.env ? { env: over.env } : {}) },
    data: { inputs: [{ name: 'ds', kind: 'folder', path: over.path ?? 'data', sha256: SHA, size: 10 }] },
    request: { gpus: 1, timeLimit: '1m' },
  });

  it.each(['.', './', './.', './/.'])('refuses the input path %j, which names the inputs directory itself, with a fix', (path) => {
    const issue = issuesOf(base({ path })).find((i) => i.path === 'data.inputs[0].path');
    expect(issue?.message).toMatch(/names the inputs directory itself/);
    expect(issue?.fix).toMatch(/path: data/);
  });

  it('accepts paths below the inputs directory, however written', () => {
    for (const path of ['data', './data', 'a/./b', 'data/']) expect(parseJobSpec(base({ path })).ok).toBe(true);
  });

  it.each(['NVIDIA_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES', 'GPUNET_NODE_RANK'])('refuses env %s, which the agent sets', (name) => {
    const issues = issuesOf(base({ env: { [name]: 'all' } }));
    expect(issues.some((i) => i.path.startsWith('work.env') && /agent sets/.test(i.message))).toBe(true);
  });

  it('still accepts a name that only starts like a reserved one', () => {
    expect(parseJobSpec(base({ env: { NVIDIA_VISIBLE_DEVICES_X: '1', CUDA_VISIBLE_DEVICES2: '0' } })).ok).toBe(true);
  });
});

describe('resources', () => {
  const base = { work: { kind: 'script', script: { inline: 'echo hi' } }, request: { gpus: 1, timeLimit: '1h' } };
  it('takes memory and disk caps in bytes or with units, and carries them in bytes', () => {
    const parsed = parseJobSpec({ ...base, resources: { memory: '16GiB', disk: 500_000_000 } });
    expect(parsed.ok && parsed.spec.resources).toEqual({ memoryBytes: 16 * 2 ** 30, diskBytes: 500_000_000 });
    const none = parseJobSpec(base);
    expect(none.ok && none.spec.resources).toBeUndefined();
  });
  it('names the field and the fix for a size it cannot read or that is too small', () => {
    const parsed = parseJobSpec({ ...base, resources: { memory: 'lots', disk: '10KiB' } });
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.issues.map((i) => i.path)).toEqual(['resources.memory', 'resources.disk']);
    expect(parsed.issues[0]!.fix).toMatch(/memory: 16GiB/);
  });
  it('reads sizes', () => {
    expect([parseSize('1GiB'), parseSize('1.5 GB'), parseSize('100'), parseSize(7), parseSize('2XB'), parseSize(-1)]).toEqual([2 ** 30, 1.5e9, 100, 7, undefined, undefined]);
  });
});

describe('job spec: one rule for env, shared with the agent', () => {
  const withEnv = (env: Record<string, string>, kind: 'script' | 'container' = 'script') => ({
    work: kind === 'script' ? { kind, script: { inline: 'true' }, env } : { kind, image: 'busybox', env },
    request: { gpus: 1, timeLimit: '1m' },
  });
  const cases: [string, string][] = [
    ['EPOCHS', '3'],
    ['_x', ''],
    ['lr', '0.1'],
    ['1X', 'a'],
    ['A=B', 'b'],
    ['A B', 'b'],
    ['', 'b'],
    ['GPUNET_JOB_ID', 'c'],
    ['GPUNET_', 'c'],
    ['CUDA_VISIBLE_DEVICES', '0'],
    ['NVIDIA_VISIBLE_DEVICES', 'all'],
    ['NVIDIA_VISIBLE_DEVICES_X', '1'],
    ['X'.repeat(128), 'long name'],
    ['X'.repeat(129), 'too long a name'],
    ['NUL_IN_VALUE', 'x\0y'],
    ['NEWLINE_IN_VALUE', 'x\ny'],
  ];

  it.each(cases)('submit and the agent agree on %j = %j', (name, value) => {
    const refusedByAgent = jobEnvIssues({ [name]: value }).length > 0;
    for (const kind of ['script', 'container'] as const) {
      const result = parseJobSpec(withEnv({ [name]: value }, kind));
      expect({ name, kind, refusedAtSubmit: !result.ok }).toEqual({ name, kind, refusedAtSubmit: refusedByAgent });
      if (!result.ok) expect(result.issues.every((i) => i.path.startsWith('work.env') && i.fix !== undefined)).toBe(true);
    }
  });

  it('refuses a NUL character in a value at submit, naming the variable and the fix', () => {
    const issues = issuesOf(withEnv({ OK_NAME: 'x\0y' }));
    expect(issues).toEqual([expect.objectContaining({ path: 'work.env.OK_NAME', message: expect.stringMatching(/NUL/), fix: expect.any(String) })]);
  });

  it('names each refused variable with what the agent would say', () => {
    expect(jobEnvIssues({ NVIDIA_VISIBLE_DEVICES: 'all', '1X': 'a', OK: 'x\0y', FINE: '1' }, 'work.env').map((i) => i.path).sort()).toEqual(['work.env.1X', 'work.env.NVIDIA_VISIBLE_DEVICES', 'work.env.OK']);
  });
});

describe('job spec: input paths that would collide on the node', () => {
  const withInputs = (inputs: { path: string; kind?: 'file' | 'folder' }[]) => ({
    work: { kind: 'script', script: { inline: 'true' } },
    data: { inputs: inputs.map((i, n) => ({ name: `in${n}`, kind: i.kind ?? 'file', path: i.path, sha256: SHA, size: 10 })) },
    request: { gpus: 1, timeLimit: '1m' },
  });

  it.each([
    ['data', './data'],
    ['data', 'data/'],
    ['a/b', 'a//b'],
    ['a/./b', './a/b/'],
  ])('refuses %j and %j, one place written twice (the second would replace the first)', (first, second) => {
    const issue = issuesOf(withInputs([{ path: first }, { path: second }])).find((i) => i.path === 'data.inputs[1].path');
    expect(issue).toEqual({ path: 'data.inputs[1].path', message: expect.stringMatching(/same place as input 0/), fix: expect.any(String) });
  });

  it('refuses an input below a file input (nothing can be placed inside a file), whichever comes first', () => {
    expect(issuesOf(withInputs([{ path: 'a' }, { path: 'a/b' }]))).toEqual([expect.objectContaining({ path: 'data.inputs[1].path', message: expect.stringMatching(/below input 0, a file/) })]);
    expect(issuesOf(withInputs([{ path: './a/b/c' }, { path: 'a' }]))).toEqual([expect.objectContaining({ path: 'data.inputs[0].path', message: expect.stringMatching(/below input 1, a file/) })]);
  });

  it('accepts inputs side by side and files placed into a folder input', () => {
    expect(parseJobSpec(withInputs([{ path: 'a' }, { path: 'ab' }, { path: 'b/a' }])).ok).toBe(true);
    expect(parseJobSpec(withInputs([{ path: 'data', kind: 'folder' }, { path: 'data/extra.txt' }])).ok).toBe(true);
  });

  it('leaves recorded specs as they were: messages are not refused for it', () => {
    const recorded = JobSpec.safeParse({
      work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
      data: { inputs: [{ name: 'x', kind: 'file', path: 'a', sha256: SHA, size: 1 }, { name: 'y', kind: 'file', path: 'a/b', sha256: SHA, size: 1 }] },
      request: { gpus: 1, timeLimitMs: 60_000, network: false },
      outputs: { globs: ['**'] },
    });
    expect(recorded.success).toBe(true);
  });
});

describe('job spec: a container image as data (`work.archive`)', () => {
  const sha = 'a'.repeat(64);
  const container = (extra: Record<string, unknown> = {}) => ({ work: { kind: 'container', image: 'train:1', archive: { sha256: sha, size: 4096, keep: '1d' } }, request: { gpus: 1, timeLimit: '1h' }, ...extra });

  it('becomes one more input, staged and cached like the job’s data, kept as asked', () => {
    const got = parseJobSpec(container());
    if (!got.ok) throw new Error(JSON.stringify(got.issues));
    expect(got.spec.data.inputs).toEqual([{ name: 'gpunet-image', path: `.gpunet-image/${sha}.tar`, kind: 'file', sha256: sha, size: 4096, keepMs: 86_400_000 }]);
    expect(JobSpec.safeParse(got.spec).success).toBe(true);
  });

  it('refuses an input that takes the archive’s name or place, and an archive without its size', () => {
    const clash = parseJobSpec(container({ data: { inputs: [{ name: 'gpunet-image', path: 'x', sha256: 'b'.repeat(64), size: 1 }] } }));
    expect(clash.ok ? [] : clash.issues.map((i) => i.path)).toEqual(['data.inputs.0']);
    const place = parseJobSpec(container({ data: { inputs: [{ name: 'mine', path: './.gpunet-image/x.tar', sha256: 'b'.repeat(64), size: 1 }] } }));
    expect(place.ok).toBe(false);
    const noSize = parseJobSpec({ work: { kind: 'container', image: 'train:1', archive: { sha256: sha } }, request: { gpus: 1, timeLimit: '1h' } });
    expect(noSize.ok ? [] : noSize.issues.map((i) => i.path)).toEqual(['work.archive.size']);
  });
});
