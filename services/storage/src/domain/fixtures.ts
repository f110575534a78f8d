/** Builders for the domain specs: valid contract data with only what a test cares about. */
import type { JobSubmitted } from '#contracts';

export const T0 = Date.parse('2025-06-01T12:00:00.000Z');
export const at = (ms: number) => new Date(T0 + ms).toISOString();
/** A sha256 made of one repeated hex character pair, e.g. `sha('a1')`. */
export const sha = (pair: string) => pair.repeat(32);

export interface InputSketch {
  name: string;
  sha256: string;
  size?: number;
  kind?: 'file' | 'folder';
  keepMs?: number;
  dataset?: string;
}

export function submitted(jobId: string, inputs: InputSketch[], team = 'team-a', submittedAtMs = 0): JobSubmitted {
  return {
    jobId,
    team,
    submittedAt: at(submittedAtMs),
    spec: {
      work: { kind: 'script', script: { inline: 'true' }, args: [], env: {} },
      data: {
        inputs: inputs.map((i) => ({
          name: i.name,
          path: i.name,
          kind: i.kind ?? 'file',
          sha256: i.sha256,
          size: i.size ?? 10,
          ...(i.keepMs === undefined ? {} : { keepMs: i.keepMs }),
          ...(i.dataset === undefined ? {} : { dataset: i.dataset }),
        })),
      },
      request: { gpus: 1, timeLimitMs: 60_000, network: false },
      outputs: { globs: ['**'] },
    },
  };
}
