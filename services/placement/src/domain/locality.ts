/**
 * Data locality: among the nodes that fit a job, prefer one whose input cache already holds the
 * job's inputs, so staging moves nothing, and say so in the placement. Pure.
 *
 * Caches are keyed by team and sha256 (`<team>/<sha256>`), as the agents' caches and the blob
 * store are: a job is only ever drawn to a node by its own team's copies, so where a job lands
 * never tells a team that another team holds the same bytes.
 */

/** An input as locality sees it: its content address and size (a folder's is its manifest's). */
export interface LocalInput {
  name: string;
  sha256: string;
  size: number;
}

/** What a node holds of a job's inputs. */
export interface Locality {
  /** Inputs the node's cache holds, in spec order. */
  held: LocalInput[];
  /** Their total size. */
  bytes: number;
}

/** The cache key of a team's blob, as nodes report it (`<team>/<sha256>`). */
export const cacheKey = (team: string, sha256: string): string => `${team}/${sha256}`;

/** Which of the job's inputs `cached` (a node's `<team>/<sha256>` keys) holds. */
export function localityOf(team: string, inputs: readonly LocalInput[], cached: ReadonlySet<string> | undefined): Locality {
  if (!cached || cached.size === 0) return { held: [], bytes: 0 };
  const held = inputs.filter((i) => cached.has(cacheKey(team, i.sha256)));
  return { held, bytes: held.reduce((n, i) => n + i.size, 0) };
}

/**
 * `nodes` ordered by how much of the job's inputs each holds (most inputs, then most bytes),
 * keeping the given order among equals, so with no cached data the order is unchanged.
 */
export function preferLocal<N extends { nodeId: string }>(nodes: readonly N[], team: string, inputs: readonly LocalInput[], cachedOf: (nodeId: string) => ReadonlySet<string> | undefined): N[] {
  if (inputs.length === 0) return [...nodes];
  const scored = nodes.map((node, i) => ({ node, i, l: localityOf(team, inputs, cachedOf(node.nodeId)) }));
  scored.sort((a, b) => b.l.held.length - a.l.held.length || b.l.bytes - a.l.bytes || a.i - b.i);
  return scored.map((s) => s.node);
}

/** The placement reason for a node holding some of the job's inputs, e.g. `node-1 already holds input dataset (1073741824 bytes) in its cache`; undefined when it holds none. */
export function localityReason(nodeId: string, team: string, inputs: readonly LocalInput[], cached: ReadonlySet<string> | undefined): string | undefined {
  const { held, bytes } = localityOf(team, inputs, cached);
  if (held.length === 0) return undefined;
  const names = held.map((i) => i.name).join(', ');
  return `${nodeId} already holds input${held.length > 1 ? 's' : ''} ${names} (${bytes} bytes) in its cache: preferred so staging moves no data`;
}
