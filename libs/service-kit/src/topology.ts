import { parseTopology, type ConsumerDefinition, type Topology, type TopologyDefinition } from '#messaging';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

/** `deploy/topology.yaml` of this checkout, found upwards from this file (works from source and from dist/). */
export function defaultTopologyFile(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'deploy', 'topology.yaml');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('deploy/topology.yaml not found above ' + fileURLToPath(import.meta.url) + '; set GPUNET_TOPOLOGY_FILE');
    dir = parent;
  }
}

/**
 * The part of the topology file one process provisions: every stream, and the consumers it
 * runs itself (`templates` expanded with its instance id). Other services' consumers are theirs
 * to create, so a service never resets another's consumer config.
 */
export async function topologyFor(file: string, instance: string, durables: readonly string[]): Promise<Topology> {
  const path = resolve(file);
  const raw = (YAML.parse(await readFile(path, 'utf8')) ?? {}) as TopologyDefinition & { templates?: ConsumerDefinition[] };
  const templates = (raw.templates ?? []).map((t) => ({
    ...t,
    durable: t.durable.replaceAll('{instance}', instance),
    ...(t.filterSubjects ? { filterSubjects: t.filterSubjects.map((f) => f.replaceAll('{instance}', instance)) } : {}),
  }));
  const wanted = new Set(durables);
  const consumers = [...(raw.consumers ?? []), ...templates].filter((c) => wanted.has(c.durable));
  const missing = durables.filter((d) => !consumers.some((c) => c.durable === d));
  if (missing.length > 0) throw new Error(`${path}: no consumer or template for ${missing.join(', ')}; add it under consumers:`);
  return parseTopology({ streams: raw.streams ?? [], consumers }, path);
}
