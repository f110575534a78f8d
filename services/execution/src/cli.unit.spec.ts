import { describe, expect, it } from '@jest/globals';
import { agentEnvironment } from './cli.js';

describe('agent command line', () => {
  it('turns flags into the environment variables of the same meaning, flags winning', () => {
    const env = agentEnvironment(['--gpus', '4', '--gpu-model', 'A100-80GB', '--node-id', 'n7', '--work-dir', '/var/gpunet'], { GPUNET_GPUS: '1', OTHER: 'x' });
    expect(env).toMatchObject({ GPUNET_GPUS: '4', GPUNET_GPU_MODEL: 'A100-80GB', GPUNET_NODE_ID: 'n7', GPUNET_WORK_DIR: '/var/gpunet', OTHER: 'x' });
  });

  it('leaves the environment alone without flags', () => {
    expect(agentEnvironment([], { GPUNET_GPUS: '2', GPUNET_NODE_ID: 'n1' })).toEqual({ GPUNET_GPUS: '2', GPUNET_NODE_ID: 'n1' });
  });

  it('takes the instance id as the node id when only that is set', () => {
    expect(agentEnvironment([], { GPUNET_INSTANCE: 'n2' }).GPUNET_NODE_ID).toBe('n2');
  });

  it('refuses a node id that differs from GPUNET_INSTANCE (they name the same thing)', () => {
    expect(() => agentEnvironment(['--node-id', 'a'], { GPUNET_INSTANCE: 'b' })).toThrow(/GPUNET_INSTANCE \(b\) and the node id \(a\) differ/);
  });
});
