import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A private compiled copy of the repository's code, so a test can start real child processes from it. */
export interface ChildBuild {
  /** Root holding `dist/`, a `package.json` with the `#…` imports and a link to `node_modules`. */
  readonly root: string;
  /** Absolute path of the compiled form of `relativeTs` (e.g. `libs/messaging/test-fixtures/relay-process.ts`). */
  js(relativeTs: string): string;
  remove(): Promise<void>;
}

/**
 * Compiles `contracts/`, `libs/` and `test/support/` with the project's SWC config into a temporary
 * directory (under a second), instead of relying on — or racing with — the shared `dist/`.
 */
export async function buildForChildProcesses(repoRoot = fileURLToPath(new URL('../../..', import.meta.url))): Promise<ChildBuild> {
  const root = await mkdtemp(join(tmpdir(), 'gpunet-child-build-'));
  const swc = join(repoRoot, 'node_modules', '.bin', 'swc');
  await run(swc, ['contracts', 'libs', 'test/support', '-d', join(root, 'dist'), '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '-q'], { cwd: repoRoot });
  const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8')) as { imports: unknown };
  await writeFile(join(root, 'package.json'), JSON.stringify({ name: 'gpunet-child-build', private: true, type: 'module', imports: pkg.imports }));
  await symlink(join(repoRoot, 'node_modules'), join(root, 'node_modules'), 'dir');
  return {
    root,
    js: (relativeTs) => join(root, 'dist', relativeTs.replace(/\.ts$/, '.js')),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}
