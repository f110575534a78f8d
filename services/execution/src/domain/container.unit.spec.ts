import { CONTAINER_DIRS, containerEnv, containerRunArgs, missingRuntimeMessage, parseImageId, type ContainerRun } from './container.js';

const ID = `sha256:${'c'.repeat(64)}`;
const dirs = { inputs: '/w/runs/j/a/inputs', work: '/w/runs/j/a/work', outputs: '/w/runs/j/a/outputs', checkpoints: '/w/runs/j/a/checkpoints' };
const base: ContainerRun = { runtime: 'docker', name: 'gpunet-a1', imageId: ID, args: ['--epochs', '3'], env: { B: '2', A: '1' }, dirs, network: false };

describe('containerRunArgs', () => {
  it('runs the image by id with no network, no capabilities, the run’s directories and the env', () => {
    expect(containerRunArgs(base)).toEqual([
      'run', '--rm', '--init', '--name', 'gpunet-a1', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', '--network', 'none',
      '--volume', `${dirs.inputs}:/gpunet/inputs:ro`,
      '--volume', `${dirs.work}:/gpunet/work`,
      '--volume', `${dirs.outputs}:/gpunet/outputs`,
      '--volume', `${dirs.checkpoints}:/gpunet/checkpoints`,
      '--workdir', '/gpunet/work',
      '--env', 'A=1', '--env', 'B=2',
      ID, '--epochs', '3',
    ]);
  });

  it('adds the job user, limits, network, GPUs and an entrypoint override when asked', () => {
    const args = containerRunArgs({ ...base, user: { uid: 61000, gid: 61000 }, network: true, memoryBytes: 1 << 30, maxProcesses: 512, gpus: [1, 3], command: ['python', 'train.py'] });
    expect(args.join(' ')).toContain('--network bridge --user 61000:61000 --memory 1073741824 --memory-swap 1073741824 --pids-limit 512');
    expect(args.join(' ')).toContain('--gpus "device=1,3"');
    expect(args.slice(-6)).toEqual(['--entrypoint', 'python', ID, 'train.py', '--epochs', '3']);
    const podman = containerRunArgs({ ...base, runtime: 'podman', gpus: [0] });
    expect(podman).toContain('nvidia.com/gpu=0');
  });
});

describe('containerEnv', () => {
  it('points the platform variables inside the container and leaves PATH to the image', () => {
    const env = containerEnv({ PATH: '/usr/bin', HOME: '/w', TMPDIR: '/w', GPUNET_INPUT_DIR: dirs.inputs, GPUNET_JOB_ID: 'j', EPOCHS: '3' });
    expect(env).toEqual({
      GPUNET_INPUT_DIR: CONTAINER_DIRS.inputs,
      GPUNET_OUTPUT_DIR: CONTAINER_DIRS.outputs,
      GPUNET_CHECKPOINT_DIR: CONTAINER_DIRS.checkpoints,
      GPUNET_WORK_DIR: CONTAINER_DIRS.work,
      GPUNET_JOB_ID: 'j',
      HOME: CONTAINER_DIRS.work,
      EPOCHS: '3',
    });
  });
});

describe('image ids and messages', () => {
  it('accepts only sha256 image ids', () => {
    expect(parseImageId(`${ID}\n`)).toBe(ID);
    expect(parseImageId('ubuntu:24.04')).toBeUndefined();
  });

  it('names the missing runtime', () => {
    expect(missingRuntimeMessage('ghcr.io/acme/train:1', 'node-a')).toBe(
      'work.kind container (ghcr.io/acme/train:1) needs a container runtime (docker or podman), and node node-a has none that answers',
    );
  });
});
