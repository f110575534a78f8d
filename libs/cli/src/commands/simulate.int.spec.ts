import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * `gpunet simulate` as a user runs it: the real CLI process, which runs the built placement
 * simulator as a child process. Needs `npm run build` (npm test does it first).
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');
const BIN = join(ROOT, 'bin', 'gpunet.js');

function gpunet(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: ROOT }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe('gpunet simulate', () => {
  let dir: string;

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'services', 'placement', 'src', 'simulator', 'main.js'))) throw new Error('dist/ is missing the simulator: run `npm run build` first (npm test does)');
    dir = await mkdtemp(join(tmpdir(), 'gpunet-simulate-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('switches the core backfill off: small jobs wait longer than with it on', async () => {
    const wait = async (backfill: string) => {
      const run = await gpunet(['simulate', '--trace', 'examples/traces/small.swf', '--backfill', backfill, '--json']);
      expect(run.code).toBe(0);
      return (JSON.parse(run.stdout) as { metrics: { p95WaitSmallHalfMs: number } }).metrics.p95WaitSmallHalfMs;
    };
    expect(await wait('off')).toBeGreaterThan(await wait('on'));
  });

  it('replays the example trace: one JSON document, the same on a second run (but for its wall time)', async () => {
    const args = ['simulate', '--trace', 'examples/traces/small.swf', '--policy', 'fcfs', '--gpus-per-node', '8', '--json'];
    const first = await gpunet(args);
    expect(first.code).toBe(0);
    const doc = JSON.parse(first.stdout) as { trace: string; policy: string; cluster: unknown; metrics: { jobs: number; utilization: number }; elapsedMs?: number };
    expect(doc).toMatchObject({ trace: 'examples/traces/small.swf', policy: 'fcfs', backfill: 'on', cluster: { nodes: 8, gpusPerNode: 8, totalGpus: 64 }, metrics: { jobs: 300 } });
    expect(doc.metrics.utilization).toBeGreaterThan(0);
    const again = JSON.parse((await gpunet(args)).stdout) as typeof doc;
    expect({ ...again, elapsedMs: 0 }).toEqual({ ...doc, elapsedMs: 0 });
  });

  it('prints the metrics table for people', async () => {
    const run = await gpunet(['simulate', '--trace', 'examples/traces/small.swf', '--nodes', '4', '--policy', 'sjf', '--backfill', 'on', '--reservation-depth', '2', '--predictions', 'off']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('cluster  4 nodes × 16 GPUs = 64 GPUs');
    expect(run.stdout).toContain('policy   sjf, backfill on, reservations 2, predictions off');
    expect(run.stdout).toMatch(/^jobs run +300$/m);
    expect(run.stdout).toMatch(/^average bounded slowdown \(τ = 10 s\) +\d+\.\d{4}$/m);
    expect(run.stdout).toMatch(/^utilization to the last start +\d+\.\d\d %$/m);
    expect(run.stderr).toContain("note: cluster from the header's MaxProcs: 4 node(s) × 16 GPU(s)");
  });

  it('exits 2 naming the line and the field of a broken trace', async () => {
    const file = join(dir, 'bad.swf');
    await writeFile(file, '; MaxProcs: 4\n1 0 -1 10 1 -1 -1 x 10 -1 1 1 1 -1 -1 -1 -1 -1\n');
    const run = await gpunet(['simulate', '--trace', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('line 2: requestedProcessors: `x` is not a number');
  });

  it('exits 2 for a trace that cannot be read, saying why', async () => {
    const run = await gpunet(['simulate', '--trace', join(dir, 'missing.swf')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/cannot read the trace .*missing\.swf/);
    expect(run.stderr).toContain('ENOENT');
  });
});
