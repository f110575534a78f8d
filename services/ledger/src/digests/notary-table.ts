/**
 * The notary's heads in the store's database (decision 0051): every stream's head as of the last
 * digest it folded, one row per stream, and the Merkle tree's nodes at level 6 (one per 64
 * leaves), in a projection table whose position is that digest's. Only those nodes are held in
 * memory, with the levels above them: about one byte per stream instead of the whole tree (230).
 * A restart loads them and folds only the digests recorded since, not every digest of the chain.
 *
 * The rows are never trusted beyond what the signed digests say:
 * - at load, the table's position must be a digest the store holds, and the nodes must give that
 *   digest's stream count and `headsRoot`;
 * - before a block's node is computed again over changed heads, the heads the table holds for it
 *   must give the node as it was. A head changed in the table is found before anything is signed
 *   over it (`NotaryTableMismatchError`), and the notary then folds the table again from the digests.
 *
 * Leaves keep their place for ever (decision 0040): a stream's leaf is the order it first appeared
 * in the chain of digests, so a block's node depends only on the heads of its own 64 streams.
 */
import type { StreamHead } from '#contracts';
import { commitForward, projectionTablesOf, trustedCheckpoint, type EventStore, type ProjectionCheckpoint, type ProjectionCondition, type ProjectionRow, type ProjectionTable, type ProjectionTableSpec } from '#event-store';
import { checkedHead, EMPTY_ROOT, HashLevels, leafHash, subtreeRoot } from './heads-tree.js';

/** Leaves under one node of level 6: what one block row covers. */
export const BLOCK_LEAVES = 64;

/** Rows `l:<streamId>` (a head and its leaf) and `b:<block>` (a level-6 node), at the position of the last digest folded. */
export const NOTARY_TABLE: ProjectionTableSpec = {
  name: 'notary_heads',
  version: 1,
  columns: [
    { name: 'kind', type: 'text' },
    { name: 'blk', type: 'integer' },
    { name: 'leaf', type: 'integer' },
  ],
  indexes: [['kind', 'blk', 'leaf']],
};

/** The table holds something the signed digests do not vouch for: changed behind the notary's back. */
export class NotaryTableMismatchError extends Error {
  constructor(message: string) {
    super(`the notary's table (projection_${NOTARY_TABLE.name}) ${message}`);
    this.name = 'NotaryTableMismatchError';
  }
}

/** Another notary moved the table while this one read it: load it again and go on from there. */
export class NotaryTableMovedError extends Error {
  constructor(held: bigint, now: bigint) {
    super(`the notary's table moved from position ${held} to ${now} while it was read`);
    this.name = 'NotaryTableMovedError';
  }
}

/** What a set of changed heads makes of the tree, not yet written. */
export interface HeadsPlan {
  readonly root: string;
  /** Streams in the tree with the changes. */
  readonly streams: number;
  readonly leaves: ReadonlyMap<number, StreamHead>;
  readonly blocks: ReadonlyMap<number, Uint8Array>;
}

const leafKey = (streamId: string) => `l:${streamId}`;
const blockKey = (block: number) => `b:${block}`;
const blockOf = (leaf: number) => Math.floor(leaf / BLOCK_LEAVES);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function leafRow(leaf: number, h: StreamHead): ProjectionRow {
  return { key: leafKey(h.streamId), doc: JSON.stringify([leaf, h.revision, h.position, h.hash]), values: { kind: 'l', blk: blockOf(leaf), leaf } };
}

function blockRow(block: number, node: Uint8Array): ProjectionRow {
  return { key: blockKey(block), doc: JSON.stringify(hex(node)), values: { kind: 'b', blk: block, leaf: null } };
}

function parseLeaf(key: string, doc: string): { leaf: number; head: StreamHead } {
  const [leaf, revision, position, hash] = JSON.parse(doc) as [number, string, string, string];
  return { leaf, head: { streamId: key.slice(2), revision, position, hash } };
}

export class NotaryTable {
  private held: ProjectionCheckpoint = { position: 0n, eventId: null };
  private blocks = new HashLevels();
  private n = 0;

