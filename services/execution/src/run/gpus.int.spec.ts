import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GpuDetectionError } from './errors.js';
import { detectGpus } from './gpus.js';

// A stand-in nvidia-smi (a real executable) checks the query detectGpus asks and what it makes of the answer.
describe('detectGpus', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpunet-smi-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function fakeSmi(name: string, body: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, `#!/bin/bash\n${body}\n`);
    await chmod(path, 0o755);
    return path;
  }

  it('lists the GPUs nvidia-smi reports for the csv query', async () => {
    const smi = await fakeSmi(
      'nvidia-smi',
      [
        'if [ "$*" != "--query-gpu=index,uuid,name,memory.total --format=csv" ]; then echo "unexpected args: $*" >&2; exit 9; fi',
        'echo "index, uuid, name, memory.total [MiB]"',
        'echo "0, GPU-5b9d1a6e-87a0-3c4f-41e2-0c7e2b8f9d10, NVIDIA A100-SXM4-80GB, 81920 MiB"',
        'echo "1, GPU-77e0e8a2-10b4-1a2e-44d0-6d3c4c2a1b99, NVIDIA A100-SXM4-80GB, 81920 MiB"',
      ].join('\n'),
    );
    expect(await detectGpus({ command: smi })).toEqual([
      { index: 0, uuid: 'GPU-5b9d1a6e-87a0-3c4f-41e2-0c7e2b8f9d10', name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 },
      { index: 1, uuid: 'GPU-77e0e8a2-10b4-1a2e-44d0-6d3c4c2a1b99', name: 'NVIDIA A100-SXM4-80GB', memoryMiB: 81920 },
    ]);
  });

  it('returns nothing when there is no nvidia-smi, so declared slots apply', async () => {
    expect(await detectGpus({ command: join(dir, 'absent-nvidia-smi') })).toEqual([]);
  });

  it('fails loudly, with nvidia-smi’s own message, when it exists but cannot answer', async () => {
    const smi = await fakeSmi(
      'broken-smi',
      'echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver." ; exit 9',
    );
    await expect(detectGpus({ command: smi })).rejects.toThrow(GpuDetectionError);
    await expect(detectGpus({ command: smi })).rejects.toThrow(/couldn't communicate with the NVIDIA driver/);
  });

  it('gives up after its timeout', async () => {
    // It would answer nothing for ten minutes: only the timeout can end the call (the message
    // says it did), so no wall-clock bound that a loaded machine could break.
    const smi = await fakeSmi('slow-smi', 'exec sleep 600');
    await expect(detectGpus({ command: smi, timeoutMs: 200 })).rejects.toThrow(/no answer within 200 ms/);
  });
});
