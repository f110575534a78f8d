import { LEGACY_CHAIN_DIGEST_FORMAT, type ChainHeadsSigned, type StreamHead } from '#contracts';
import { signBytes, newIdentity } from '#identity';
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { digestHash, digestProof, digestRoot, digestSigningBytes, GENESIS_DIGEST_HASH, leafHash, linkProblem, rootFromProof, rootProblem, signatureProblem, signNextDigest, sortedHeadsRoot } from './digest.js';
import { EMPTY_ROOT, HeadsTree } from './heads-tree.js';

const hex = (n: number) => n.toString(16).padStart(64, '0');
const head = (streamId: string, revision: number, position: number): StreamHead => ({ streamId, revision: String(revision), position: String(position), hash: hex(position * 7 + revision) });
const key = newIdentity();

/** The tree as the contract describes it, built whole from its leaves: the reference `HeadsTree` must match. */
function referenceRoot(leaves: readonly StreamHead[]): string {
  if (leaves.length === 0) return createHash('sha256').digest('hex');
  let level = leaves.map(leafHash);
  while (level.length > 1) {
    const up: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) up.push(i + 1 < level.length ? createHash('sha256').update(Buffer.from([1])).update(level[i]!).update(level[i + 1]!).digest() : level[i]!);
    level = up;
  }
  return level[0]!.toString('hex');
}