  private constructor(
    private readonly store: EventStore,
    private readonly table: ProjectionTable,
  ) {}

  static async open(store: EventStore): Promise<NotaryTable> {
    const host = projectionTablesOf(store);
    if (!host) throw new Error('the notary keeps its heads in the store\'s database, and this store holds no projection tables');
    return new NotaryTable(store, await host.openProjectionTable(NOTARY_TABLE));
  }

  /** Streams in the tree. */
  get size(): number {
    return this.n;
  }

  /** The position of the digest the table is the fold of (0n: none). */
  get position(): bigint {
    return this.held.position;
  }

  /** The Merkle root (hex) over every head. */
  root(): string {
    const root = this.blocks.root();
    return root === undefined ? EMPTY_ROOT : hex(root);
  }

  /**
   * Loads where the table is: its position, when the store holds the event there (else it is
   * emptied after `untrusted` hears why), and its block nodes. The caller reads the digest at that
   * position and gives its stream count to `holding`. Returns the position (0n: empty).
   */
  async load(untrusted: (held: ProjectionCheckpoint, found: string | null) => void | Promise<void>): Promise<bigint> {
    for (;;) {
      this.blocks = new HashLevels();
      this.n = 0;
      this.held = await trustedCheckpoint(this.store, this.table, untrusted);
      if (this.held.position === 0n) return 0n;
      const answer = await this.table.query({ where: [{ column: 'kind', op: '=', value: 'b' }], orderBy: ['blk'] });
      if (answer.checkpoint.position !== this.held.position) continue; // moved meanwhile
      answer.rows.forEach((row, i) => {
        if (row.key !== blockKey(i)) throw new NotaryTableMismatchError(`lacks block ${i} (it has ${row.key} in its place)`);
        this.blocks.set(i, Buffer.from(JSON.parse(row.doc) as string, 'hex'));
      });
      return this.held.position;
    }
  }

  /**
   * Says how many streams the loaded fold holds (the digest at its position says): the blocks must
   * cover them, and `root()` then gives that digest's root.
   */
  holding(streams: number): void {
    const blocks = Math.ceil(streams / BLOCK_LEAVES);
    if (this.blocks.size !== blocks) throw new NotaryTableMismatchError(`holds ${this.blocks.size} blocks where ${streams} streams take ${blocks}`);
    this.n = streams;
  }

  /** Empties the table (position 0), whoever moved it last. */
  async reset(): Promise<void> {
    for (let cp = await this.table.checkpoint(); !(await this.table.reset(cp)); cp = await this.table.checkpoint());
    this.held = { position: 0n, eventId: null };
    this.blocks = new HashLevels();
    this.n = 0;
  }

  /** The heads the tree holds of `streamIds` (a stream it does not hold is absent). */
  async heads(streamIds: readonly string[]): Promise<Map<string, StreamHead>> {
    const found = new Map<string, StreamHead>();
    if (streamIds.length === 0) return found;
    for (const row of await this.read([{ column: 'key', op: 'in', values: streamIds.map(leafKey) }])) {
      const { head } = parseLeaf(row.key, row.doc);
      found.set(head.streamId, head);
    }
    return found;
  }

  /**
   * What `changes` would make of the tree, in their order (new streams take the next leaves in
   * that order), nothing written: its root and stream count, and the rows that differ.
   * @throws RangeError for a change that is not a head; NotaryTableMismatchError (see above)
   */
  async plan(changes: readonly StreamHead[]): Promise<HeadsPlan> {
    for (const h of changes) checkedHead(h);
    const ids = [...new Set(changes.map((h) => h.streamId))];
    const leafOf = new Map<string, number>();
    if (ids.length > 0) for (const row of await this.read([{ column: 'key', op: 'in', values: ids.map(leafKey) }])) leafOf.set(row.key.slice(2), parseLeaf(row.key, row.doc).leaf);
    let streams = this.n;
    const leaves = new Map<number, StreamHead>();
    for (const h of changes) {
      let leaf = leafOf.get(h.streamId);
      if (leaf === undefined) leafOf.set(h.streamId, (leaf = streams++));
      leaves.set(leaf, h);
    }
    const touched = [...new Set([...leaves.keys()].map(blockOf))].sort((a, b) => a - b);
    const held = await this.checkedBlocks(touched);
    const blocks = new Map<number, Uint8Array>();
    for (const b of touched) {
      const first = b * BLOCK_LEAVES;
      blocks.set(b, subtreeRoot(this.hashes(first, Math.min(first + BLOCK_LEAVES, streams), (leaf) => leaves.get(leaf) ?? held.get(leaf), b)));
    }
    const root = this.blocks.rootWith(blocks, Math.ceil(streams / BLOCK_LEAVES));
    return { root: root === undefined ? EMPTY_ROOT : hex(root), streams, leaves, blocks };
  }

