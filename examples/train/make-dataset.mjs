#!/usr/bin/env node
// Writes the demo's dataset: <dir>/train.csv (about 3 MB, 100,000 rows) and <dir>/README.txt.
// Deterministic (a seeded generator), so running it again gives the same bytes and
// `gpunet submit` skips uploading blobs it already stored.
//   node examples/train/make-dataset.mjs [dir]   (default: examples/train/data)
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'data');
const rows = Number(process.env.DEMO_ROWS ?? 100_000);

// mulberry32: tiny, seeded, good enough for sample data.
let seed = 0x6a707531;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

const lines = ['id,feature_a,feature_b,target'];
for (let i = 0; i < rows; i++) {
  const a = (random() * 100).toFixed(4);
  const b = (random() * 100).toFixed(4);
  const target = (Number(a) * 0.5 + Number(b) * 0.25 + (random() - 0.5) * 4).toFixed(4);
  lines.push(`${i},${a},${b},${target}`);
}
mkdirSync(dir, { recursive: true });
const csv = `${lines.join('\n')}\n`;
writeFileSync(join(dir, 'train.csv'), csv);
writeFileSync(join(dir, 'README.txt'), `Synthetic regression data: target ≈ 0.5·a + 0.25·b + noise. ${rows} rows.\n`);
console.log(`wrote ${join(dir, 'train.csv')} (${rows} rows, ${(csv.length / 1e6).toFixed(1)} MB)`);
