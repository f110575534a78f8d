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
