import type { StreamHead } from '#contracts';
import { newIdentity } from '#identity';
import { describe, expect, it } from '@jest/globals';
import { applyDigest, digestHash, GENESIS_DIGEST_HASH, headsRoot, inclusionProof, linkProblem, rootFromProof, signatureProblem, signNextDigest, type Heads } from './digest.js';

const hex = (n: number) => n.toString(16).padStart(64, '0');
const head = (streamId: string, revision: number, position: number): StreamHead => ({ streamId, revision: String(revision), position: String(position), hash: hex(position * 7 + revision) });
const heads = (...hs: StreamHead[]): Heads => new Map(hs.map((h) => [h.streamId, h]));
const key = newIdentity();

describe('the Merkle root over stream heads', () => {
  it('proves every head of trees of 1 to 9 streams, and no edited head', () => {
    for (let n = 1; n <= 9; n += 1) {
      const set = heads(...Array.from({ length: n }, (_, i) => head(`s-${i}`, i, i + 1)));
      const root = headsRoot(set);
      for (const h of set.values()) {
        const proof = inclusionProof(set, h.streamId)!;
        expect(rootFromProof(h, proof)).toBe(root);
        expect(rootFromProof({ ...h, hash: hex(999) }, proof)).not.toBe(root);
        expect(rootFromProof({ ...h, revision: String(Number(h.revision) + 1) }, proof)).not.toBe(root);
      }
    }
  });

  it('depends on every head and on nothing else (not the insertion order)', () => {
    const a = heads(head('a', 0, 1), head('b', 1, 3), head('c', 0, 2));
    const b = heads(head('c', 0, 2), head('a', 0, 1), head('b', 1, 3));
    expect(headsRoot(a)).toBe(headsRoot(b));
    expect(headsRoot(a)).not.toBe(headsRoot(heads(head('a', 0, 1), head('b', 1, 3))));
    expect(inclusionProof(a, 'zzz')).toBeUndefined();
  });
});

describe('a signed digest', () => {
  const h1 = heads(head('a', 0, 1), head('b', 0, 2));
  const d1 = signNextDigest({ previous: undefined, previousHeads: new Map(), heads: h1, position: 2n, signedAt: '2026-01-01T00:00:00.000Z', identity: key });
  const h2 = new Map(h1).set('b', head('b', 1, 3));
  const d2 = signNextDigest({ previous: d1, previousHeads: h1, heads: h2, position: 4n, signedAt: '2026-01-01T00:05:00.000Z', identity: key });

  it('lists every head first, then only the changed ones, and folds back to the full set', () => {
    expect(d1).toMatchObject({ sequence: 1, position: '2', previousPosition: '0', previousDigestHash: GENESIS_DIGEST_HASH, streams: 2, headsRoot: headsRoot(h1) });
    expect(d1.heads.map((h) => h.streamId)).toEqual(['a', 'b']);
    expect(d2).toMatchObject({ sequence: 2, previousPosition: '2', previousDigestHash: digestHash(d1), streams: 2, headsRoot: headsRoot(h2) });
    expect(d2.heads).toEqual([head('b', 1, 3)]);
    expect(headsRoot(applyDigest(applyDigest(new Map(), d1), d2))).toBe(d2.headsRoot);
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
    const forged = signNextDigest({ previous: d1, previousHeads: h1, heads: h2, position: 4n, signedAt: d2.signedAt, identity: other });
    expect(signatureProblem(forged, key.publicKey)).toMatch(/signed by key .* not by the network key/);
    // The network's key named, another key's signature: the signature does not hold.
    expect(signatureProblem({ ...forged, publicKey: key.publicKey }, key.publicKey)).toMatch(/does not match its signature/);
    expect(signatureProblem({ ...d2, signature: 'AAAA' }, key.publicKey)).toMatch(/does not match its signature/);
  });

  it('attack: a broken digest chain (one missing, one replaced, out of order) is named', () => {
    const d3 = signNextDigest({ previous: d2, previousHeads: h2, heads: new Map(h2).set('c', head('c', 0, 5)), position: 5n, signedAt: '2026-01-01T00:10:00.000Z', identity: key });
    expect(linkProblem(d1, d3)).toMatch(/digest #3 where #2 was due: digest\(s\) #2…#2 missing/);
    const replaced = signNextDigest({ previous: d1, previousHeads: h1, heads: new Map(h1).set('b', head('b', 1, 9)), position: 9n, signedAt: d2.signedAt, identity: key });
    expect(linkProblem(replaced, d3)).toMatch(/does not chain to digest #2/);
    expect(linkProblem(d2, d1)).toMatch(/digest #1 where #3 was due: digests out of order/);
  });
});
