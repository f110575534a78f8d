/**
 * Every stream's head as of a digest, and the Merkle tree over them, kept up to date in place.
 *
 * Leaves sit in the order streams first appear in the chain of digests (each digest's heads in the
 * order it lists them), so a stream keeps its leaf for ever: a digest that moves k streams updates
 * k paths of log2(streams) nodes. Digest format /1 sorted the leaves by stream id, so a stream that
 * was new anywhere but at the end moved every leaf after it and every digest rebuilt the tree
 * whole; on a store of millions of streams that was seconds per digest (decision 0040).
 *
 * Everything is kept in flat buffers outside the JavaScript heap, no object per stream: the id's
 * bytes and its slots in an index (`StreamIndex`), the event hash, revision and position, the leaf
 * hash, and the nodes above it (about one more node per leaf).
 *
 * Pure: no store, no framework.
 */
import type { StreamHead } from '#contracts';
import { createHash, hash } from 'node:crypto';

const HASH = 32;

/** Root of a tree of no stream: sha256 of nothing. */
export const EMPTY_ROOT = createHash('sha256').digest('hex');

/** One step of a Merkle inclusion proof: the sibling's hash and which side it sits on. */
export interface ProofStep {
  side: 'left' | 'right';
  hash: string;
}

/** Leaf of one head: sha256(0x00 ‖ canonical [streamId, revision, position, hash]); the prefix keeps a leaf from passing for a node. */
export function leafHash(h: StreamHead): Buffer {
  // Canonical JSON of an array of strings is JSON.stringify's; NUL is the byte 0x00 in UTF-8.
  return hash('sha256', `\u0000${JSON.stringify([h.streamId, h.revision, h.position, h.hash])}`, 'buffer');
}

const scratch = Buffer.alloc(1 + 2 * HASH, 1);

/** Node over two children: sha256(0x01 ‖ left ‖ right). */
export function nodeHash(left: Uint8Array, right: Uint8Array): Buffer {
  scratch.set(left, 1);
  scratch.set(right, 1 + HASH);
  return hash('sha256', scratch, 'buffer');
}

/** Nodes at the level above one of `length` nodes: an odd last node is carried up unchanged (never duplicated). */
const above = (length: number): number => Math.ceil(length / 2);

/** FNV-1a over the id's UTF-16 code units. */
function fnv(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i += 1) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Stream id → leaf, outside the JavaScript heap: the ids' UTF-8 bytes one after another in one
 * buffer, and an open-addressing table of leaf numbers. A Map of millions of id strings took
 * about 200 bytes of heap per stream, and V8 caps one Map at 2^24 entries.
 */
class StreamIndex {
  private bytes = Buffer.alloc(1 << 16);
  private used = 0;
  /** starts[leaf] … starts[leaf + 1]: the leaf's id in `bytes`. */
  private starts = new Float64Array(1025);
  private hashes = new Uint32Array(1024);
  /** Open addressing, linear probing: leaf + 1, 0 for an empty slot; at most half full. */
  private table = new Int32Array(2048);
  private n = 0;

  get size(): number {
    return this.n;
  }

  leafOf(id: string): number | undefined {
    const h = fnv(id);
    const mask = this.table.length - 1;
    for (let slot = h & mask; ; slot = (slot + 1) & mask) {
      const v = this.table[slot]!;
      if (v === 0) return undefined;
      if (this.hashes[v - 1] === h && this.idOf(v - 1) === id) return v - 1;
    }
  }

  idOf(leaf: number): string {
    return this.bytes.toString('utf8', this.starts[leaf], this.starts[leaf + 1]);
  }

  /** Adds a stream not in the index as the next leaf; returns its leaf. */
  add(id: string): number {
    const leaf = this.n;
    const length = Buffer.byteLength(id);
    if (this.used + length > this.bytes.length) this.bytes = copied(Buffer.alloc(Math.max(this.bytes.length * 2, this.used + length)), this.bytes);
    if (leaf + 1 >= this.hashes.length) {
      this.starts = copied(new Float64Array(this.hashes.length * 2 + 1), this.starts);
      this.hashes = copied(new Uint32Array(this.hashes.length * 2), this.hashes);
    }
    this.bytes.write(id, this.used, 'utf8');
    this.used += length;
    this.starts[leaf + 1] = this.used;
    this.hashes[leaf] = fnv(id);
    this.n += 1;
    if (2 * this.n > this.table.length) this.rehash(this.table.length * 2);
    else this.place(leaf);
    return leaf;
  }

  private place(leaf: number): void {
    const mask = this.table.length - 1;
    let slot = this.hashes[leaf]! & mask;
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = leaf + 1;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size);
    for (let leaf = 0; leaf < this.n; leaf += 1) this.place(leaf);
  }
}

