import { CONTAINER_DIRS, containerEnv, containerRunArgs, gpuAccess, missingRuntimeMessage, parseImageId, podmanGlobalArgs, type ContainerRun } from './container.js';

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
    const cdi = gpuAccess({ cdi: true, deviceNodes: [] }, [1, 3]);
    const args = containerRunArgs({ ...base, user: { uid: 61000, gid: 61000 }, network: true, memoryBytes: 1 << 30, maxProcesses: 512, gpus: cdi, command: ['python', 'train.py'] });
    expect(args.join(' ')).toContain('--network bridge --user 61000:61000 --memory 1073741824 --memory-swap 1073741824 --pids-limit 512 --ulimit nproc=512:512');
    expect(args.join(' ')).toContain('--gpus "device=1,3"');
    expect(args.join(' ')).toContain('--env NVIDIA_VISIBLE_DEVICES=1,3');
    expect(args.slice(-5)).toEqual(['--entrypoint=python', ID, 'train.py', '--epochs', '3']);
    const podman = containerRunArgs({ ...base, runtime: 'podman', gpus: gpuAccess({ cdi: true, deviceNodes: [] }, [0]) });
    expect(podman.join(' ')).toContain('--device nvidia.com/gpu=0');
  });

  it('puts podman’s global arguments first, caps open files and makes the root file system read-only with bounded tmpfs mounts', () => {
    const args = containerRunArgs({ ...base, runtime: 'podman', globalArgs: ['--runtime', '/usr/sbin/runc', '--cgroup-manager', 'cgroupfs'], openFiles: 1024, tmpfsBytes: 4096 });
    expect(args.slice(0, 5)).toEqual(['--runtime', '/usr/sbin/runc', '--cgroup-manager', 'cgroupfs', 'run']);
    const line = args.join(' ');
    expect(line).toContain('--ulimit nofile=1024:1024');
    expect(line).toContain('--read-only --read-only-tmpfs=false --tmpfs /tmp:rw,nosuid,nodev,size=4096,mode=1777 --tmpfs /var/tmp:rw,nosuid,nodev,size=4096,mode=1777 --tmpfs /run:rw,nosuid,nodev,size=4096,mode=1777 --shm-size 4096');
    expect(line).not.toMatch(/--privileged|--cap-add|--security-opt (?!no-new-privileges)|--device(?! nvidia)/);
  });

  it('never turns the job’s own values into flags: a command or argument that looks like a flag stays after the image', () => {
    const args = containerRunArgs({ ...base, runtime: 'podman', command: ['--privileged'], args: ['--device=/dev/sda'] });
    const image = args.indexOf(ID);
    expect(args).not.toContain('--privileged');
    expect(args).toContain('--entrypoint=--privileged'); // one argument: the entrypoint's value, never a flag
    expect(args.indexOf('--device=/dev/sda')).toBeGreaterThan(image);
  });
});

describe('gpuAccess', () => {
  it('uses CDI names when the node has NVIDIA’s CDI spec', () => {
    expect(gpuAccess({ cdi: true, deviceNodes: ['/dev/nvidia0'] }, [0, 2])).toEqual({ mode: 'cdi', devices: ['nvidia.com/gpu=0', 'nvidia.com/gpu=2'], env: { NVIDIA_VISIBLE_DEVICES: '0,2' } });
  });

  it('else hands over exactly the held GPUs’ device nodes and the shared control nodes', () => {
    const host = { cdi: false, deviceNodes: ['/dev/nvidia0', '/dev/nvidia1', '/dev/nvidia2', '/dev/nvidiactl', '/dev/nvidia-uvm'] };
    const got = gpuAccess(host, [1]);
    expect(got).toEqual({ mode: 'devices', devices: ['/dev/nvidia1', '/dev/nvidiactl', '/dev/nvidia-uvm'], env: { NVIDIA_VISIBLE_DEVICES: '1' } });
    expect(containerRunArgs({ ...base, runtime: 'podman', gpus: got }).join(' ')).toContain('--device /dev/nvidia1 --device /dev/nvidiactl --device /dev/nvidia-uvm');
  });

  it('else (declared slots) passes only the environment, and no device', () => {
    const got = gpuAccess({ cdi: false, deviceNodes: [] }, [0, 1]);
    expect(got).toEqual({ mode: 'slots', devices: ['0', '1'], env: { CUDA_VISIBLE_DEVICES: '0,1', NVIDIA_VISIBLE_DEVICES: '0,1' } });
    expect(containerRunArgs({ ...base, runtime: 'podman', gpus: got })).not.toContain('--device');
    expect(gpuAccess({ cdi: true, deviceNodes: [] }, [])).toBeUndefined();
  });
});

describe('podmanGlobalArgs', () => {
  it('uses runc and cgroupfs on a cgroup v1 / hybrid host without systemd, and podman’s defaults on cgroup v2 with systemd', () => {
    expect(podmanGlobalArgs({ cgroupV2: false, systemd: false, runc: '/usr/sbin/runc', ociRuntime: 'auto' })).toEqual(['--runtime', '/usr/sbin/runc', '--cgroup-manager', 'cgroupfs']);
    expect(podmanGlobalArgs({ cgroupV2: true, systemd: true, runc: '/usr/sbin/runc', ociRuntime: 'auto' })).toEqual([]);
    expect(podmanGlobalArgs({ cgroupV2: true, systemd: true, runc: null, ociRuntime: 'crun' })).toEqual(['--runtime', 'crun']);
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
    expect(parseImageId('c'.repeat(64))).toBe(ID); // podman prints the id without its algorithm
    expect(parseImageId('ubuntu:24.04')).toBeUndefined();
  });

  it('names the missing runtime', () => {
    expect(missingRuntimeMessage('ghcr.io/acme/train:1', 'node-a')).toBe(
      'work.kind container (ghcr.io/acme/train:1) needs a container runtime (docker or podman), and node node-a has none that answers',
    );
  });
});
