import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The `gpunet` command end to end, as a user runs it: `up` a real local network (nats-server,
 * the five services with the execution recorder, an execution agent) in a temporary data directory, submit a job that reads
 * an uploaded input and writes an output, wait, download and verify the output, read the bill,
 * check the exit codes of a failed job and an invalid spec, then `down`.
 * Needs `npm run build` (npm test does it first) and nats-server.
 */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = join(ROOT, 'bin', 'gpunet.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function gpunet(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, GPUNET_URL: '', GPUNET_API_KEY: '' }, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command with `--json` and returns its one document; a non-zero exit fails with its stderr. */
async function json<T = Record<string, unknown>>(args: string[], cwd: string, expectCode = 0): Promise<T> {
  const run = await gpunet([...args, '--json'], cwd);
  if (run.code !== expectCode) throw new Error(`gpunet ${args.join(' ')} exited ${run.code}, expected ${expectCode}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

/** Whether a pid still runs; a zombie (exited, not reaped where PID 1 does not reap) is gone. */
async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
    return !/\) Z /.test(await readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('gpunet CLI against a local network', () => {
  let dir: string;
  let dataDir: string;
  let upState: { url: string; team: string; processes: { name: string; role: string; pid: number }[] };

  beforeAll(async () => {
    if (!existsSync(join(ROOT, 'dist', 'libs', 'cli', 'src', 'main.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
    dir = await mkdtemp(join(tmpdir(), 'gpunet-cli-e2e-'));
    dataDir = join(dir, 'net');
    upState = await json(['up', '--data-dir', dataDir, '--agents', '1', '--gpus', '2', '--timeout', '90s'], dir);
  }, 120_000);

  afterAll(async () => {
    // Whatever happened above, leave no process behind.
    if (dataDir && existsSync(join(dataDir, 'state.json'))) await gpunet(['down', '--data-dir', dataDir], dir);
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 60_000);

  it('up started nats-server, the four single services, the recorder and one agent, and recorded them', async () => {
    expect(upState.team).toBe('local');
    expect(upState.processes.map((p) => p.name).sort()).toEqual(['intake', 'ledger', 'nats', 'node-1', 'placement', 'recorder', 'storage']);
    const again = await gpunet(['up', '--data-dir', dataDir], dir);
    expect(again.code).toBe(2); // already up here
    expect(again.stderr).toMatch(/already up/);
  });

  it('submits a job with an uploaded input, waits, downloads its verified output and bills it', async () => {
    const greeting = 'hello from the input\n'.repeat(100);
    await writeFile(join(dir, 'in.txt'), greeting);
    await writeFile(
      join(dir, 'job.yaml'),
      [
        'name: e2e-copy',
        'work:',
        '  kind: script',
        '  interpreter: bash',
        '  script:',
        '    inline: |',
        '      echo "copying on GPUs $CUDA_VISIBLE_DEVICES"',
        '      tr a-z A-Z < "$GPUNET_INPUT_DIR/greeting/in.txt" > "$GPUNET_OUTPUT_DIR/out.txt"',
        'data:',
        '  inputs:',
        '    - { name: greeting, path: greeting/in.txt, from: ./in.txt, keep: 1h }',
        'request: { gpus: 1, timeLimit: 1m }',
        'outputs: { globs: ["*.txt"] }',
        '',
      ].join('\n'),
    );
    const submitted = await json<{ jobId: string; inputs: { name: string; skipped: boolean; sha256: string }[] }>(['submit', 'job.yaml', '--data-dir', dataDir], dir);
    expect(submitted.inputs).toEqual([expect.objectContaining({ name: 'greeting', skipped: false, sha256: sha256(greeting) })]);

    const view = await json<{ state: string; attempts: { nodeId: string; gpuIndices: number[] }[] }>(['wait', submitted.jobId, '--timeout', '60s', '--data-dir', dataDir], dir);
    expect(view.state).toBe('completed');
    expect(view.attempts[0]).toMatchObject({ nodeId: 'node-1', gpuIndices: [expect.any(Number)] });

    const out = await json<{ files: { path: string; sha256: string }[] }>(['output', submitted.jobId, '--dest', join(dir, 'out'), '--data-dir', dataDir], dir);
    const expected = greeting.toUpperCase();
    expect(out.files).toEqual([expect.objectContaining({ path: 'out.txt', sha256: sha256(expected) })]);
    expect(await readFile(join(dir, 'out', 'out.txt'), 'utf8')).toBe(expected);

    const status = await json<{ events: { type: string; producer: string }[] }>(['status', submitted.jobId, '--timeline', '--data-dir', dataDir], dir);
    expect(status.events.map((e) => `${e.producer}:${e.type}`)).toEqual(expect.arrayContaining(['intake:JobSubmitted', 'storage:InputsStaged', 'placement:JobPlaced', 'execution:ComputeHeld', 'execution:JobFinished', 'execution:ComputeReleased']));

    // The ledger bills on JobFinished on its own schedule: poll briefly.
    type Invoice = { lines: { billableMs: number; amountMicros: number }[]; formatted: { totals: { currency: string; amount: string }[] } };
    let invoice: Invoice | undefined;
    for (let i = 0; i < 40 && !invoice?.lines.length; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 250));
      invoice = await json<Invoice>(['invoice', '--job', submitted.jobId, '--data-dir', dataDir], dir);
    }
    expect(invoice!.lines).toHaveLength(1);
    expect(invoice!.lines[0]!.billableMs).toBeGreaterThan(0);
    expect(invoice!.formatted.totals[0]!.amount).toMatch(/^\d+\.\d{6}$/);

    const text = await gpunet(['invoice', '--job', submitted.jobId, '--data-dir', dataDir], dir);
    expect(text.stdout).toMatch(/total \d+\.\d{6} [A-Z]{3}/);

    // The same input again: kept after the job (keep: 1h), so already stored and not uploaded.
    const again = await json<{ inputs: { skipped: boolean }[] }>(['submit', 'job.yaml', '--data-dir', dataDir], dir);
    expect(again.inputs).toEqual([expect.objectContaining({ skipped: true })]);
  }, 120_000);

  it('uploads inputs over HTTP (tus) with --upload http, waits on the team feed, and follows the logs to the job\'s end', async () => {
    const data = `${randomUUID()}\n`.repeat(50_000); // ~1.9 MB: two chunks
    await writeFile(join(dir, 'http-in.txt'), data);
    await writeFile(
      join(dir, 'http-job.yaml'),
      [
        'name: e2e-http-upload',
        'work:',
        '  kind: script',
        '  interpreter: bash',
        '  script:',
        '    inline: |',
        '      echo "read $(wc -c < "$GPUNET_INPUT_DIR/data.txt") bytes"',
        '      sha256sum < "$GPUNET_INPUT_DIR/data.txt" | cut -c1-64 > "$GPUNET_OUTPUT_DIR/sha.txt"',
        'data:',
        '  inputs:',
        '    - { name: data, path: data.txt, from: ./http-in.txt, keep: 1h }',
        'request: { gpus: 1, timeLimit: 1m }',
        '',
      ].join('\n'),
    );
    const submitted = await json<{ jobId: string; inputs: { name: string; skipped: boolean; sha256: string; bytesUploaded: number }[] }>(['submit', 'http-job.yaml', '--upload', 'http', '--data-dir', dataDir], dir);
    expect(submitted.inputs).toEqual([expect.objectContaining({ name: 'data', skipped: false, sha256: sha256(data), bytesUploaded: Buffer.byteLength(data) })]);
    const view = await json<{ state: string }>(['wait', submitted.jobId, '--timeout', '60s', '--data-dir', dataDir], dir);
    expect(view.state).toBe('completed');
    const out = await json<{ files: { path: string }[] }>(['output', submitted.jobId, '--dest', join(dir, 'http-out'), '--data-dir', dataDir], dir);
    expect(out.files.map((f) => f.path)).toEqual(['sha.txt']);
    expect((await readFile(join(dir, 'http-out', 'sha.txt'), 'utf8')).trim()).toBe(sha256(data));
    // `logs -f` ends by itself once the job is over.
    const logs = await gpunet(['logs', submitted.jobId, '-f', '--data-dir', dataDir], dir);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain(`read ${Buffer.byteLength(data)} bytes`);
    // Kept after the job (keep: 1h): over NATS the same bytes are found stored, one content-addressed store.
    const again = await json<{ inputs: { skipped: boolean }[] }>(['submit', 'http-job.yaml', '--upload', 'nats', '--data-dir', dataDir], dir);
    expect(again.inputs).toEqual([expect.objectContaining({ skipped: true })]);
  }, 120_000);

  it('exits 1 for a job that fails, and 2 with each field and its fix for a spec the contract refuses', async () => {
    await writeFile(join(dir, 'fail.sh'), 'echo about to fail >&2\nexit 3\n');
    const failed = await gpunet(['submit', '--script', 'fail.sh', '--interpreter', 'bash', '--time-limit', '30s', '--wait', '--timeout', '60s', '--data-dir', dataDir], dir);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toMatch(/failed \(exit 3\)/);

    const invalid = await gpunet(['submit', '--script', 'fail.sh', '--time-limit', 'forever', '--json', '--data-dir', dataDir], dir);
    expect(invalid.code).toBe(2);
    const error = (JSON.parse(invalid.stdout) as { error: { issues: { path: string; fix?: string }[] } }).error;
    expect(error.issues).toEqual([expect.objectContaining({ path: 'request.timeLimit', fix: expect.stringContaining('timeLimit') })]);
    const human = await gpunet(['submit', '--script', 'fail.sh', '--time-limit', 'forever', '--data-dir', dataDir], dir);
    expect(human.stderr).toMatch(/request\.timeLimit \(--time-limit\): .*\n +fix: /);
  }, 90_000);

  it('exits 2 for an unknown job and 3 when nothing listens', async () => {
    expect((await gpunet(['status', 'job_nope', '--data-dir', dataDir], dir)).code).toBe(2);
    const unreachable = await gpunet(['list', '--url', 'http://127.0.0.1:9', '--api-key', 'x'.repeat(20)], dir);
    expect(unreachable.code).toBe(3);
  });

  it('down stops every process it started and forgets them', async () => {
    const result = await json<{ stopped: { name: string; result: string }[] }>(['down', '--data-dir', dataDir], dir);
    expect(result.stopped.map((s) => s.name).sort()).toEqual(['intake', 'ledger', 'nats', 'node-1', 'placement', 'recorder', 'storage']);
    expect(result.stopped.every((s) => s.result === 'stopped')).toBe(true);
    expect(existsSync(join(dataDir, 'state.json'))).toBe(false);
    for (const p of upState.processes) expect({ name: p.name, alive: await isAlive(p.pid) }).toEqual({ name: p.name, alive: false });
  }, 60_000);
});