/** A deterministic pseudo-random sequence (xorshift), so a failure replays. */
function random(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

const tree = (...hs: StreamHead[]): HeadsTree => {
  const t = new HeadsTree();
  for (const h of hs) t.set(h);
  return t;
};

describe('the heads tree (format /2: leaves in order of first appearance)', () => {
  it('has the root of the tree built whole, after every one of 600 random sets (new streams and moved ones)', () => {
    const next = random(42);
    const t = new HeadsTree();
    const leaves: StreamHead[] = [];
    expect(t.root()).toBe(EMPTY_ROOT);
    for (let step = 0; step < 600; step += 1) {
      const i = leaves.length === 0 || next() < 0.4 ? leaves.length : Math.floor(next() * leaves.length);
      const h = i === leaves.length ? head(`s-${step}`, 0, step + 1) : head(leaves[i]!.streamId, Number(leaves[i]!.revision) + 1, step + 1);
      leaves[i] = h;
      t.set(h);
      // Several sets between roots, as a digest makes them.
      if (next() < 0.3) {
        expect(t.size).toBe(leaves.length);
        expect(t.root()).toBe(referenceRoot(leaves));
      }
    }
    expect(t.root()).toBe(referenceRoot(leaves));
    expect([...t.heads()]).toEqual(leaves);
  });

  it('finds every stream among thousands (ids of any script, past every growth of its index), and no other', () => {
    const t = new HeadsTree();
    const ids = Array.from({ length: 5_000 }, (_, i) => (i % 3 === 0 ? `équipe-ζ-${i}-作业` : `execution-node-${i % 64}-attempt-job_${i}-a1`));
    ids.forEach((id, i) => t.set(head(id, 0, i + 1)));
    ids.forEach((id, i) => t.set(head(id, 1, 10_000 + i)));
    expect(t.size).toBe(ids.length);
    ids.forEach((id, i) => expect(t.get(id)).toEqual(head(id, 1, 10_000 + i)));
    for (const absent of ['', 'équipe-ζ-1-作业', `${ids[0]}x`, ids[1]!.slice(0, -1)]) expect(t.get(absent)).toBeUndefined();
    expect([...t.heads()].map((h) => h.streamId)).toEqual(ids);
  });

  it('proves every head of trees of 1 to 17 streams, and no edited head', () => {
    for (let n = 1; n <= 17; n += 1) {
      const set = Array.from({ length: n }, (_, i) => head(`s-${n - i}`, i, i + 1));
      const t = tree(...set);
      const root = t.root();
      for (const h of set) {
        const proof = t.proof(h.streamId)!;
        expect(rootFromProof(h, proof)).toBe(root);
        expect(rootFromProof({ ...h, hash: hex(999) }, proof)).not.toBe(root);
        expect(rootFromProof({ ...h, revision: String(Number(h.revision) + 1) }, proof)).not.toBe(root);
      }
    }
    expect(tree(head('a', 0, 1)).proof('zzz')).toBeUndefined();
  });

  it('keeps a stream in its first leaf when it moves, so the order of first appearance is part of the root', () => {
    const ab = tree(head('a', 0, 1), head('b', 0, 2));
    ab.set(head('a', 1, 3));
    expect(ab.root()).toBe(referenceRoot([head('a', 1, 3), head('b', 0, 2)]));
    expect(ab.root()).not.toBe(tree(head('b', 0, 2), head('a', 1, 3)).root());
  });

  it('gives the root a set of changes would give without making them (the candidate digest)', () => {
    const next = random(7);
    const t = tree(...Array.from({ length: 37 }, (_, i) => head(`s-${i}`, 0, i + 1)));
    const before = t.root();
    for (let round = 0; round < 20; round += 1) {
      const changes = Array.from({ length: 1 + Math.floor(next() * 9) }, (_, k) => {
        const i = Math.floor(next() * 50); // some new (≥ 37 or not set yet), some moved
        return head(`s-${i}`, 1 + round, 1000 * round + k);
      }).filter((h, k, all) => all.findIndex((o) => o.streamId === h.streamId) === k);
      const copy = tree(...t.heads());
      for (const h of changes) copy.set(h);
      expect(t.rootWith(changes)).toEqual({ root: copy.root(), streams: copy.size });
      expect(t.root()).toBe(before);
    }
    expect(new HeadsTree().rootWith([])).toEqual({ root: EMPTY_ROOT, streams: 0 });
  });

  it('refuses a head that is not one (a hash that is not hex, a revision not a plain number) and keeps the rest', () => {
    const t = tree(head('a', 0, 1));
    expect(() => t.set({ ...head('b', 0, 2), hash: 'zz'.repeat(32) })).toThrow(/head hash .* is not 64 lowercase hex digits/);
    expect(() => t.set({ ...head('b', 0, 2), revision: '007' })).toThrow(/b: revision 007 is not a whole number below 2\^53 written without leading zeros/);
    expect(() => t.set({ ...head('b', 0, 2), position: '9007199254740993' })).toThrow(/position 9007199254740993/);
    expect(t.size).toBe(1);
    expect(t.root()).toBe(referenceRoot([head('a', 0, 1)]));
  });
});

describe('a signed digest', () => {
  const h1 = [head('b', 0, 2), head('a', 0, 1)];
  const t = new HeadsTree();
  const d1 = signNextDigest({ previous: undefined, tree: t, changed: h1, position: 2n, signedAt: '2026-01-01T00:00:00.000Z', identity: key });
  for (const h of d1.heads) t.set(h);
  const d2 = signNextDigest({ previous: d1, tree: t, changed: [head('c', 0, 4), head('b', 1, 3)], position: 4n, signedAt: '2026-01-01T00:05:00.000Z', identity: key });

  it('lists every head first, then only the changed ones, sorted by stream id, and folds back to its own root', () => {
    expect(d1).toMatchObject({ format: 'gpunet.chain-digest/2', sequence: 1, position: '2', previousPosition: '0', previousDigestHash: GENESIS_DIGEST_HASH, streams: 2, headsRoot: referenceRoot([head('a', 0, 1), head('b', 0, 2)]) });
    expect(d1.heads.map((h) => h.streamId)).toEqual(['a', 'b']);
    expect(d2).toMatchObject({ sequence: 2, previousPosition: '2', previousDigestHash: digestHash(d1), streams: 3, headsRoot: referenceRoot([head('a', 0, 1), head('b', 1, 3), head('c', 0, 4)]) });
    expect(d2.heads).toEqual([head('b', 1, 3), head('c', 0, 4)]);
    const folded = new HeadsTree();
    for (const d of [d1, d2]) {
      for (const h of d.heads) folded.set(h);
      expect(rootProblem(folded, d)).toBeUndefined();
    }
  });

  it('attack: a digest whose heads do not give its root or its stream count is named malformed', () => {
    const folded = tree(...d1.heads, ...d2.heads);
    expect(rootProblem(folded, { ...d2, headsRoot: hex(5) })).toMatch(/digest #2's heads do not give its own headsRoot/);
    expect(rootProblem(folded, { ...d2, streams: 4 })).toMatch(/digest #2 says the store held 4 streams, its chain of digests holds 3/);
  });

  it('holds under its key and chains', () => {
    expect(signatureProblem(d1, key.publicKey)).toBeUndefined();
    expect(signatureProblem(d2, key.publicKey)).toBeUndefined();
    expect(linkProblem(undefined, d1)).toBeUndefined();
    expect(linkProblem(d1, d2)).toBeUndefined();
  });

  it('attack: an edited field (a head, the root, the position) fails its signature', () => {
    expect(signatureProblem({ ...d2, heads: [head('b', 1, 4)] }, key.publicKey)).toMatch(/does not match its signature/);
    expect(signatureProblem({ ...d2, headsRoot: hex(1) }, key.publicKey)).toMatch(/does not match its signature/);
    expect(signatureProblem({ ...d2, position: '5' }, key.publicKey)).toMatch(/does not match its signature/);
  });

  it('attack: a forged signature, or a digest signed by another key, fails', () => {
    const other = newIdentity();
    const forged = signNextDigest({ previous: d1, tree: t, changed: d2.heads, position: 4n, signedAt: d2.signedAt, identity: other });
    expect(signatureProblem(forged, key.publicKey)).toMatch(/signed by key .* not by the network key/);
    // The network's key named, another key's signature: the signature does not hold.
    expect(signatureProblem({ ...forged, publicKey: key.publicKey }, key.publicKey)).toMatch(/does not match its signature/);
    expect(signatureProblem({ ...d2, signature: 'AAAA' }, key.publicKey)).toMatch(/does not match its signature/);
  });

  it('attack: a broken digest chain (one missing, one replaced, out of order) is named', () => {
    const t2 = tree(...d1.heads, ...d2.heads);
    const d3 = signNextDigest({ previous: d2, tree: t2, changed: [head('d', 0, 5)], position: 5n, signedAt: '2026-01-01T00:10:00.000Z', identity: key });
    expect(linkProblem(d1, d3)).toMatch(/digest #3 where #2 was due: digest\(s\) #2…#2 missing/);
    const replaced = signNextDigest({ previous: d1, tree: t, changed: [head('b', 1, 9)], position: 9n, signedAt: d2.signedAt, identity: key });
    expect(linkProblem(replaced, d3)).toMatch(/does not chain to digest #2/);
    expect(linkProblem(d2, d1)).toMatch(/digest #1 where #3 was due: digests out of order/);
  });
});

describe('digests signed as format /1 (leaves sorted by stream id)', () => {
  /** A /1 digest as the notary signed it before /2. */
  function legacyDigest(previous: ChainHeadsSigned | undefined, all: StreamHead[], changed: StreamHead[], position: number): ChainHeadsSigned {
    const body: Omit<ChainHeadsSigned, 'signature'> = {
      format: LEGACY_CHAIN_DIGEST_FORMAT,
      sequence: (previous?.sequence ?? 0) + 1,
      position: String(position),
      previousPosition: previous?.position ?? '0',
      previousDigestHash: previous ? digestHash(previous) : GENESIS_DIGEST_HASH,
      streams: all.length,
      headsRoot: referenceRoot([...all].sort((a, b) => (a.streamId < b.streamId ? -1 : 1))),
      heads: changed,
      signedAt: '2025-06-01T00:00:00.000Z',
      publicKey: key.publicKey,
    };
    return { ...body, signature: signBytes(key, digestSigningBytes(body)) };
  }

  it('are still checked and proven against their sorted root, and a /2 digest after them goes on from the same fold', () => {
    const first = [head('b', 0, 1), head('a', 0, 2)];
    const l1 = legacyDigest(undefined, first, [head('a', 0, 2), head('b', 0, 1)], 2);
    const l2 = legacyDigest(l1, [head('a', 0, 2), head('b', 0, 1), head('0', 0, 3)], [head('0', 0, 3)], 3);
    const t = new HeadsTree();
    for (const d of [l1, l2]) {
      for (const h of d.heads) t.set(h);
      expect(rootProblem(t, d)).toBeUndefined();
      expect(signatureProblem(d, key.publicKey)).toBeUndefined();
    }
    expect(linkProblem(l1, l2)).toBeUndefined();
    // Sorted, the new stream "0" comes first; in order of appearance it is last.
    expect(digestRoot(t, l2)).toBe(sortedHeadsRoot(t.heads()));
    expect(digestRoot(t, l2)).not.toBe(t.root());
    for (const h of t.heads()) expect(rootFromProof(h, digestProof(t, l2, h.streamId)!)).toBe(l2.headsRoot);
    expect(rootProblem(t, { ...l2, headsRoot: t.root() })).toMatch(/do not give its own headsRoot/);

    const d3 = signNextDigest({ previous: l2, tree: t, changed: [head('a', 1, 4)], position: 4n, signedAt: '2026-01-01T00:00:00.000Z', identity: key });
    expect(linkProblem(l2, d3)).toBeUndefined();
    for (const h of d3.heads) t.set(h);
    expect(rootProblem(t, d3)).toBeUndefined();
    expect(d3.headsRoot).toBe(referenceRoot([head('a', 1, 4), head('b', 0, 1), head('0', 0, 3)]));
  });
});
