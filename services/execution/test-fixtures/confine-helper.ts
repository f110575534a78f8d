import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Compiles gpunet-confine with `scripts/build-native.sh` (the build's own flags) into a temporary
 * directory, so the tests check the source as it is now, without relying on (or racing with) the
 * shared `dist/`. Fails, naming the fix, when no C compiler is at hand: the tests never skip.
 */
export async function compileConfineHelper(): Promise<{ readonly path: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'gpunet-confine-build-'));
  const path = join(dir, 'gpunet-confine');
  const { stderr } = await run('bash', [join(repoRoot, 'scripts', 'build-native.sh')], { env: { ...process.env, GPUNET_CONFINE_OUT: path } });
  if (!existsSync(path)) throw new Error(`gpunet-confine was not built: ${stderr.trim() || 'no output'}`);
  return { path, remove: () => rm(dir, { recursive: true, force: true }) };
}
