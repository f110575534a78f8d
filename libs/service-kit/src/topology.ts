import { parseTopology, standingConsumers, type Topology, type TopologyFileDefinition } from '#messaging';
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
 * runs itself (`templates` expanded with its instance id and, for a partitioned process, its
 * partition). Other services' consumers are theirs
 * to create, so a service never resets another's consumer config.
 */
export async function topologyFor(file: string, instance: string, durables: readonly string[], partition?: number): Promise<Topology> {
  const path = resolve(file);
  const raw = (YAML.parse(await readFile(path, 'utf8')) ?? {}) as TopologyFileDefinition;
  const fill = (text: string) => {
    const out = text.replaceAll('{instance}', instance);
    return partition === undefined ? out : out.replaceAll('{partition}', String(partition));
  };
  const templates = (raw.templates ?? []).map(({ replaces: _replaces, ...t }) => ({
    ...t,
    durable: fill(t.durable),
    ...(t.filterSubjects ? { filterSubjects: t.filterSubjects.map(fill) } : {}),
  }));
  const wanted = new Set(durables);
  const consumers = [...(raw.consumers ?? []), ...templates].filter((c) => wanted.has(c.durable));
  const missing = durables.filter((d) => !consumers.some((c) => c.durable === d));
  if (missing.length > 0) throw new Error(`${path}: no consumer or template for ${missing.join(', ')}; add it under consumers:`);
  return parseTopology({ streams: raw.streams ?? [], consumers, standing: standingConsumers(raw, await eventPartitionsOf(path)) }, path);
}


/**
 * The network's number of event partitions (decision 0030): the topology file's
 * `eventPartitions`, 1 when absent. Every process that publishes events reads it, so every
 * relay puts an event on the same partition.
 */
export async function eventPartitionsOf(file: string): Promise<number> {
  const path = resolve(file);
  const raw = (YAML.parse(await readFile(path, 'utf8')) ?? {}) as { eventPartitions?: unknown };
  const n = raw.eventPartitions ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 1024) {
    throw new Error(`${path}: eventPartitions must be a whole number from 1 to 1024 (got ${JSON.stringify(n)}); 1 leaves the events unpartitioned`);
  }
  return n;
}
