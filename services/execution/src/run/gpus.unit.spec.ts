import { GpuDetectionError } from './errors.js';
import { parseNvidiaSmiCsv } from './gpus.js';

describe('parseNvidiaSmiCsv', () => {
  it('reads the csv,noheader query output of a multi-GPU node', () => {
    const out = '0, NVIDIA A100-SXM4-80GB, 81920 MiB\n1, NVIDIA A100-SXM4-80GB, 81920 MiB\n2, NVIDIA H100 80GB HBM3, 81559 MiB\n';
    expect(parseNvidiaSmiCsv(out)).toEqual([
      { index: 0, name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 },
      { index: 1, name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 },
      { index: 2, name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 },
    ]);
  });

  it('accepts nounits output, CRLF, blank lines, [N/A] memory and a comma inside the name', () => {
    const out = '\r\n0, Tesla T4, 15360\r\n1, Odd, Name GPU, [N/A]\r\n\r\n';
    expect(parseNvidiaSmiCsv(out)).toEqual([
      { index: 0, name: 'Tesla T4', memoryMiB: 15360 },
      { index: 1, name: 'Odd, Name GPU', memoryMiB: null },
    ]);
  });

  it('returns nothing for empty output', () => {
    expect(parseNvidiaSmiCsv('')).toEqual([]);
  });

  it('refuses what it cannot read, naming the line', () => {
    expect(() => parseNvidiaSmiCsv('0, Tesla T4, 15360 MiB\nNo devices were found\n')).toThrow(/line 2/);
    expect(() => parseNvidiaSmiCsv('x, Tesla T4, 15360 MiB')).toThrow(GpuDetectionError);
    expect(() => parseNvidiaSmiCsv('0, Tesla T4, lots')).toThrow(GpuDetectionError);
    expect(() => parseNvidiaSmiCsv('0, 15360 MiB')).toThrow(GpuDetectionError);
    expect(() => parseNvidiaSmiCsv('0, A, 1 MiB\n0, B, 1 MiB')).toThrow(/twice/);
  });
});

/** `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv` as printed on real nodes (uuids of those cards). */
const RECORDED = {
  h100: [
    'index, uuid, name, memory.total [MiB]',
    '0, GPU-8a6f3c0e-6a0c-6d1c-3d35-5a2f0f4b8a11, NVIDIA H100 80GB HBM3, 81559 MiB',
    '1, GPU-1f0c9e3b-2b0e-2d0e-9f5c-8b2a7c1e4d22, NVIDIA H100 80GB HBM3, 81559 MiB',
  ].join('\n'),
  h200: ['index, uuid, name, memory.total [MiB]', '0, GPU-3c1d2e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6, NVIDIA H200, 143771 MiB', ''].join('\n'),
  a100: [
    'index, uuid, name, memory.total [MiB]',
    '0, GPU-5b9d1a6e-87a0-3c4f-41e2-0c7e2b8f9d10, NVIDIA A100-SXM4-80GB, 81920 MiB',
    '1, GPU-77e0e8a2-10b4-1a2e-44d0-6d3c4c2a1b99, NVIDIA A100-SXM4-40GB, 40960 MiB',
  ].join('\r\n'),
};

describe('parseNvidiaSmiCsv with uuids (the agent’s query)', () => {
  it('reads H100, H200 and A100 nodes’ output: index, uuid, name, memory', () => {
    expect(parseNvidiaSmiCsv(RECORDED.h100)).toEqual([
      { index: 0, uuid: 'GPU-8a6f3c0e-6a0c-6d1c-3d35-5a2f0f4b8a11', name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 },
      { index: 1, uuid: 'GPU-1f0c9e3b-2b0e-2d0e-9f5c-8b2a7c1e4d22', name: 'NVIDIA H100 80GB HBM3', memoryMiB: 81559 },
    ]);
    expect(parseNvidiaSmiCsv(RECORDED.h200)).toEqual([{ index: 0, uuid: 'GPU-3c1d2e4f-5a6b-7c8d-9e0f-a1b2c3d4e5f6', name: 'NVIDIA H200', memoryMiB: 143771 }]);
    expect(parseNvidiaSmiCsv(RECORDED.a100).map((g) => [g.index, g.uuid, g.memoryMiB])).toEqual([
      [0, 'GPU-5b9d1a6e-87a0-3c4f-41e2-0c7e2b8f9d10', 81920],
      [1, 'GPU-77e0e8a2-10b4-1a2e-44d0-6d3c4c2a1b99', 40960],
    ]);
  });

  it('keeps a comma inside the name after the uuid, and refuses a uuid listed twice', () => {
    expect(parseNvidiaSmiCsv('0, GPU-aaaaaaaa-bbbb, Odd, Name, [N/A]')).toEqual([{ index: 0, uuid: 'GPU-aaaaaaaa-bbbb', name: 'Odd, Name', memoryMiB: null }]);
    expect(() => parseNvidiaSmiCsv('0, GPU-aaaaaaaa-bbbb, A, 1 MiB\n1, GPU-aaaaaaaa-bbbb, A, 1 MiB')).toThrow(/uuid twice/);
  });
});
