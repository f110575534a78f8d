import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The `gpunet` process as a shell runs it (the built CLI: `npm run build` first, as npm test does). */

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const BIN = join(ROOT, 'bin', 'gpunet.js');

function sh(script: string, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', script], { cwd: ROOT, env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', () => resolve({ stdout, stderr }));
  });
}

describe('the gpunet process', () => {
  it('exits quietly (status 0, nothing on stderr) when the reader of its output goes away', async () => {
    // `true` exits without reading: every write of the CLI then meets a closed pipe (EPIPE).
    const run = await sh(`node ${JSON.stringify(BIN)} simulate --trace examples/traces/small.swf 2>&1 | true; echo "status \${PIPESTATUS[0]}"`);
    expect(run.stdout.trim()).toBe('status 0');
    const quiet = await sh(`node ${JSON.stringify(BIN)} simulate --trace examples/traces/small.swf 2>/dev/stderr | head -c 1 >/dev/null`);
    expect(quiet.stderr).not.toMatch(/EPIPE|Unhandled|at /);
  });

  it('takes its data directory from GPUNET_DATA_DIR when --data-dir is not given', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpunet-data-dir-'));
    try {
      const run = await sh(`cd / && node ${JSON.stringify(BIN)} down`, { GPUNET_DATA_DIR: dir });
      expect(run.stdout + run.stderr).toContain(join(dir, 'state.json'));
      const flag = await sh(`cd / && node ${JSON.stringify(BIN)} down --data-dir ${JSON.stringify(join(dir, 'other'))}`, { GPUNET_DATA_DIR: dir });
      expect(flag.stdout + flag.stderr).toContain(join(dir, 'other', 'state.json'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
