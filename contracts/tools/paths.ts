/** Locating the repository from a module's own URL, so tools work from any working directory. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Thrown when no gpunet package.json is found above the module. */
export class RepositoryNotFoundError extends Error {
  constructor(readonly from: string) {
    super(`no gpunet package.json found above ${from}`);
    this.name = 'RepositoryNotFoundError';
  }
}

/**
 * The repository root: the nearest directory above `moduleUrl` whose package.json is named
 * `gpunet`. Works from `contracts/tools/*.ts` (tests) and `dist/contracts/tools/*.js` (export).
 */
export function repositoryRoot(moduleUrl: string): string {
  const start = dirname(fileURLToPath(moduleUrl));
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'gpunet') return dir;
    if (dirname(dir) === dir) throw new RepositoryNotFoundError(start);
  }
}

/** `contracts/generated/` of the repository that holds `moduleUrl`. */
export function generatedDir(moduleUrl: string): string {
  return join(repositoryRoot(moduleUrl), 'contracts', 'generated');
}
