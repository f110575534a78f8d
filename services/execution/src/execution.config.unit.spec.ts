import { describe, expect, it } from '@jest/globals';
import { ValidationError } from '#errors';
import { loadConfig } from '#service-kit';
import { defaultNodeId, ExecutionConfig, workDirOf } from './execution.config.js';

describe('execution config', () => {
  it('has defaults for a local network', () => {
    const config = loadConfig(ExecutionConfig, { GPUNET_NODE_ID: 'n1' });
    expect(config).toMatchObject({
      GPUNET_NODE_ID: 'n1',
      GPUNET_GPUS: 1,
      GPUNET_GPU_MODEL: 'sim-gpu',
      GPUNET_NVIDIA_SMI: 'nvidia-smi',
      GPUNET_HEARTBEAT_MS: 2000,
      GPUNET_KILL_GRACE_MS: 10000,
      GPUNET_SHUTDOWN_GRACE_MS: 3000,
    });
    expect(workDirOf(config)).toBe('.gpunet/nodes/n1');
  });

  it('names each bad variable', () => {
    expect(() => loadConfig(ExecutionConfig, { GPUNET_GPUS: '0', GPUNET_NODE_ID: 'bad id' })).toThrow(ValidationError);
    try {
      loadConfig(ExecutionConfig, { GPUNET_GPUS: '0', GPUNET_NODE_ID: 'bad id' });
    } catch (err) {
      expect((err as ValidationError).issues.map((i) => i.path).sort()).toEqual(['GPUNET_GPUS', 'GPUNET_NODE_ID']);
    }
  });

  it('derives a valid node id from any host name', () => {
    expect(defaultNodeId('GPU-Box.example.org')).toBe('node-gpu-box-example-org');
    expect(defaultNodeId('...')).toBe('node-local');
    expect(defaultNodeId('x'.repeat(100))).toHaveLength(64);
  });
});