function copied<T extends Buffer | Float64Array | Uint32Array>(into: T, from: T): T {
  into.set(from);
  return into;
}

const whole = (what: string, v: string, streamId: string): number => {
  const n = Number(v);
  if (!/^(0|[1-9]\d*)$/.test(v) || !Number.isSafeInteger(n)) throw new RangeError(`${streamId}: ${what} ${v} is not a whole number below 2^53 written without leading zeros`);
  return n;
};

/**
 * A head's revision and position as numbers, once it is checked to be one a digest may list: a
 * 64-digit lowercase hex hash, whole numbers below 2^53. @throws RangeError naming what is wrong.
 */
export function checkedHead(h: StreamHead): { revision: number; position: number } {
  if (!/^[0-9a-f]{64}$/.test(h.hash)) throw new RangeError(`${h.streamId}: head hash ${h.hash} is not 64 lowercase hex digits`);
  return { revision: whole('revision', h.revision, h.streamId), position: whole('position', h.position, h.streamId) };
}

/**
 * Recomputes the nodes above `dirty` leaves of a tree of `leaves` leaves, level by level, reading
 * a node through `read` and storing through `write`; returns the root. Only the paths from the
 * dirty leaves change: a node depends on nothing but the leaves below it.
 */
function propagate(leaves: number, dirty: Iterable<number>, read: (level: number, i: number) => Uint8Array, write: (level: number, i: number, hash: Uint8Array) => void): Uint8Array {
  let changed = [...dirty];
  let length = leaves;
  let level = 0;
  while (length > 1) {
    const parents = new Set<number>();
    for (const i of changed) parents.add(i >> 1);
    for (const p of parents) {
      const l = 2 * p;
      write(level + 1, p, l + 1 < length ? nodeHash(read(level, l), read(level, l + 1)) : read(level, l));
    }
    changed = [...parents];
    length = above(length);
    level += 1;
  }
  return read(level, 0);
}

/**
 * A Merkle tree over a growing row of hashes, in flat buffers: `levels[0]` holds the hashes set,
 * `levels[k][j]` the node over hashes j·2^k … (j+1)·2^k − 1 (an odd last node carried up). Nodes
 * above changed hashes are recomputed when the root or a proof is asked for.
 */
export class HashLevels {
  private capacity = 0;
  private levels: Buffer[] = [];
  private readonly dirty = new Set<number>();
  private n = 0;

  /** Hashes in the row. */
  get size(): number {
    return this.n;
  }

  /** Sets hash `i`: one already set, or the next one (the row grows by one). */
  set(i: number, hash: Uint8Array): void {
    if (!Number.isSafeInteger(i) || i < 0 || i > this.n) throw new RangeError(`hash ${i} of a row of ${this.n}: only one already set or the next can be set`);
    if (i === this.n) {
      this.grow(this.n + 1);
      this.n += 1;
    }
    this.levels[0]!.set(hash, i * HASH);
    this.dirty.add(i);
  }

  /** Hash `i` as set. */
  get(i: number): Uint8Array {
    return this.node(0, i);
  }

  /** The root over the whole row (undefined for an empty one). */
  root(): Uint8Array | undefined {
    this.flush();
    return this.n === 0 ? undefined : this.node(this.topLevel(this.n), 0);
  }

  /**
   * The root the row would have with `changes` set (hash number → hash; numbers from `size` on
   * make it longer, and every number below `length` must then be set or changed), leaving it as it is.
   */
  rootWith(changes: ReadonlyMap<number, Uint8Array>, length: number): Uint8Array | undefined {
    if (length === 0) return undefined;
    this.flush();
    const overlay = new Map<string, Uint8Array>(); // `${level}:${i}` → node
    for (const [i, hash] of changes) overlay.set(`0:${i}`, hash);
    return propagate(
      length,
      changes.keys(),
      (level, i) => overlay.get(`${level}:${i}`) ?? this.node(level, i),
      (level, i, hash) => overlay.set(`${level}:${i}`, hash),
    );
  }

  /** The inclusion proof of hash `i` against `root()`. */
  proof(i: number): ProofStep[] {
    this.flush();
    const proof: ProofStep[] = [];
    for (let level = 0, length = this.n; length > 1; level += 1, length = above(length)) {
      const sibling = i % 2 === 0 ? i + 1 : i - 1;
      if (sibling < length) proof.push({ side: i % 2 === 0 ? 'right' : 'left', hash: Buffer.from(this.node(level, sibling)).toString('hex') });
      i >>= 1;
    }
    return proof;
  }

  private node(level: number, i: number): Uint8Array {
    return this.levels[level]!.subarray(i * HASH, i * HASH + HASH);
  }

  private topLevel(n: number): number {
    let level = 0;
    for (let length = n; length > 1; length = above(length)) level += 1;
    return level;
  }

