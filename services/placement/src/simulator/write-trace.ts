/**
 * Writes the generated example trace: `node dist/services/placement/src/simulator/write-trace.js
 * [FILE]` (default `examples/traces/small.swf`). The only I/O around `generateTrace`.
 */
import { writeFileSync } from 'node:fs';
import { generateTrace } from './generate-trace.js';

const file = process.argv[2] ?? 'examples/traces/small.swf';
writeFileSync(file, generateTrace());
process.stdout.write(`wrote ${file}\n`);
