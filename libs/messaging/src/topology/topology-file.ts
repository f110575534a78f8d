import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { TopologyError } from '../errors.js';
import { parseTopology, type Topology } from './topology.js';

/**
 * Reads a topology from a `.yaml`, `.yml` or `.json` file and validates it. Throws TopologyError
 * naming the file and each bad field (`consumers.0.ackWait: ...`).
 */
export async function loadTopologyFile(path: string): Promise<Topology> {
  const text = await readFile(path, 'utf8');
  const ext = extname(path).toLowerCase();
  let data: unknown;
  try {
    if (ext === '.json') data = JSON.parse(text);
    else if (ext === '.yaml' || ext === '.yml') data = parseYaml(text);
    else throw new Error(`unknown extension "${ext}" (use .yaml, .yml or .json)`);
  } catch (err) {
    throw new TopologyError(`${path} cannot be read: ${(err as Error).message}`, [], { cause: err });
  }
  return parseTopology(data, path);
}
