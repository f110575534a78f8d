import { jobCaps, ResourceRequestError } from './node-confinement.js';

const caps = { maxMemoryBytes: 64 * 2 ** 30, memoryPerGpuBytes: 16 * 2 ** 30, maxDiskBytes: 400 * 2 ** 30, diskPerGpuBytes: 100 * 2 ** 30 };
const spec = (gpus: number, resources?: { memoryBytes?: number; diskBytes?: number }) => ({ request: { gpus, timeLimitMs: 1, network: false }, ...(resources && { resources }) });

describe('jobCaps', () => {
  it('defaults to the node’s share per GPU times the GPUs, never above the node’s maximum', () => {
    expect(jobCaps(spec(2), caps, 'n')).toEqual({ memoryBytes: 32 * 2 ** 30, diskBytes: 200 * 2 ** 30 });
    expect(jobCaps(spec(8), caps, 'n')).toEqual({ memoryBytes: 64 * 2 ** 30, diskBytes: 400 * 2 ** 30 });
  });
  it('takes what the spec asks for within the node’s limits', () => {
    expect(jobCaps(spec(1, { memoryBytes: 2 ** 30, diskBytes: 300 * 2 ** 30 }), caps, 'n')).toEqual({ memoryBytes: 2 ** 30, diskBytes: 300 * 2 ** 30 });
  });
  it('refuses more than the node allows, naming the field, the limit and the fix', () => {
    expect(() => jobCaps(spec(1, { memoryBytes: 65 * 2 ** 30 }), caps, 'node-a')).toThrow(ResourceRequestError);
    expect(() => jobCaps(spec(1, { diskBytes: 401 * 2 ** 30 }), caps, 'node-a')).toThrow(/resources\.disk .* node node-a allows one job \(429496729600 bytes, GPUNET_JOB_MAX_DISK_BYTES\); ask for at most/);
  });
});