  private flush(): void {
    if (this.dirty.size === 0) return;
    propagate(
      this.n,
      this.dirty,
      (level, i) => this.node(level, i),
      (level, i, hash) => this.levels[level]!.set(hash, i * HASH),
    );
    this.dirty.clear();
  }

  /** Room for `n` hashes and the levels above them, doubling (copies are amortised). */
  private grow(n: number): void {
    if (n <= this.capacity) return;
    const capacity = Math.max(1024, this.capacity * 2, n);
    const levels: Buffer[] = [];
    for (let level = 0, length = capacity; ; level += 1, length = above(length)) {
      const b = Buffer.alloc(length * HASH);
      this.levels[level]?.copy(b);
      levels.push(b);
      if (length <= 1) break;
    }
    this.capacity = capacity;
    this.levels = levels;
  }
}

/**
 * The root of the tree over `leaves` alone, paired as the whole tree pairs them (an odd last node
 * carried up). Over the leaves 64·b … 64·b + 63 of a tree (fewer in its last block), it is the
 * tree's node over them at level 6: the pairs inside a block never reach outside it.
 */
export function subtreeRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) throw new RangeError('a tree of no leaf has no root');
  let level: readonly Uint8Array[] = leaves;
  while (level.length > 1) {
    const up: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) up.push(i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!);
    level = up;
  }
  return level[0]!;
}

export class HeadsTree {
  private readonly index = new StreamIndex();
  private capacity = 0;
  private revisions = new Float64Array(0);
  private positions = new Float64Array(0);
  private eventHashes = Buffer.alloc(0);
  /** The leaf hashes and the nodes above them. */
  private readonly levels = new HashLevels();
  private n = 0;

  /** Streams in the tree. */
  get size(): number {
    return this.n;
  }

  /** The head of `streamId`, or undefined when the stream is not in the tree. */
  get(streamId: string): StreamHead | undefined {
    const i = this.index.leafOf(streamId);
    return i === undefined ? undefined : this.at(i);
  }

  /** Every head, in leaf order. */
  *heads(): IterableIterator<StreamHead> {
    for (let i = 0; i < this.n; i += 1) yield this.at(i);
  }

  /** Sets a stream's head: in its leaf, or in a new last leaf for a stream not seen before. */
  set(h: StreamHead): void {
    const { revision, position } = checkedHead(h);
    let i = this.index.leafOf(h.streamId);
    if (i === undefined) {
      this.grow(this.n + 1);
      i = this.index.add(h.streamId);
      this.n += 1;
    }
    this.revisions[i] = revision;
    this.positions[i] = position;
    this.eventHashes.write(h.hash, i * HASH, HASH, 'hex');
    this.levels.set(i, leafHash(h));
  }

  /** The Merkle root (hex) over every head. */
  root(): string {
    const root = this.levels.root();
    return root === undefined ? EMPTY_ROOT : Buffer.from(root).toString('hex');
  }

  /**
   * The root the tree would have with `changes` set, in their order (new streams take the next
   * leaves in that order), leaving the tree as it is: the notary's candidate digest, which another
   * ledger may beat to the store.
   */
  rootWith(changes: readonly StreamHead[]): { root: string; streams: number } {
    let n = this.n;
    const leaves = new Map<number, Uint8Array>();
    const fresh = new Map<string, number>();
    for (const h of changes) {
      let i = this.index.leafOf(h.streamId) ?? fresh.get(h.streamId);
      if (i === undefined) {
        i = n++;
        fresh.set(h.streamId, i);
      }
      leaves.set(i, leafHash(h));
    }
    const root = this.levels.rootWith(leaves, n);
    return { root: root === undefined ? EMPTY_ROOT : Buffer.from(root).toString('hex'), streams: n };
  }

  /** The inclusion proof of `streamId`'s head against `root()`, or undefined when the stream is not in the tree. */
  proof(streamId: string): ProofStep[] | undefined {
    const i = this.index.leafOf(streamId);
    return i === undefined ? undefined : this.levels.proof(i);
  }

  private at(i: number): StreamHead {
    return { streamId: this.index.idOf(i), revision: String(this.revisions[i]), position: String(this.positions[i]), hash: this.eventHashes.toString('hex', i * HASH, i * HASH + HASH) };
  }

  /** Room for `n` leaves' heads, doubling (copies are amortised). */
  private grow(n: number): void {
    if (n <= this.capacity) return;
    const capacity = Math.max(1024, this.capacity * 2, n);
    const revisions = new Float64Array(capacity);
    revisions.set(this.revisions);
    const positions = new Float64Array(capacity);
    positions.set(this.positions);
    const eventHashes = Buffer.alloc(capacity * HASH);
    this.eventHashes.copy(eventHashes);
    this.capacity = capacity;
    this.revisions = revisions;
    this.positions = positions;
    this.eventHashes = eventHashes;
  }
}
