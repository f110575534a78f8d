#!/usr/bin/env node
// The `gpunet` command: runs the built CLI (dist/libs/cli/src/main.js). The path is computed,
// not written as an import literal, so that a checkout that was never built gets a sentence
// saying what to do instead of a module-not-found stack trace.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist', 'libs', 'cli', 'src', 'main.js');
if (!existsSync(main)) {
  process.stderr.write(`gpunet is not built (${main} is missing): run \`npm run build\` in ${root}\n`);
  process.exit(2);
}
await import(pathToFileURL(main).href);
