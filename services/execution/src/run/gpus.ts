import { execFile } from 'node:child_process';
import { GpuDetectionError } from './errors.js';

/** One GPU as `nvidia-smi` reports it. */
export interface DetectedGpu {
  /** Index as used in `CUDA_VISIBLE_DEVICES`. */
  readonly index: number;
  /** The GPU's UUID (`GPU-…`): stable across reboots and renumbering, unlike the index. Absent in the older three-column output. */
  readonly uuid?: string;
  /** Model name, e.g. `NVIDIA A100-SXM4-80GB`. */
  readonly name: string;
  /** Total memory in MiB; `null` when the driver reports `[N/A]`. */
  readonly memoryMiB: number | null;
}

/** The query {@link detectGpus} runs; its columns are what {@link parseNvidiaSmiCsv} expects. */
export const NVIDIA_SMI_ARGS = ['--query-gpu=index,uuid,name,memory.total', '--format=csv'] as const;

const UUID = /^GPU-[0-9a-fA-F-]{8,64}$/;

/**
 * Parses `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv` output, e.g.
 * `0, GPU-4f6d…, NVIDIA H100 80GB HBM3, 81559 MiB` under the header
 * `index, uuid, name, memory.total [MiB]`. Also reads it without the header (`csv,noheader`),
 * with `nounits`, and the older `index,name,memory.total` columns. The name is everything
 * between the uuid (or the index) and the last comma, so a name containing a comma survives. Pure.
 *
 * @throws GpuDetectionError naming the first line it cannot read.
 */
export function parseNvidiaSmiCsv(text: string): DetectedGpu[] {
  const gpus: DetectedGpu[] = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || /^index\s*,/i.test(line)) return; // blank, or the header
    const fields = line.split(',').map((f) => f.trim());
    const index = fields[0] !== undefined && /^\d+$/.test(fields[0]) ? Number(fields[0]) : NaN;
    const uuid = fields.length >= 4 && UUID.test(fields[1]!) ? fields[1] : undefined;
    const memory = fields.length >= 3 ? fields[fields.length - 1] : undefined;
    const name = fields.slice(uuid === undefined ? 1 : 2, -1).join(', ');
    const mem = memory === undefined ? null : /^(\d+)(?:\s*MiB)?$/.exec(memory);
    const na = memory !== undefined && /^\[?N\/A\]?$/i.test(memory);
    if (Number.isNaN(index) || name === '' || (mem === null && !na)) {
      throw new GpuDetectionError(`cannot read nvidia-smi output line ${i + 1}: ${JSON.stringify(raw)}`);
    }
    gpus.push({ index, ...(uuid !== undefined && { uuid }), name, memoryMiB: mem ? Number(mem[1]) : null });
  });
  if (new Set(gpus.map((g) => g.index)).size !== gpus.length) {
    throw new GpuDetectionError('nvidia-smi listed the same GPU index twice');
  }
  const uuids = gpus.flatMap((g) => (g.uuid ? [g.uuid] : []));
  if (new Set(uuids).size !== uuids.length) throw new GpuDetectionError('nvidia-smi listed the same GPU uuid twice');
  return gpus;
}

/** Options of {@link detectGpus}. */
export interface DetectGpusOptions {
  /** Binary to run. Default `nvidia-smi` on the agent's PATH. */
  readonly command?: string;
  /** Give up after this long. Default 15 000 ms (the first call after boot can be slow). */
  readonly timeoutMs?: number;
}

/**
 * The GPUs of this machine from `nvidia-smi`, or an empty list when there is no `nvidia-smi`,
 * in which case the agent uses its declared slots (`--gpus N --gpu-model NAME`).
 *
 * @throws GpuDetectionError when `nvidia-smi` exists but fails or prints something unreadable:
 *   a machine that looks like a GPU node but cannot answer is worth a loud message.
 */
export async function detectGpus(opts: DetectGpusOptions = {}): Promise<DetectedGpu[]> {
  const command = opts.command ?? 'nvidia-smi';
  const stdout = await new Promise<string | null>((resolve, reject) => {
    execFile(command, NVIDIA_SMI_ARGS, { timeout: opts.timeoutMs ?? 15_000, encoding: 'utf8' }, (err, out, errOut) => {
      if (err === null) return resolve(out);
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return resolve(null);
      const timeoutMs = opts.timeoutMs ?? 15_000;
      const detail = err.killed ? `no answer within ${timeoutMs} ms` : (errOut || out || err.message).trim().split('\n')[0];
      reject(new GpuDetectionError(`${command} failed: ${detail}`, { cause: err }));
    });
  });
  return stdout === null ? [] : parseNvidiaSmiCsv(stdout);
}