  /**
   * Checks the heads the table holds for the blocks of `streamIds` against the nodes the signed
   * root vouches for (heads read through `heads` are not: this is for one that looks wrong).
   * @throws NotaryTableMismatchError
   */
  async check(streamIds: readonly string[]): Promise<void> {
    if (streamIds.length === 0) return;
    const leaves = (await this.read([{ column: 'key', op: 'in', values: streamIds.map(leafKey) }])).map((row) => parseLeaf(row.key, row.doc).leaf);
    await this.checkedBlocks([...new Set(leaves.map(blockOf))]);
  }

  /**
   * The heads the table holds in `blocks`, by leaf, each block's checked against its node.
   * @throws NotaryTableMismatchError
   */
  private async checkedBlocks(blocks: readonly number[]): Promise<Map<number, StreamHead>> {
    const held = new Map<number, StreamHead>();
    const older = blocks.filter((b) => b * BLOCK_LEAVES < this.n);
    if (older.length === 0) return held;
    for (const row of await this.read([{ column: 'kind', op: '=', value: 'l' }, { column: 'blk', op: 'in', values: older }])) {
      const { leaf, head } = parseLeaf(row.key, row.doc);
      held.set(leaf, head);
    }
    for (const b of older) {
      const first = b * BLOCK_LEAVES;
      const end = Math.min(first + BLOCK_LEAVES, this.n);
      if (!Buffer.from(subtreeRoot(this.hashes(first, end, (leaf) => held.get(leaf), b))).equals(this.blocks.get(b))) {
        throw new NotaryTableMismatchError(`holds heads for block ${b} (leaves ${first}–${end - 1}) that do not give its node: a head was changed behind the notary's back`);
      }
    }
    return held;
  }

  /**
   * Writes `plan` (made by `plan` at this position) and moves the table to `to`, the position and
   * id of the digest it folds. False when another notary moved the table meanwhile: nothing is
   * changed here, `load` again.
   */
  async fold(plan: HeadsPlan, to: ProjectionCheckpoint): Promise<boolean> {
    const rows = [...[...plan.leaves].map(([leaf, h]) => leafRow(leaf, h)), ...[...plan.blocks].map(([b, node]) => blockRow(b, node))];
    const written = await commitForward(this.table, this.held, to, rows);
    // Another notary at exactly `to` folded the same digest into the same rows.
    if ('behind' in written || written.held.position !== to.position || written.held.eventId !== to.eventId) return false;
    for (const [b, node] of [...plan.blocks].sort(([a], [c]) => a - c)) this.blocks.set(b, node);
    this.n = plan.streams;
    this.held = to;
    return true;
  }

  private hashes(first: number, end: number, headOf: (leaf: number) => StreamHead | undefined, block: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let leaf = first; leaf < end; leaf += 1) {
      const h = headOf(leaf);
      if (!h) throw new NotaryTableMismatchError(`lacks the head of leaf ${leaf} (block ${block})`);
      out.push(leafHash(h));
    }
    return out;
  }

  /** Rows matching `where`, read at the position this notary holds. @throws NotaryTableMovedError */
  private async read(where: readonly ProjectionCondition[]): Promise<{ key: string; doc: string }[]> {
    const answer = await this.table.query({ where });
    if (answer.checkpoint.position !== this.held.position) throw new NotaryTableMovedError(this.held.position, answer.checkpoint.position);
    return answer.rows;
  }
}
