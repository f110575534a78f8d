import { buildRunEnv, DEFAULT_PATH, jobEnvIssues } from './env.js';
import type { RunDirs } from './dirs.js';

const dirs: RunDirs = {
  root: '/r/runs/j1/a1',
  inputs: '/r/runs/j1/a1/inputs',
  work: '/r/runs/j1/a1/work',
  outputs: '/r/runs/j1/a1/outputs',
  checkpoints: '/r/runs/j1/a1/checkpoints',
  logs: '/r/runs/j1/a1/logs',
};

describe('buildRunEnv', () => {
  const hostEnv = { PATH: '/opt/bin:/usr/bin', LANG: 'de_DE.UTF-8', AWS_SECRET_ACCESS_KEY: 'hunter2', HOME: '/root', NATS_URL: 'nats://x' };

  it('copies only allow-listed host names and sets the platform variables', () => {
    const env = buildRunEnv({ jobId: 'j1', attemptId: 'a1', dirs, gpus: [2, 0], hostEnv });
    expect(env).toEqual({
      PATH: '/opt/bin:/usr/bin',
      LANG: 'de_DE.UTF-8',
      HOME: dirs.work,
      TMPDIR: dirs.work,
      TZ: 'UTC',
      CUDA_VISIBLE_DEVICES: '2,0',
      GPUNET_JOB_ID: 'j1',
      GPUNET_ATTEMPT_ID: 'a1',
      GPUNET_INPUT_DIR: dirs.inputs,
      GPUNET_OUTPUT_DIR: dirs.outputs,
      GPUNET_CHECKPOINT_DIR: dirs.checkpoints,
      GPUNET_WORK_DIR: dirs.work,
      GPUNET_NODE_RANK: '0',
      GPUNET_NUM_NODES: '1',
    });
  });

  it('falls back to a neutral PATH and LANG, and hides all GPUs from a job that holds none', () => {
    const env = buildRunEnv({ jobId: 'j1', attemptId: 'a1', dirs, gpus: [], hostEnv: {} });
    expect(env.PATH).toBe(DEFAULT_PATH);
    expect(env.LANG).toBe('C.UTF-8');
    expect(env.CUDA_VISIBLE_DEVICES).toBe('');
  });

  it('lets the job override host values and defaults, never the platform ones', () => {
    const env = buildRunEnv({
      jobId: 'j1',
      attemptId: 'a1',
      dirs,
      gpus: [1],
      hostEnv,
      passEnv: ['PATH', 'NATS_URL'],
      jobEnv: { PATH: '/venv/bin:/usr/bin', TZ: 'Europe/Paris', EPOCHS: '3', CUDA_VISIBLE_DEVICES: '0,1,2,3', GPUNET_OUTPUT_DIR: '/etc' },
    });
    expect(env.PATH).toBe('/venv/bin:/usr/bin');
    expect(env.TZ).toBe('Europe/Paris');
    expect(env.EPOCHS).toBe('3');
    expect(env.NATS_URL).toBe('nats://x'); // an operator's explicit choice
    expect(env.CUDA_VISIBLE_DEVICES).toBe('1');
    expect(env.GPUNET_OUTPUT_DIR).toBe(dirs.outputs);
  });
});

describe('jobEnvIssues', () => {
  it('accepts ordinary variables', () => {
    expect(jobEnvIssues({ EPOCHS: '3', _x: '', lr: '0.1' })).toEqual([]);
    expect(jobEnvIssues(undefined)).toEqual([]);
  });

  it('refuses bad names, platform names and NUL characters, each with a path', () => {
    const issues = jobEnvIssues({ '1X': 'a', 'A=B': 'b', GPUNET_JOB_ID: 'c', CUDA_VISIBLE_DEVICES: '0', NVIDIA_VISIBLE_DEVICES: 'all', OK: 'x\0y' });
    expect(issues.map((i) => i.path).sort()).toEqual(
      ['env.1X', 'env.A=B', 'env.CUDA_VISIBLE_DEVICES', 'env.GPUNET_JOB_ID', 'env.NVIDIA_VISIBLE_DEVICES', 'env.OK'].sort(),
    );
    expect(issues.find((i) => i.path === 'env.GPUNET_JOB_ID')?.message).toMatch(/platform/);
  });
});
