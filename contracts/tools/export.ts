/**
 * `npm run contracts:export`: writes `contracts/generated/` (JSON Schemas + AsyncAPI 3.0) from
 * the zod schemas. Paths are resolved from this file, not from the working directory, and
 * generated files that no longer correspond to a message are removed.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateContractFiles } from './generate.js';
import { generatedDir } from './paths.js';

function main(): void {
  const root = generatedDir(import.meta.url);
  const files = generateContractFiles();
  const wanted = new Set(files.map((f) => f.path));
  for (const file of files) {
    const target = join(root, file.path);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, file.content);
  }
  const schemaDir = join(root, 'json-schema');
  for (const name of readdirSync(schemaDir)) {
    if (!wanted.has(`json-schema/${name}`)) rmSync(join(schemaDir, name));
  }
  process.stdout.write(`contracts: wrote ${files.length} files to ${root}\n`);
}

main();
