import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `deploy/nats-permissions.yaml` of this checkout, found upwards from this file (from source and from dist/). */
export function defaultPermissionsFile(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'deploy', 'nats-permissions.yaml');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`deploy/nats-permissions.yaml not found above ${from}`);
  }
}

/** `deploy/nats/cluster.conf` of this checkout: the template of one server of a NATS cluster. */
export function defaultClusterTemplateFile(from = dirname(fileURLToPath(import.meta.url))): string {
  return join(dirname(dirname(defaultPermissionsFile(from))), 'deploy', 'nats', 'cluster.conf');
}
